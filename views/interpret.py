"""The delta program run in memory (or over any ``KRelation`` backend): one
rule per node kind turns the children's deltas into the node's delta
(counting paper §4), and a batch is two phases over the plan in post-order —
every node's ΔQ from its children's old outputs and deltas, then every ΔQ
added to its stored output.

A backfill is the same rules run *fresh*: every old output is empty and the
data arrives whole, so each node's delta is its output — one implementation
of join, EXISTS and grouping for maintaining and for evaluating from scratch.

- Scan (BGP): Theorem 4.3, index nested loops with ΔG first; fresh, the BGP
  evaluated on G'.
- Join: Theorem 4.5 (ΔP1⋈P2 + P1⋈ΔP2 + ΔP1⋈ΔP2).
- Filter, Project, Union, Extend: §4.4 (Theorem 3.1 distributivity).
- Diff (OPTIONAL's unmatched half) and Minus: Theorem 4.6 — only left
  mappings compatible with a right mapping whose support changed (ΔS̄) are
  re-decided, each split by schema (§4.5.3).
- Filter/Extend with EXISTS: a mapping's EXISTS value can only change when ΔG
  matches a triple pattern of the EXISTS under that mapping; those mappings
  are re-decided on G and G' (SPARQL 1.1 §18.6).
- Distinct: a mapping enters or leaves with its support.
- Group: the groups touched by Δ are recomputed from their members, so
  MIN/MAX survive deletion of the current extreme.
- Closure (``p+``): the edges' support changes; insertions semi-naive,
  deletions Backward/Forward (``views.closure_node``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from rdflib.term import Identifier

from views import algebra as A
from views import plan as P
from views.aggregates import Key, group_key, group_row
from views.bgp import join_patterns, match_quad
from views.closure_node import closure_delta
from views.dataset import Before, Delta, QuadStore
from views.errors import ViewTooLarge
from views.exists import BatchExists, exists_patterns_of
from views.expr import truth, try_evaluate
from views.kset import KRel, KRelation, KSet, Mu, add_into, join_into, minus_blocks, mu, project

Relations = Callable[[P.Node], KRelation]


class Batch:
    """One run of the program: G' (``new``), G read as G' − ΔG (``old``), ΔG,
    the stored outputs as they were (``before``) and the deltas computed so
    far (``d``). ``fresh``: a backfill — the old outputs are empty and the
    data is all new, so ΔG is not read."""

    def __init__(self, new: QuadStore, delta: Delta, fresh: bool,
                 before: Callable[[P.Node], KRelation]) -> None:
        self.new, self.delta, self.fresh = new, delta, fresh
        self.old: QuadStore = _EMPTY if fresh else Before(new, delta)
        self.d: dict[str, KSet] = {}
        self._before = before
        self.max_rows: int | None = None  # a node's change passing it: ViewTooLarge
        self.by_predicate: dict[A.Slot, list[tuple[tuple, int]]] = {}
        for quad, sign in delta.items():
            self.by_predicate.setdefault(quad[2], []).append((quad, sign))

    def was(self, n: P.Node) -> KRelation:
        """``n``'s output before this batch."""
        return _NOTHING if self.fresh else self._before(n)

    def delta_matches(self, tp: A.TriplePattern) -> Iterator[tuple[dict, int]]:
        """Ti(ΔG): the bindings of ``tp`` over the changed quads, with their
        sign (only those with its predicate, when that is a constant)."""
        changed = self.delta.items() if A.is_var(tp.p) else self.by_predicate.get(tp.p, ())
        for quad, sign in changed:
            b = match_quad(tp, quad)
            if b is not None:
                yield b, sign


class _NoQuads:
    """The empty dataset: G before a backfill."""

    def match(self, g: object, s: Identifier | None, p: Identifier | None,
              o: Identifier | None) -> list[tuple]:
        return []

    def match_many(self, keys: Sequence[tuple]) -> list[list[tuple]]:
        return [[] for _ in keys]

    def graph_names(self) -> list[Identifier]:
        return []

    def graph_size(self, g: Identifier) -> int:
        return 0


_EMPTY = _NoQuads()
_NOTHING = KRel()


# ------------------------------------------------------------------ rules


def delta(n: P.Node, b: Batch) -> KSet:
    """ΔQ of node ``n`` (its children's deltas are in ``b.d``)."""
    match n:
        case P.Scan():
            return _scan(n, b)
        case P.Values():
            return add_into({}, ((mu(dict(r)), 1) for r in n.rows)) if b.fresh else {}
        case P.GraphNames():
            return _graph_names(n, b)
        case P.Join():
            return _join(n, b)
        case P.Diff():
            return _diff(n, b)
        case P.Union():
            return add_into(dict(b.d[n.left.id]), b.d[n.right.id].items())
        case P.Filter() | P.Extend():
            return _map(n, b)
        case P.Project():
            return project(b.d[n.child.id], n.vars)
        case P.Distinct():
            return _distinct(n, b)
        case P.Group():
            return _group(n, b)
        case P.Closure():
            return closure_delta(n, b.was(n.child), b.d[n.child.id], b.was(n), b.max_rows)
    raise TypeError(n)


def _scan(n: P.Scan, b: Batch) -> KSet:
    tps = list(n.triples)
    if b.fresh:
        return _collect(join_patterns(tps, [b.new] * len(tps), [({}, 1)])[0])
    # ΔB = Σ_i T1(G')⋈…⋈T(i-1)(G')⋈Ti(ΔG)⋈T(i+1)(G)⋈…⋈Tn(G)   (Theorem 4.3)
    out: KSet = {}
    for i, tp in enumerate(tps):
        rest = tps[:i] + tps[i + 1:]
        sources = [b.new] * i + [b.old] * (len(tps) - i - 1)
        for rows in join_patterns(rest, sources, list(b.delta_matches(tp))):
            add_into(out, ((mu(m), k) for m, k in rows))
    return out


def _graph_names(n: P.GraphNames, b: Batch) -> KSet:
    """A named graph enters when its first triple arrives, leaves with its
    last."""
    def row(g: Identifier) -> Mu | None:
        if A.is_var(n.term):
            return mu({str(n.term): g})
        return mu({}) if g == n.term else None

    if b.fresh:
        return add_into({}, ((r, 1) for g in b.new.graph_names() if (r := row(g)) is not None))
    net: dict[Identifier, int] = {}
    for q, sign in b.delta.items():
        if q[0] is not None:
            net[q[0]] = net.get(q[0], 0) + sign
    out: KSet = {}
    for g, k in net.items():
        size = b.new.graph_size(g)
        r = row(g)
        if ((size - k > 0) != (size > 0)) and r is not None:
            add_into(out, [(r, 1 if size > 0 else -1)])
    return out


def _keep(expr: A.Expr | None) -> Callable[[dict[str, Identifier]], bool] | None:
    return None if expr is None else (lambda m: truth(expr, m))


def _join(n: P.Join, b: Batch) -> KSet:
    dl, dr = b.d[n.left.id], b.d[n.right.id]
    keep = _keep(n.expr)
    # fresh, every annotation is positive (none cancels): past max_rows the node is refused
    out = join_into({}, dl.items(), KRel(dr), keep, b.max_rows if b.fresh else None)  # ΔP1 ⋈ ΔP2
    if not b.fresh:
        join_into(out, dl.items(), b.was(n.right), keep)              # ΔP1 ⋈ P2
        join_into(out, dr.items(), b.was(n.left), keep)               # P1 ⋈ ΔP2
    return out


def _diff(n: P.Diff, b: Batch) -> KSet:
    dl, dr = b.d[n.left.id], b.d[n.right.id]
    left, right, out = b.was(n.left), b.was(n.right), b.was(n)
    # ΔS̄: right mappings entering or leaving the support (Theorem 4.6)
    was = right.get_many(dr)
    changed = [dict(m2) for m2, k2 in dr.items() if (was.get(m2, 0) == 0) != (was.get(m2, 0) + k2 == 0)]
    cands = set(dl)
    for found in left.compatible_many(changed, require_shared=n.minus):
        cands.update(m1 for m1, _ in found)
    order = list(cands)
    k_left, k_out = left.get_many(order), out.get_many(order)
    kept = _unblocked(n, [(m1, k_left.get(m1, 0) + dl.get(m1, 0)) for m1 in order], right, dr)
    return {m1: v - k_out.get(m1, 0) for m1, v in zip(order, kept) if v != k_out.get(m1, 0)}


def _unblocked(n: P.Diff, rows: list[tuple[Mu, int]], right: KRelation, rdelta: KSet
               ) -> list[int]:
    """Each μ1's annotation k1, or 0 where a μ2 in the right's new support
    blocks it; ``right`` holds the old support and ``rdelta`` its change.
    The right is probed once for all rows; the mappings entering its support
    are probed in memory."""
    def blocks(d1: dict[str, Identifier], m2: Mu) -> bool:
        d2 = dict(m2)
        if n.minus:
            return minus_blocks(d1, d2, n.graph_var)
        return n.expr is None or truth(n.expr, {**d1, **d2})

    live = [(dict(m1), k1) for m1, k1 in rows if k1]
    probes = [d for d, _ in live]
    old = right.get_many(rdelta) if rdelta else {}
    entering = KRel({m2: k2 for m2, k2 in rdelta.items() if m2 not in old})
    blocked = iter([any(k2 + rdelta.get(m2, 0) and blocks(d1, m2) for m2, k2 in now)
                    or any(blocks(d1, m2) for m2, _ in new)
                    for d1, now, new in zip(probes, right.compatible_many(probes, n.minus),
                                            entering.compatible_many(probes, n.minus))])
    return [0 if not k1 or next(blocked) else k1 for _, k1 in rows]


def _map(n: P.Filter | P.Extend, b: Batch) -> KSet:
    """Each input mapping maps to at most one output mapping; without EXISTS
    the map is pure (Δ = f(ΔP1))."""
    dc = b.d[n.child.id]
    out: KSet = {}
    if not A.has_exists(n.expr):
        for m, k in dc.items():
            r = _apply_map(n, m, _no_exists)
            if r is not None:
                add_into(out, [(r, k)])
        return out
    touched = list(set(dc) | _touched(n, b))
    was = b.was(n.child).get_many(touched)
    now = {m: k for m in touched if (k := was.get(m, 0) + dc.get(m, 0))}
    before = BatchExists(b.old, n.expr, was)  # the old decisions on G, the new on G'
    after = BatchExists(b.new, n.expr, now)
    for m in touched:
        k_old, k_new = was.get(m, 0), now.get(m, 0)
        r_old = _apply_map(n, m, before) if k_old else None
        r_new = _apply_map(n, m, after) if k_new else None
        if r_old is not None:
            add_into(out, [(r_old, -k_old)])
        if r_new is not None:
            add_into(out, [(r_new, k_new)])
    return out


def _no_exists(pattern: A.Pattern, m: Mapping[str, Identifier]) -> bool:
    raise AssertionError("an expression without EXISTS asked for one")


def _apply_map(n: P.Filter | P.Extend, m: Mu,
               exists: Callable[[A.Pattern, Mapping[str, Identifier]], bool]) -> Mu | None:
    d = dict(m)
    if isinstance(n, P.Filter):
        return m if truth(n.expr, d, exists) else None
    if n.var in d:
        return m
    v = try_evaluate(n.expr, d, exists)
    return m if v is None else m | {(n.var, v)}


def _touched(n: P.Filter | P.Extend, b: Batch) -> set[Mu]:
    """Stored input mappings whose EXISTS value ΔG may have changed: those
    compatible with a match of one of the EXISTS' triple patterns in ΔG
    (all of them when a sub-select scopes variables away)."""
    if b.fresh:
        return set()
    tps = exists_patterns_of(n.expr)
    child = b.was(n.child)
    if tps is None:
        return set(child.rows)
    probes = [{k: v for k, v in m.items() if not k.startswith("_:")}
              for tp in tps for m, _ in b.delta_matches(tp)]
    return {m for found in child.compatible_many(probes) for m, _ in found}


def _distinct(n: P.Distinct, b: Batch) -> KSet:
    dc = b.d[n.child.id]
    was = b.was(n.child).get_many(dc)
    out: KSet = {}
    for m, k in dc.items():
        old, new = was.get(m, 0) > 0, was.get(m, 0) + k > 0
        if old != new:
            out[m] = 1 if new else -1
    return out


def _group(n: P.Group, b: Batch) -> KSet:
    """A group's solution is a function of its members: a touched group's
    old and new solutions are recomputed from the child's old and new
    output. Fresh, there is no old solution, and an ungrouped aggregate has
    its one group even over no rows (COUNT(*) = 0)."""
    dc = b.d[n.child.id]
    touched = {group_key(n.keys, dict(m)) for m in dc}
    if b.fresh and not n.keys:
        touched.add(())
    keys = list(touched)
    out: KSet = {}
    for key, (old_members, new_members) in zip(keys, _members(n, b, keys, dc)):
        old = None if b.fresh else _group_row(n, key, old_members)
        new = _group_row(n, key, new_members)
        if old != new:
            if old is not None:
                add_into(out, [(old, -1)])
            if new is not None:
                add_into(out, [(new, 1)])
    return out


def _group_row(n: P.Group, key: Key, members: KSet) -> Mu | None:
    if n.keys and not members:
        return None  # only the implicit group of an ungrouped query can be empty
    return mu(group_row(n.keys, n.aggregates, key, [(dict(m), k) for m, k in members.items()]))


def _members(n: P.Group, b: Batch, keys: list[Key], extra: KSet) -> list[tuple[KSet, KSet]]:
    """The old and new members of each group in ``keys``: the child is probed
    by the key variables (all keys at once), or read whole once when a key
    is an expression."""
    rel = b.was(n.child)
    key_vars = [e.name for e in n.keys if isinstance(e, A.Var)]
    found: Sequence[Iterable[tuple[Mu, int]]]
    if len(key_vars) == len(n.keys):
        found = rel.compatible_many([{v: t for v, t in zip(key_vars, key) if t is not None}
                                     for key in keys])
    else:
        everything = list(rel.rows.items())
        found = [everything] * len(keys)
    added: dict[Key, KSet] = {}
    for m, k in extra.items():
        added.setdefault(group_key(n.keys, dict(m)), {})[m] = k
    out = []
    for key, rows in zip(keys, found):
        old: KSet = {m: k for m, k in rows if group_key(n.keys, dict(m)) == key}
        out.append((old, add_into(dict(old), added.get(key, {}).items())))
    return out


def _collect(rows: Iterable[tuple[dict, int]]) -> KSet:
    return add_into({}, ((mu(m), k) for m, k in rows))


# ------------------------------------------------------------ BGP outputs


class _Unstored:
    """The output of a node whose old value no rule reads (``Plan.stored``):
    its changes flow to its parents only, and nothing reads it."""

    def get_many(self, ms: Iterable[Mu]) -> dict[Mu, int]:
        raise AssertionError("an unstored node's output was read")

    def compatible_many(self, probes: Sequence[Mapping[str, Identifier]],
                        require_shared: bool = False) -> list[list[tuple[Mu, int]]]:
        raise AssertionError("an unstored node's output was read")

    @property
    def rows(self) -> KSet:
        raise AssertionError("an unstored node's output was read")

    def apply(self, delta: KSet) -> int:
        return 0


_UNSTORED = _Unstored()


class VirtualBGP:
    """A BGP's output, never stored: every read evaluates the BGP through the
    indexed dataset, as Theorem 4.3 already reads its inputs. While a batch
    computes its deltas it reads G (G' − ΔG); otherwise G' (design note 1)."""

    def __init__(self, triples: Sequence[A.TriplePattern], source: QuadStore) -> None:
        self.tps, self.source = list(triples), source
        self.vars = A.triple_vars(self.tps)

    def _eval(self, starts: list[dict]) -> list[KSet]:
        sources = [self.source] * len(self.tps)
        return [_collect(rows) for rows in join_patterns(self.tps, sources,
                                                         [(s, 1) for s in starts])]

    def get_many(self, ms: Iterable[Mu]) -> dict[Mu, int]:
        full = [m for m in set(ms) if {v for v, _ in m} == self.vars]
        return {m: k for m, r in zip(full, self._eval([dict(m) for m in full]))
                if (k := r.get(m, 0))}

    def compatible_many(self, probes: Sequence[Mapping[str, Identifier]],
                        require_shared: bool = False) -> list[list[tuple[Mu, int]]]:
        keys: list[Mu | None] = []
        starts: dict[Mu, dict] = {}  # one evaluation per distinct start
        for p in probes:
            start = self.start(p)
            key = start if start or not require_shared else None
            keys.append(key)
            if key is not None:
                starts.setdefault(key, dict(key))
        found = dict(zip(starts, self._eval(list(starts.values()))))
        return [list(found[k].items()) if k is not None else [] for k in keys]

    def start(self, probe: Mapping[str, Identifier]) -> Mu:
        """The probe's bindings of this BGP's variables: where its join starts."""
        return mu({v: t for v, t in probe.items() if v in self.vars})

    @property
    def rows(self) -> KSet:
        return self._eval([{}])[0]

    def apply(self, delta: KSet) -> int:
        """Nothing is stored: the dataset already holds G'."""
        return 0


# ------------------------------------------------------------ the program


class Maintainer:
    """A maintained view: ``plan`` over a dataset shared with other views,
    its state in the relations ``relations(node)`` gives (in memory by
    default; the SQL executor passes Postgres-backed ones).

    >>> from rdflib import URIRef, Literal
    >>> from views.compile import compile_query
    >>> from views.dataset import Dataset
    >>> ds = Dataset()
    >>> v = Maintainer(compile_query("SELECT (COUNT(*) AS ?n) { ?s <http://e/p> ?o }").plan, ds)
    >>> p = URIRef("http://e/p")
    >>> _ = v.apply(ds.apply([((None, URIRef("http://e/a"), p, Literal(1)), 1)]))
    >>> [dict(m)["n"] for m in v.result]
    [rdflib.term.Literal('1', datatype=rdflib.term.URIRef('http://www.w3.org/2001/XMLSchema#integer'))]
    """

    def __init__(self, plan: P.Plan, ds: QuadStore, relations: Relations | None = None,
                 backfill: bool = True,
                 progress: Callable[[int, int], None] | None = None,
                 max_rows: int | None = None) -> None:
        """``backfill`` computes every node from scratch into relations
        assumed empty; without it the relations hold the state at the
        dataset's previous version. ``progress(done, total)`` is called as
        backfilled nodes complete. A node whose change in one batch (its
        whole output, in a backfill) passes ``max_rows`` rows raises
        ``ViewTooLarge`` before anything more is computed."""
        self.plan, self.ds, self.max_rows = plan, ds, max_rows
        self.grown = 0  # stored rows added (removed: negative) since creation
        self.state: dict[str, KRelation] = {}
        self.virtual: list[VirtualBGP] = []
        for n in plan.nodes:
            if plan.stored(n):
                self.state[n.id] = relations(n) if relations is not None else KRel()
            elif isinstance(n, P.Scan):
                v = VirtualBGP(n.triples, ds)
                self.virtual.append(v)
                self.state[n.id] = v
            else:
                self.state[n.id] = _UNSTORED
        if backfill:
            self._backfill(progress)

    def _relation(self, n: P.Node) -> KRelation:
        return self.state[n.id]

    @property
    def root(self) -> KRelation:
        return self.state[self.plan.root.id]

    @property
    def result(self) -> KSet:
        return self.root.rows

    def stored_rows(self) -> int:
        """Rows held by the stored nodes: the auxiliary state."""
        return sum(len(self.state[n.id].rows) for n in self.plan.nodes if self.plan.stored(n))

    def _backfill(self, progress: Callable[[int, int], None] | None) -> None:
        """Every node's output from scratch: the rules run fresh, each
        node's delta stored as soon as it is known and dropped once every
        reader has read it."""
        b = Batch(self.ds, {}, True, self._relation)
        b.max_rows = self.max_rows
        readers = self.plan.parents()
        for done, n in enumerate(self.plan.nodes, 1):
            b.d[n.id] = self._delta(n, b)
            self.grown += self.state[n.id].apply(b.d[n.id])
            for c in n.children:
                readers[c.id] -= 1
                if not readers[c.id]:
                    del b.d[c.id]
            if progress is not None:
                progress(done, len(self.plan.nodes))

    def apply(self, change: Delta, ds: QuadStore | None = None) -> KSet:
        """Bring the view from G to G' = G + ΔG (``ds``, or the dataset given
        at creation, already holds G'); return ΔV."""
        if not change:
            return {}
        new = ds or self.ds
        b = Batch(new, change, False, self._relation)
        b.max_rows = self.max_rows
        for v in self.virtual:
            v.source = b.old  # parents read their children as they were
        try:
            for n in self.plan.nodes:
                b.d[n.id] = self._delta(n, b)
        finally:
            for v in self.virtual:
                v.source = new
        for n in self.plan.nodes:
            self.grown += self.state[n.id].apply(b.d[n.id])
        return b.d[self.plan.root.id]

    def _delta(self, n: P.Node, b: Batch) -> KSet:
        d = delta(n, b)
        if self.max_rows is not None and len(d) > self.max_rows:
            raise ViewTooLarge(f"one of its nodes ({n.describe()}) changes by {len(d):,} rows "
                               f"at once; the limit is {self.max_rows:,}")
        return d


def evaluate(plan: P.Plan, ds: QuadStore) -> KSet:
    """The plan's output on ``ds`` from scratch, in memory."""
    return Maintainer(plan, ds).result

"""Incremental maintenance: the delta program of a pattern, interpreted in memory.

Every node keeps its output materialised as a ``KRel`` (the paper keeps Q(G)
for every sub-pattern Q, §4.6). A batch runs in two phases over the node DAG
in post-order: ``compute`` derives each node's ΔQ from its children's old
outputs and their deltas, then ``commit`` adds every ΔQ to its output.

- BGP: Theorem 4.3, index nested loops with ΔG first.
- Join: Theorem 4.5 (ΔP1⋈P2 + P1⋈ΔP2 + ΔP1⋈ΔP2 = ΔP1⋈P2 + P1'⋈ΔP2).
- Filter, Project, Union, Extend: §4.4 (Theorem 3.1 distributivity).
- Diff (the negative half of LeftJoin) and Minus: Theorem 4.6 — only left
  mappings compatible with a right mapping whose support changed (ΔS̄) are
  re-decided, each split by schema (§4.5.3) through ``KRel``.
- FILTER/BIND with EXISTS: a mapping's EXISTS value can only change when ΔG
  matches a triple pattern of the EXISTS under that mapping; those mappings
  are re-decided on G' (substitution semantics, SPARQL 1.1 §18.6).
- Distinct: a mapping enters or leaves with its support.
- Group/aggregates: the groups touched by Δ are recomputed from their members,
  so MIN/MAX survive deletion of the current extreme.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from rdflib.term import Identifier

from views import algebra as A
from views.bgp import join_patterns, match_quad
from views.dataset import Before, Delta, QuadStore
from views.errors import UnsupportedFeature
from views.expr import ExistsFn, truth, try_evaluate
from views.kset import KRel, KSet, Mu, add_into, mu
from views.normalize import normalize
from views.reference import exists_fn, group_key, group_row, minus_blocks, project


class Ctx:
    """One batch: G' (the dataset, already updated), G (read through G' and
    ΔG) and ΔG."""

    def __init__(self, ds: QuadStore, delta: Delta) -> None:
        self.ds, self.delta = ds, delta
        self.by_predicate: dict[Identifier, list[tuple[tuple, int]]] = {}
        for quad, sign in delta.items():
            self.by_predicate.setdefault(quad[2], []).append((quad, sign))
        self.before = Before(ds, delta)
        self.new: QuadStore = ds
        self.old: QuadStore = self.before
        self.exists, self.exists_before = exists_fn(ds), exists_fn(self.before)


class Node:
    children: tuple[Node, ...] = ()
    label = "?"

    def __init__(self) -> None:
        self.out = KRel()
        self.d: KSet = {}

    def scratch(self, ctx: Ctx) -> KSet:
        raise NotImplementedError

    def compute(self, ctx: Ctx) -> KSet:
        raise NotImplementedError

    def describe(self) -> str:
        return self.label


# ------------------------------------------------------------------- leaves


class BGPNode(Node):
    def __init__(self, p: A.BGP) -> None:
        super().__init__()
        self.tps = list(p.triples)
        self.label = f"BGP of {len(self.tps)} triple patterns: ΔB by Theorem 4.3"

    def scratch(self, ctx: Ctx) -> KSet:
        return _collect(join_patterns(self.tps, [ctx.new] * len(self.tps), [({}, 1)])[0])

    def compute(self, ctx: Ctx) -> KSet:
        # ΔB = Σ_i T1(G')⋈…⋈T(i-1)(G')⋈Ti(ΔG)⋈T(i+1)(G)⋈…⋈Tn(G)   (Theorem 4.3)
        out: KSet = {}
        n = len(self.tps)
        for i, tp in enumerate(self.tps):
            rest = self.tps[:i] + self.tps[i + 1:]
            sources = [ctx.new] * i + [ctx.old] * (n - i - 1)
            for rows in join_patterns(rest, sources, list(_delta_matches(ctx, tp))):
                add_into(out, ((mu(m), k) for m, k in rows))
        return out


class VirtualBGP:
    """A BGP's output, never stored: every read evaluates the BGP through the
    indexed dataset, as Theorem 4.3 already reads its inputs. While a batch
    computes its deltas it reads G (G' − ΔG); otherwise G'. Same interface as
    ``KRel``."""

    def __init__(self, tps: list[A.TriplePattern], source: QuadStore) -> None:
        self.tps, self.source = tps, source
        self.vars = A.triple_vars(tps)

    def _eval(self, starts: list[dict]) -> list[KSet]:
        sources = [self.source] * len(self.tps)
        return [_collect(rows) for rows in join_patterns(self.tps, sources,
                                                         [(s, 1) for s in starts])]

    def get(self, m: Mu) -> int:
        return self.get_many([m]).get(m, 0)

    def get_many(self, ms: Iterable[Mu]) -> dict[Mu, int]:
        full = [m for m in set(ms) if {v for v, _ in m} == self.vars]
        return {m: k for m, r in zip(full, self._eval([dict(m) for m in full]))
                if (k := r.get(m, 0))}

    def compatible(self, probe: dict, require_shared: bool = False) -> Iterator[tuple[Mu, int]]:
        return iter(self.compatible_many([probe], require_shared)[0])

    def compatible_many(self, probes: Sequence[Mapping], require_shared: bool = False
                        ) -> list[list[tuple[Mu, int]]]:
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

    def apply(self, delta: KSet) -> None:
        """Nothing is stored: the dataset already holds G'."""

    def __len__(self) -> int:
        return 0


def _delta_matches(ctx: Ctx, tp: A.TriplePattern) -> Iterator[tuple[dict, int]]:
    """Ti(ΔG): the bindings of ``tp`` over the changed quads, with their sign
    (only those with its predicate, when that is a constant)."""
    changed = ctx.delta.items() if A.is_var(tp.p) else ctx.by_predicate.get(tp.p, ())
    for quad, sign in changed:
        b = match_quad(tp, quad)
        if b is not None:
            yield b, sign


def _collect(rows: Iterable[tuple[dict, int]]) -> KSet:
    return add_into({}, ((mu(m), k) for m, k in rows))


class GraphNamesNode(Node):
    """The non-empty named graphs; one changes when its first triple arrives or
    its last one leaves."""

    def __init__(self, p: A.GraphNames) -> None:
        super().__init__()
        self.term = p.term
        self.label = "named graphs: existence changes of ΔG's graphs"

    def _row(self, g: Identifier) -> Mu | None:
        if A.is_var(self.term):
            return mu({self.term: g})  # type: ignore[dict-item]
        return mu({}) if g == self.term else None

    def scratch(self, ctx: Ctx) -> KSet:
        return add_into({}, ((r, 1) for g in ctx.ds.graph_names()
                             if (r := self._row(g)) is not None))

    def compute(self, ctx: Ctx) -> KSet:
        net: dict[Identifier, int] = {}
        for q, sign in ctx.delta.items():
            if q[0] is not None:
                net[q[0]] = net.get(q[0], 0) + sign
        out: KSet = {}
        for g, n in net.items():
            size = ctx.ds.graph_size(g)
            before, after = size - n > 0, size > 0
            row = self._row(g)
            if before != after and row is not None:
                add_into(out, [(row, 1 if after else -1)])
        return out


class ValuesNode(Node):
    label = "VALUES: constant"

    def __init__(self, p: A.Values) -> None:
        super().__init__()
        self.rows = add_into({}, ((mu(dict(r)), 1) for r in p.rows))

    def scratch(self, ctx: Ctx) -> KSet:
        return dict(self.rows)

    def compute(self, ctx: Ctx) -> KSet:
        return {}


# ------------------------------------------------------------ binary nodes


def join_into(out: KSet, rows: Iterable[tuple[Mu, int]], rel: KRel,
              keep: Callable[[dict], bool] | None = None) -> KSet:
    """out += rows ⋈ rel (K-set Join), probing rel's index (all rows at
    once); ``keep`` filters."""
    left = [(dict(m1), k1) for m1, k1 in rows]
    for (d1, k1), found in zip(left, rel.compatible_many([d for d, _ in left])):
        for m2, k2 in found:
            merged = {**d1, **dict(m2)}
            if keep is None or keep(merged):
                add_into(out, [(mu(merged), k1 * k2)])
    return out


class JoinNode(Node):
    """Join, or the filtered join half of LeftJoin (expr on μ1 ∪ μ2)."""

    def __init__(self, left: Node, right: Node, expr: A.Expr | None = None) -> None:
        super().__init__()
        self.children = (left, right)
        self.expr = expr
        self.label = "Join: Theorem 4.5" + (" with the OPTIONAL's filter" if expr else "")

    def _keep(self) -> Callable[[dict], bool] | None:
        expr = self.expr
        return None if expr is None else (lambda m: truth(expr, m))

    def scratch(self, ctx: Ctx) -> KSet:
        left, right = self.children
        return join_into({}, left.out.rows.items(), right.out, self._keep())

    def compute(self, ctx: Ctx) -> KSet:
        left, right = self.children
        keep = self._keep()
        out = join_into({}, left.d.items(), right.out, keep)            # ΔP1 ⋈ P2
        join_into(out, right.d.items(), left.out, keep)                 # P1 ⋈ ΔP2
        join_into(out, left.d.items(), KRel(right.d), keep)             # ΔP1 ⋈ ΔP2
        return out


class DiffNode(Node):
    """Diff (the unmatched half of LeftJoin, with its filter) or Minus:
    μ1 is kept with its annotation while no μ2 in supp(P2) matches it."""

    def __init__(self, left: Node, right: Node, expr: A.Expr | None, minus: bool,
                 graph_var: str | None = None) -> None:
        super().__init__()
        self.children = (left, right)
        self.expr, self.minus, self.graph_var = expr, minus, graph_var
        kind = "Minus" if minus else "Diff (OPTIONAL's unmatched side)"
        self.label = f"{kind}: Theorem 4.6 over changed right-hand support"

    def _matches(self, d1: dict, m2: Mu) -> bool:
        d2 = dict(m2)
        if self.minus:
            return minus_blocks(d1, d2, self.graph_var)
        return self.expr is None or truth(self.expr, {**d1, **d2})

    def _values(self, rows: list[tuple[Mu, int]], right: KRel, rdelta: KSet) -> list[int]:
        """Each μ1's annotation k1, or 0 where a μ2 in the right's new support
        blocks it; ``right`` holds the old support and ``rdelta`` its change.
        The right is probed once for all rows; the mappings entering its
        support are probed in memory."""
        live = [(dict(m1), k1) for m1, k1 in rows if k1]
        probes = [d for d, _ in live]
        old = right.get_many(rdelta) if rdelta else {}
        entering = KRel({m2: k2 for m2, k2 in rdelta.items() if m2 not in old})
        blocked = [any(k2 + rdelta.get(m2, 0) and self._matches(d1, m2) for m2, k2 in now)
                   or any(self._matches(d1, m2) for m2, _ in new)
                   for d1, now, new in zip(probes,
                                           right.compatible_many(probes, self.minus),
                                           entering.compatible_many(probes, self.minus))]
        verdict = iter(blocked)
        return [0 if not k1 or next(verdict) else k1 for _, k1 in rows]

    def scratch(self, ctx: Ctx) -> KSet:
        left, right = self.children
        rows = list(left.out.rows.items())
        return {m1: v for (m1, _), v in zip(rows, self._values(rows, right.out, {})) if v}

    def compute(self, ctx: Ctx) -> KSet:
        left, right = self.children
        # ΔS̄: right mappings entering or leaving the support (Theorem 4.6)
        was = right.out.get_many(right.d)
        changed = [dict(m2) for m2, k2 in right.d.items()
                   if _enters_or_leaves(was.get(m2, 0), k2)]
        cands = set(left.d)
        for found in left.out.compatible_many(changed, require_shared=self.minus):
            cands.update(m1 for m1, _ in found)
        order = list(cands)
        k_left, k_out = left.out.get_many(order), self.out.get_many(order)
        new = self._values([(m1, k_left.get(m1, 0) + left.d.get(m1, 0)) for m1 in order],
                           right.out, right.d)
        return {m1: v - k_out.get(m1, 0) for m1, v in zip(order, new)
                if v != k_out.get(m1, 0)}


def _enters_or_leaves(k: int, dk: int) -> bool:
    return (k == 0) != (k + dk == 0)


class UnionNode(Node):
    label = "Union: ΔP1 + ΔP2"

    def __init__(self, left: Node, right: Node) -> None:
        super().__init__()
        self.children = (left, right)

    def scratch(self, ctx: Ctx) -> KSet:
        return add_into(dict(self.children[0].out.rows), self.children[1].out.rows.items())

    def compute(self, ctx: Ctx) -> KSet:
        return add_into(dict(self.children[0].d), self.children[1].d.items())


# ------------------------------------------------------------- unary nodes


class MapNode(Node):
    """Filter or Extend: each input mapping maps to at most one output mapping.
    Without EXISTS the map is pure (Δ = f(ΔP1)); with EXISTS, mappings whose
    EXISTS patterns ΔG touches are re-decided against G'."""

    def __init__(self, child: Node, p: A.Filter | A.Extend) -> None:
        super().__init__()
        self.children = (child,)
        self.p = p
        self.graph_dependent = A.has_exists(p.expr)
        what = "Filter" if isinstance(p, A.Filter) else f"Extend ?{p.var}"
        self.label = what + (": EXISTS re-decided for mappings ΔG touches"
                             if self.graph_dependent else ": applied to ΔP1")
        if self.graph_dependent:
            self.tps = _exists_triple_patterns(p.expr)

    def _f(self, m: Mu, exists) -> Mu | None:  # type: ignore[no-untyped-def]
        d = dict(m)
        if isinstance(self.p, A.Filter):
            return m if truth(self.p.expr, d, exists) else None
        if self.p.var in d:
            return m
        v = try_evaluate(self.p.expr, d, exists)
        return m if v is None else m | {(self.p.var, v)}

    def scratch(self, ctx: Ctx) -> KSet:
        out: KSet = {}
        rows = self.children[0].out.rows
        exists = BatchExists(ctx.new, ctx.exists, self.p.expr, rows)
        for m, k in rows.items():
            r = self._f(m, exists)
            if r is not None:
                add_into(out, [(r, k)])
        return out

    def compute(self, ctx: Ctx) -> KSet:
        child = self.children[0]
        out: KSet = {}
        if not self.graph_dependent:
            for m, k in child.d.items():
                r = self._f(m, ctx.exists)
                if r is not None:
                    add_into(out, [(r, k)])
            return out
        touched = list(set(child.d) | self._touched(ctx))
        was = child.out.get_many(touched)
        now = {m: k for m in touched if (k := was.get(m, 0) + child.d.get(m, 0))}
        # the old decisions are re-taken on G, the new ones on G'
        before = BatchExists(ctx.old, ctx.exists_before, self.p.expr, was)
        after = BatchExists(ctx.new, ctx.exists, self.p.expr, now)
        for m in touched:
            k_old, k_new = was.get(m, 0), now.get(m, 0)
            r_old = self._f(m, before) if k_old else None
            r_new = self._f(m, after) if k_new else None
            if r_old is not None:
                add_into(out, [(r_old, -k_old)])
            if r_new is not None:
                add_into(out, [(r_new, k_new)])
        return out

    def _touched(self, ctx: Ctx) -> set[Mu]:
        child = self.children[0]
        if self.tps is None:
            return set(child.out.rows)
        probes = [{k: v for k, v in b.items() if not k.startswith("_:")}
                  for tp in self.tps for b, _ in _delta_matches(ctx, tp)]
        return {m for found in child.out.compatible_many(probes) for m, _ in found}


class BatchExists:
    """EXISTS decided for many mappings at once: where the pattern is a BGP it
    is read as a ``VirtualBGP`` probed with all of their substitutions at once
    (SPARQL 1.1 §18.6); other patterns go to ``fallback``, one mapping at a
    time."""

    def __init__(self, ds: QuadStore, fallback: ExistsFn, e: A.Expr,
                 ms: Iterable[Mu]) -> None:
        self.fallback = fallback
        self.bgps: dict[int, VirtualBGP] = {}
        self.known: dict[tuple[int, Mu], bool] = {}
        probes = [dict(m) for m in ms]
        for x in A.walk_expr(e):
            if isinstance(x, A.Exists) and isinstance(x.pattern, A.BGP):
                bgp = self.bgps[id(x.pattern)] = VirtualBGP(list(x.pattern.triples), ds)
                self.known.update(((id(x.pattern), bgp.start(p)), bool(rows))
                                  for p, rows in zip(probes, bgp.compatible_many(probes)))

    def __call__(self, pattern: A.Pattern, m: Mapping[str, Identifier]) -> bool:
        bgp = self.bgps.get(id(pattern))
        known = None if bgp is None else self.known.get((id(pattern), bgp.start(m)))
        return self.fallback(pattern, m) if known is None else known


def _exists_triple_patterns(e: A.Expr) -> list[A.TriplePattern] | None:
    """Triple patterns of the EXISTS in ``e``; None when a sub-select scopes
    variables away (then every mapping is re-decided)."""
    tps: list[A.TriplePattern] = []
    for x in A.walk_expr(e):
        if isinstance(x, A.Exists):
            if _has_scope(x.pattern):
                return None
            tps.extend(A.triple_patterns(x.pattern))
    return tps


def _has_scope(p: A.Pattern) -> bool:
    return isinstance(p, (A.Project, A.Group)) or any(_has_scope(c) for c in A.children(p))


class ProjectNode(Node):
    def __init__(self, child: Node, p: A.Project) -> None:
        super().__init__()
        self.children = (child,)
        self.vars = p.vars
        self.label = f"Project {' '.join('?' + v for v in p.vars)}: π(ΔP1)"

    def scratch(self, ctx: Ctx) -> KSet:
        return project(self.children[0].out.rows, self.vars)

    def compute(self, ctx: Ctx) -> KSet:
        return project(self.children[0].d, self.vars)


class DistinctNode(Node):
    label = "Distinct: support changes of P1"

    def __init__(self, child: Node) -> None:
        super().__init__()
        self.children = (child,)

    def scratch(self, ctx: Ctx) -> KSet:
        return {m: 1 for m, k in self.children[0].out.rows.items() if k > 0}

    def compute(self, ctx: Ctx) -> KSet:
        child = self.children[0]
        was = child.out.get_many(child.d)
        out: KSet = {}
        for m, k in child.d.items():
            old, new = was.get(m, 0) > 0, was.get(m, 0) + k > 0
            if old != new:
                out[m] = 1 if new else -1
        return out


class GroupNode(Node):
    """A group's solution is a function of its members, so a touched group's
    old and new solutions are recomputed from the child's old and new output."""

    def __init__(self, child: Node, p: A.Group) -> None:
        super().__init__()
        if any(A.has_exists(e) for e in p.keys) or any(A.has_exists(a.expr) for a in p.aggregates):
            raise UnsupportedFeature("EXISTS inside GROUP BY or an aggregate")
        self.children = (child,)
        self.p = p
        self.key_vars = [e.name for e in p.keys if isinstance(e, A.Var)]
        self.plain_keys = len(self.key_vars) == len(p.keys)
        names = ", ".join(f"{a.fn}" for a in p.aggregates) or "no aggregate"
        self.label = f"Group ({names}): touched groups recomputed from their members"

    def _row(self, key: tuple, members: KSet) -> Mu | None:
        if self.p.keys and not members:
            return None  # only the implicit group of an ungrouped query can be empty
        return mu(group_row(self.p, key, [(dict(m), k) for m, k in members.items()], None))

    def _members(self, keys: list[tuple], extra: KSet) -> list[tuple[KSet, KSet]]:
        """The old and new members of each group in ``keys``: the child is
        probed by the key variables (all keys at once), or read whole once
        when a key is an expression."""
        rel = self.children[0].out
        if self.plain_keys:
            found = rel.compatible_many([{v: t for v, t in zip(self.key_vars, key)
                                          if t is not None} for key in keys])
        else:
            everything = list(rel.compatible({}))
            found = [everything] * len(keys)
        added: dict[tuple, KSet] = {}
        for m, k in extra.items():
            added.setdefault(group_key(self.p, dict(m)), {})[m] = k
        out = []
        for key, rows in zip(keys, found):
            old: KSet = {m: k for m, k in rows if group_key(self.p, dict(m)) == key}
            out.append((old, add_into(dict(old), added.get(key, {}).items())))
        return out

    def scratch(self, ctx: Ctx) -> KSet:
        groups: dict[tuple, KSet] = {}
        for m, k in self.children[0].out.rows.items():
            groups.setdefault(group_key(self.p, dict(m)), {})[m] = k
        if not self.p.keys:
            groups.setdefault((), {})
        return add_into({}, ((r, 1) for key, members in groups.items()
                             if (r := self._row(key, members)) is not None))

    def compute(self, ctx: Ctx) -> KSet:
        delta = self.children[0].d
        touched = list({group_key(self.p, dict(m)) for m in delta})
        out: KSet = {}
        for key, (old_members, new_members) in zip(touched, self._members(touched, delta)):
            old, new = self._row(key, old_members), self._row(key, new_members)
            if old != new:
                if old is not None:
                    add_into(out, [(old, -1)])
                if new is not None:
                    add_into(out, [(new, 1)])
        return out


# -------------------------------------------------------------- the program


def build(p: A.Pattern) -> Node:
    """The delta program of a normalised pattern, as a DAG of nodes."""
    match p:
        case A.BGP():
            return BGPNode(p)
        case A.Values():
            return ValuesNode(p)
        case A.Join():
            return JoinNode(build(p.left), build(p.right))
        case A.LeftJoin():
            if A.has_exists(p.expr):
                raise UnsupportedFeature("EXISTS inside an OPTIONAL's filter")
            left, right = build(p.left), build(p.right)
            return UnionNode(JoinNode(left, right, p.expr), DiffNode(left, right, p.expr, False))
        case A.Minus():
            return DiffNode(build(p.left), build(p.right), None, True, p.graph_var)
        case A.GraphNames():
            return GraphNamesNode(p)
        case A.Union_():
            return UnionNode(build(p.left), build(p.right))
        case A.Filter() | A.Extend():
            return MapNode(build(p.p), p)
        case A.Project():
            return ProjectNode(build(p.p), p)
        case A.Distinct():
            return DistinctNode(build(p.p))
        case A.Group():
            return GroupNode(build(p.p), p)
    raise UnsupportedFeature(f"operator {type(p).__name__}")


def postorder(root: Node) -> list[Node]:
    seen: set[int] = set()
    order: list[Node] = []

    def visit(n: Node) -> None:
        if id(n) in seen:
            return
        seen.add(id(n))
        for c in n.children:
            visit(c)
        order.append(n)

    visit(root)
    return order


class Maintainer:
    """A maintained view of ``pattern`` over a dataset shared with other views.

    >>> from rdflib import URIRef, Literal
    >>> from views.parse import parse
    >>> from views.dataset import Dataset
    >>> ds = Dataset()
    >>> q = parse("SELECT (COUNT(*) AS ?n) { ?s <http://e/p> ?o }")
    >>> v = Maintainer(q.pattern, ds)
    >>> p = URIRef("http://e/p")
    >>> _ = v.apply(ds.apply([((None, URIRef("http://e/a"), p, Literal(1)), 1)]))
    >>> [dict(m)["n"] for m in v.result]
    [rdflib.term.Literal('1', datatype=rdflib.term.URIRef('http://www.w3.org/2001/XMLSchema#integer'))]
    """

    def __init__(self, pattern: A.Pattern, ds: QuadStore,
                 relations: Callable[[int], KRel] | None = None, backfill: bool = True,
                 progress: Callable[[int, int], None] | None = None) -> None:
        """``relations(i)`` gives node i's output relation (in memory by
        default; the pipeline passes Postgres-backed ones). ``backfill``
        computes every node from scratch; without it the relations already
        hold the state at the dataset's previous version. ``progress(done,
        total)`` is called as backfilled nodes complete."""
        self.pattern = normalize(pattern)
        self.ds = ds
        self.root = build(self.pattern)
        self.nodes = postorder(self.root)
        for i, n in enumerate(self.nodes):
            if isinstance(n, BGPNode):
                n.out = VirtualBGP(n.tps, ds)  # type: ignore[assignment]
            else:
                n.out = relations(i) if relations is not None else KRel()
        if backfill:
            ctx = Ctx(ds, {})
            for done, n in enumerate(self.nodes, 1):
                if not isinstance(n.out, VirtualBGP):
                    n.out.apply(n.scratch(ctx))
                if progress is not None:
                    progress(done, len(self.nodes))

    @property
    def result(self) -> KSet:
        return self.root.out.rows

    def apply(self, delta: Delta, ds: QuadStore | None = None) -> KSet:
        """Bring the view from G to G' = G + ΔG (``ds`` already holds G');
        return ΔV."""
        if not delta:
            return {}
        ctx = Ctx(ds or self.ds, delta)
        virtual = [n.out for n in self.nodes if isinstance(n.out, VirtualBGP)]
        for v in virtual:
            v.source = ctx.old  # parents read their children as they were
        for n in self.nodes:
            n.d = n.compute(ctx)
        dv = self.root.d
        for n in self.nodes:
            n.out.apply(n.d)
            n.d = {}
        for v in virtual:
            v.source = ctx.new
        return dv

    def explain(self) -> str:
        """The maintenance plan in words, one node a line."""
        lines: list[str] = []

        def walk(n: Node, depth: int) -> None:
            lines.append("  " * depth + n.describe())
            for c in n.children:
                walk(c, depth + 1)

        walk(self.root, 0)
        return "\n".join(lines)

    def aux_rows(self) -> int:
        return sum(len(n.out) for n in self.nodes)



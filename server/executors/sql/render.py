"""A view's delta program rendered to one SQL statement over term ids (decision 4,
counting paper §4): every node's ΔQ a CTE computed set at a time from ΔG (the
log's net changes over the view's pods, ``podviews_delta_staged``), the pods' triples and the stored
K-relations as they were, then every stored node's ΔQ added to its
K-relation tables, rows whose k reaches 0 deleted — all in the statement's
one snapshot, so every rule reads the old outputs, as the two phases of
``views.interpret`` do.

Relations are sums of joins (``Rel``: alternatives, each a list of FROM
items): a stored node is one alternative per schema table (§4.5.3), a BGP's
output (never stored) its triple patterns over G. Every relation names a
variable's term id by one column per variable of the plan (``v0``, ``v1``…),
NULL where a solution leaves it unbound; joins compare columns only where
both sides may bind them (SPARQL 1.1 §18.3 compatibility).

A node ``render`` cannot state (an expression without exact SQL semantics,
a group by an expression or with an aggregate other than COUNT, SUM, AVG,
MIN, MAX and SAMPLE of a variable, a BIND of an expression, an EXISTS
other than of a BGP) makes the view run in the interpreter
(``views.interpret``), named in its plan (``placement``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from rdflib import XSD
from rdflib.term import BNode, Identifier

from server.executors.sql import tally as T
from server.executors.sql.exprs import condition
from server.executors.sql.shape import NotRendered, Schema, joined_iris, shape
from server.executors.sql.sums import sums_members, term
from storage.krel import NodeTables, column_names, key_columns
from storage.terms import integer_id, number_id
from views import algebra as A
from views import plan as P

DG = "pv_dg"  # ΔG of the batch, (s, p, o, sign): the statement's first CTE
PODS = "CAST(:pods AS bigint[])"
NULL = "CAST(NULL AS bigint)"  # an unbound variable's column (Postgres and Spark SQL alike)
# Larger BGPs stay on the interpreter: their statements plan slowly (design notes 88, 148)
MAX_PATTERNS = 16
REACH = "pv_reach"  # Spark's: the triples the batch's keys reach, old and new (``reach``)


@dataclass
class Item:
    """One FROM item of a join: its SQL, the columns of the variables it
    binds (``certain``: bound in every row) and its annotation."""

    sql: str
    cols: dict[str, str]
    certain: frozenset[str]
    k: str | None = None  # None: 1
    conds: list[str] = field(default_factory=list)
    subject: str | None = None  # a triple pattern's subject variable
    # a triple pattern: an index of the graph (or of ΔG) serves a lookup by any of
    # its positions, so it can be read once per key (``Renderer.per_key``)
    probed: bool = False


Alt = list[Item]  # a join
Rel = list[Alt]  # a sum of joins


@dataclass
class Joined:
    """Items joined: the FROM clause, the conditions, each variable's
    column (coalesced where no side binds it for sure) and the product of
    the annotations."""

    from_: str
    where: list[str]
    cols: dict[str, str]
    certain: frozenset[str]
    k: str


# ------------------------------------------------------------------ joins


def _merge(cols: dict[str, str], certain: set[str], item: Item, where: list[str]) -> None:
    """Bind ``item``'s variables into ``cols``: shared ones must be
    compatible (equal where both bind them)."""
    for v, c in item.cols.items():
        if v not in cols:
            cols[v], certain_v = c, v in item.certain
        else:
            e, ce, cn = cols[v], v in certain, v in item.certain
            if ce and cn:
                where.append(f"{e} = {c}")
            elif ce:
                where.append(f"({c} IS NULL OR {e} = {c})")
            elif cn:
                where.append(f"({e} IS NULL OR {e} = {c})")
            else:
                where.append(f"({e} IS NULL OR {c} IS NULL OR {e} = {c})")
            cols[v] = e if ce else c if cn else f"coalesce({e}, {c})"
            certain_v = ce or cn
        if certain_v:
            certain.add(v)


def join(items: Sequence[Item], outer: Item | None = None) -> Joined:
    """Join ``items`` in their order (each FROM item ``JOIN … ON``); ``outer``
    binds variables to columns of an enclosing query (a correlated probe)."""
    cols: dict[str, str] = dict(outer.cols) if outer else {}
    certain: set[str] = set(outer.certain) if outer else set()
    from_, where = "", []
    for i, it in enumerate(items):
        on: list[str] = []
        _merge(cols, certain, it, on)
        on += it.conds
        if i == 0:
            from_ = it.sql
            where += on
        else:
            from_ += f" JOIN {it.sql} ON {' AND '.join(on) or 'TRUE'}"
    ks = [it.k for it in items if it.k is not None]
    return Joined(from_, where, cols, frozenset(certain), " * ".join(ks) or "1")


def connected(first: Sequence[Item], rest: Sequence[Item], outer: Iterable[str] = ()
              ) -> list[Item]:
    """``first``, then ``rest`` each next sharing the most variables with
    those before it or ``outer`` (an enclosing query's: a correlated probe's
    bindings), then a triple pattern whose subject they bind, then the
    most constants): a join order that starts from the change and follows
    the data. Postgres keeps it where its estimates tie, as they do for
    every lookup of one key: a subject has few triples of a predicate, an
    object may have many (a producer's products), and an old-graph pattern
    on a subject ΔG inserted is emptied by its anti-join at once."""
    out, bound, todo = list(first), {*outer, *(v for it in first for v in it.cols)}, list(rest)
    while todo:
        best = max(todo, key=lambda it: (len(bound & it.cols.keys()), it.subject in bound,
                                         len(it.conds)))
        todo.remove(best)
        out.append(best)
        bound |= best.cols.keys()
    return out


# ------------------------------------------------------------- renderer


@dataclass(frozen=True)
class Known:
    """What the renderer knows of the batch: the ids of the plan's constant
    terms (absent: not in the dictionary, so matching nothing) and the
    predicates of ΔG's insertions and deletions (None: any). A triple
    pattern whose predicate ΔG lacks has no delta term (Theorem 4.3's sum
    loses it) and reads G as G'; a node whose every input delta is empty
    has an empty delta and writes nothing."""

    ids: dict[Identifier, int]
    inserted: frozenset[int] | None = None
    deleted: frozenset[int] | None = None
    probe: bool = False  # ΔG is small beside the graph: its keys' rows read by probes (per_key)

    def changed(self, p: object, side: frozenset[int] | None) -> bool:
        if side is None or A.is_var(p):
            return True
        i = self.ids.get(p)  # type: ignore[call-overload]
        return i is not None and i in side


class Renderer:
    """The SQL of one plan over the view's K-relation tables (``tables``:
    every possible schema of every stored node registered, ``prepare``)."""

    def __init__(self, plan: P.Plan, tables: dict[str, NodeTables], pods: int,
                 known: Known, spark: bool = False, tallies: Mapping[str, str] | None = None
                 ) -> None:
        self.plan, self.tables, self.multi_pod, self.known = plan, tables, pods > 1, known
        # the tally tables of groups that keep them, by node (``tally``), and what
        # the statement writes to them: (table, key columns, the groups' CTE, what they hold)
        self.tallies = tallies or {}
        self.tally_writes: list[tuple[str, list[str], str, T.Aggregates]] = []
        self.spark = spark  # Spark SQL: tables quoted by backticks, numbers by Postgres's answers
        # the variables the nodes bind, and those a group reads that its members may
        # all leave unbound (``COUNT(?y)`` over a pattern without ?y: a column of NULLs)
        names = sorted(set().union(*(shape(n).vars for n in plan.nodes), *(
            {e.name for e in (*n.keys, *(a.expr for a in n.aggregates)) if isinstance(e, A.Var)}
            for n in plan.nodes if isinstance(n, P.Group))))
        self.column = {v: f"v{i}" for i, v in enumerate(names)}
        self.ctes: list[tuple[str, str]] = []
        # CTEs computed once though read once: Postgres would inline them, and one
        # inlined into the inner side of a nested loop (a difference's changed right
        # mappings, a test of their old support per row) ran again for every outer
        # row: 300,000 tests for a batch of 1,000 (design note 156). The others stay
        # inlinable: materializing every CTE cost the path view's deletes 2 ms in 30.
        self.once: set[str] = set()
        self.delta_name: dict[str, str] = {}  # nodes whose delta is not empty
        # groups' rows: their numbers' terms (COUNT's, SUM's) as SQL datatype and lexical form
        self.numbers: list[tuple[str, list[tuple[str, str]]]] = []
        self.missing: dict[object, int] = {}  # constants the dictionary lacks: their ids
        self.summing = summing(plan)
        self._alias = 0
        # Spark's reads of the graph by keys (``reach``): a variable every mapping of the
        # plan binds, that its joins and differences share (None: none), the keys (ΔG's
        # triples, each giving a star's centre its value) and the patterns read by them
        # On Spark, groups and the nodes above them are left to Postgres (``deferred``)
        self.later = deferred(plan) if spark else frozenset()
        ran = [n for n in plan.nodes if n.id not in self.later]
        self.centre = partition(ran) if spark else None
        # or, where none, every BGP's patterns chained from constant subjects (``anchors``)
        self.anchors = anchors(ran) if spark and self.centre is None else None
        # or, where neither, the one BGP's patterns reached from ΔG's triples (``seeded``)
        self.seeded = seeded(ran) if spark and self.centre is None and self.anchors is None \
            else None
        self.keys: list[str] = []
        # nodes read through ``pv_reach`` as a step of the program, by id: its CTE (a BGP's
        # ``both``, any node's ``dual.evaluated``)
        self.steps: dict[str, str] = {}
        self.evaluates = False  # whether the program is ``dual``'s
        self.reached: list[tuple[str, A.TriplePattern]] = []
        self.reaching = False  # whether the program reads ``pv_reach``
        self.whole = False  # whether it reads the graph otherwise

    @property
    def reads_reach(self) -> bool:
        """Whether the graph, old and new, is read through ``pv_reach``."""
        return self.centre is not None or self.anchors is not None or self.seeded is not None

    def quote(self, table: str) -> str:
        return f"`{table}`" if self.spark else f'"{table}"'

    @property
    def fence(self) -> str:
        """Ends a subquery whose columns hold lookups the query above reads
        more than once: Postgres would pull the subquery up and evaluate
        each lookup again wherever its column is named — the difference's
        ``kl`` three times a candidate, each a scan of a CTE (design note
        156). ``OFFSET 0`` keeps it a subquery; Spark does not copy them."""
        return "" if self.spark else " OFFSET 0"

    def probes(self, alt: Alt) -> bool:
        """Whether the rows ``alt`` gives for a batch's keys (a CTE of the
        few keys it touches) are read once per key (``per_key``): where ΔG
        is small beside the graph (``Known.probe``, ``run.PROBED_BELOW``)
        and every item of ``alt`` is a triple pattern (``Item.probed``).
        Postgres estimates a CTE's rows from defaults (200 groups for a
        DISTINCT), and a plain join of such keys with the graph hashed or
        sorted whole predicates, a cost that grew with the data and not
        with the batch (design note 165). Otherwise they are joined as
        before: a large batch's keys are many (a probe each costs more than
        reading each predicate once), a CTE has no index and a stored table
        none on every column a key may bind."""
        return self.known.probe and all(it.probed for it in alt)

    def per_key(self, keys: str, select: str, alias: str) -> str:
        """FROM items: each row of ``keys`` with the rows ``select``
        (correlated with it) gives for it, as ``alias``, run once per key by
        index probes (``probes``): ``OFFSET 0`` keeps the subquery from
        being pulled up into a join."""
        return f"{keys} CROSS JOIN LATERAL ({select}{self.fence}) AS {alias}"

    def alias(self, prefix: str = "t") -> str:
        self._alias += 1
        return f"{prefix}{self._alias}"

    # ----------------------------------------------------------- sources

    def triple(self, tp: A.TriplePattern, source: str) -> Item:
        """A triple pattern over the graph as it is now (``new``), as it was
        (``old``: G' − ΔG⁺ + ΔG⁻), over ΔG (``delta``, k = its sign) or over
        the triples the batch's keys reach (``reach``: Spark's, ``hub_scan``;
        a partitioned plan's old and new graphs, ``partition``)."""
        if tp.g is not None:
            raise NotRendered("a triple pattern of a named graph")
        a = self.alias()
        conds: list[str] = []
        if source in ("new", "old") and self.reads_reach:
            conds.append(f"{a}.{'kn' if source == 'new' else 'ko'} = 1")
            source = "reach"
        self.whole = self.whole or source in ("new", "old")
        self.reaching = self.reaching or source == "reach"
        if source == "reach":
            sql = f"{REACH} AS {a}"
        elif source == "new":
            sql = f"pod_triples AS {a}"
            conds.append(f"{a}.pod_id = ANY({PODS})")
            conds += self._one_per_pod(a)
        elif source == "old":
            sql, conds = self._old_graph(tp.p, a)
        else:
            sql = f"{DG} AS {a}"
        cols: dict[str, str] = {}
        for pos, slot in zip("spo", (tp.s, tp.p, tp.o)):
            if A.is_var(slot):
                if slot in cols:
                    conds.append(f"{a}.{pos} = {cols[slot]}")  # type: ignore[index]
                else:
                    cols[slot] = f"{a}.{pos}"  # type: ignore[index]
            else:
                conds.append(f"{a}.{pos} = {self.term(slot)}")
        return Item(sql, cols, frozenset(cols), f"{a}.sign" if source == "delta" else None,
                    conds, tp.s if A.is_var(tp.s) else None, probed=True)  # type: ignore[arg-type]

    def term(self, t: object) -> str:
        """A constant's id; for one the dictionary lacks, a negative number
        of its own: it matches no stored term, and two such constants are
        the same term only when they are equal (``sameTerm(:a, :b)`` of two
        terms never written was true while both were -1; fuzzer seed 7171)."""
        found = self.known.ids.get(t)  # type: ignore[call-overload]
        if found is None:
            found = self.missing.setdefault(t, -1 - len(self.missing))
        return str(found)

    def _one_per_pod(self, a: str) -> list[str]:
        """A triple in several of the view's pods counted once (decision 5):
        only from the first pod holding it."""
        if not self.multi_pod:
            return []
        return [(f"NOT EXISTS (SELECT 1 FROM pod_triples u WHERE u.pod_id = ANY({PODS}) AND "
                 f"u.pod_id < {a}.pod_id AND u.s = {a}.s AND u.p = {a}.p AND u.o = {a}.o)")]

    def _old_graph(self, p: object, a: str) -> tuple[str, list[str]]:
        """G, the pods' graph before the batch (G' − ΔG⁺ + ΔG⁻), as a FROM
        item named ``a`` for a pattern with predicate ``p``, and its
        conditions. The deleted triples come back through a UNION ALL whose
        branches are bare tables (ΔG's rows with pod NULL, G's with sign 0):
        Postgres makes it an append relation only then, and probes
        pod_triples' indexes with the join's keys instead of reading every
        triple with the predicate (Q3: 12.4 → 0.4 ms, note 128); every
        condition stays outside, on ``a``. Where ΔG has no triple with
        ``p``, G is G': the plain table."""
        k = self.known
        conds = [f"{a}.pod_id = ANY({PODS})"]
        sql = f"pod_triples AS {a}"
        if k.changed(p, k.deleted):
            sql = (f"(SELECT x.pod_id, x.s, x.p, x.o, 0 AS sign FROM pod_triples x UNION ALL "
                   f"SELECT {NULL}, d.s, d.p, d.o, d.sign FROM {DG} d) AS {a}")
            conds = [f"({a}.pod_id = ANY({PODS}) OR {a}.sign < 0)", f"{a}.sign <= 0"]
        if k.changed(p, k.inserted):  # a deleted triple is not inserted too: ΔG is net
            conds.append(f"NOT {inserted(a)}")
        return sql, conds + self._one_per_pod(a)

    def delta(self, n: P.Node) -> Rel:
        """ΔQ of a rendered node: its CTE (no alternative when empty)."""
        if n.id not in self.delta_name:
            return []
        a = self.alias("a")
        s = shape(n)
        return [[Item(f"{self.delta_name[n.id]} AS {a}",
                      {v: f"{a}.{self.column[v]}" for v in sorted(s.vars)}, s.certain,
                      f"{a}.k")]]

    def old(self, n: P.Node) -> Rel:
        """``n``'s output before the batch: its tables (one alternative per
        schema), or, for a BGP, its triple patterns over G."""
        if not self.plan.stored(n):
            assert isinstance(n, P.Scan)
            if self.reads_reach and len(n.triples) > 1:
                both = self.both(n)
                return [[replace(both, conds=[f"{product([both], 'ko')} = 1"])]]
            order = None if self.spark else anchored(n.triples)
            if order is not None:
                return [[self.anchored_old(n, order)]]
            return [connected([], [self.triple(tp, "old") for tp in n.triples])]
        out: Rel = []
        for schema in sorted(shape(n).schemas, key=sorted):
            name, variables = self.tables[n.id][schema]
            a = self.alias()
            out.append([Item(f"{self.quote(name)} AS {a}", {v: f"{a}.{c}" for v, c in
                                                   zip(variables, column_names(variables))},
                             schema, f"{a}.k")])
        return out

    # ------------------------------------------------------------ selects

    def select(self, n: P.Node, j: Joined, extra: Iterable[str] = (), k: str | None = None,
               vars_: Iterable[str] | None = None) -> str:
        """One alternative of ``n``'s delta: its variables' columns (NULL
        where unbound) and annotation."""
        names = sorted(shape(n).vars if vars_ is None else vars_)
        cols = [f"{j.cols.get(v, NULL)} AS {self.column[v]}" for v in names]
        where = [*j.where, *extra]
        return (f"SELECT {', '.join([*cols, f'{k or j.k} AS k'])} FROM {j.from_}"
                + (f" WHERE {' AND '.join(where)}" if where else ""))

    def summed(self, n: P.Node, selects: Sequence[str]) -> str | None:
        """The K-set sum of ``selects``: one row per mapping, zeros dropped
        (None: no select, an empty delta); their rows as they are where no
        reader needs ``n``'s delta summed (``summing``)."""
        cols = [self.column[v] for v in sorted(shape(n).vars)]
        if not selects:
            return None
        body = " UNION ALL ".join(f"({s})" for s in selects)
        if n.id not in self.summing:
            return body
        group = f" GROUP BY {', '.join(cols)}" if cols else ""
        return (f"SELECT {', '.join([*cols, 'CAST(sum(k) AS bigint) AS k'])} FROM ({body}) AS u"
                f"{group} HAVING sum(k) <> 0")

    def lookup(self, rel: Rel, outer: Item) -> str:
        """The annotation ``rel`` gives the mapping of ``outer``'s columns
        (0 when absent): an exact match, unbound where it is unbound."""
        parts = []
        for alt in rel:
            j = join(alt)
            where = _matching(j.cols, j.certain, outer)
            if where is None:
                parts.append("0")
                continue
            where = [*j.where, *where]
            parts.append(f"coalesce((SELECT sum({j.k}) FROM {j.from_}"
                         + (f" WHERE {' AND '.join(where)}" if where else "") + "), 0)")
        return "(" + (" + ".join(parts) or "0") + ")"

    def joined(self, n: P.Node, outer: Item, joins: list[str]) -> str:
        """``lookup`` of ``n``'s delta (one row per mapping: ``summing``) by
        a LEFT JOIN added to ``joins`` — for the query whose FROM holds
        ``outer`` — rather than a subquery per row: a CTE has no index, so
        each lookup scanned all of it, a large batch's candidates times its
        rows (1,000 × 1,000 took 40 ms a lookup; design note 156). Its
        conditions are equalities a hash join can take: an optional
        variable's ids compared with 0 for unbound (no term's id is 0)."""
        rel = self.delta(n)
        if self.spark or n.id not in self.summing or not rel:
            return self.lookup(rel, outer)
        (d,), = rel
        return f"coalesce({d.k}, 0)" if _left_join(d, outer, joins) else "0"

    # -------------------------------------------------------------- rules

    def node(self, n: P.Node) -> str | None:
        """The SELECT of ΔQ for node ``n`` (counting paper §4); None when it
        is empty in this batch."""
        match n:
            case P.Scan():
                return self.scan(n)
            case P.Values() | P.GraphNames():
                return None  # constant; no named graphs reach views
            case P.Join():
                return self.join_rule(n)
            case P.Union():
                return self.summed(n, [self.select(n, join(alt)) for c in (n.left, n.right)
                                       for alt in self.delta(c)])
            case P.Project():
                return self.summed(n, [self.select(n, join(alt)) for alt in self.delta(n.child)])
            case P.Filter() if not A.has_exists(n.expr):
                return self.filter(n)
            case P.Filter() if exists_of(n.expr) is not None:
                return self.exists_filter(n)
            case P.Extend(expr=A.Var()):
                return self.extend(n)
            case P.Group():
                return self.group(n)
            case P.Distinct():
                return self.distinct(n)
            case P.Diff():
                return self.diff(n)
        raise NotRendered(n.describe())

    def scan(self, n: P.Scan) -> str | None:
        """ΔB = Σ_i T1(G')⋈…⋈T(i-1)(G')⋈Ti(ΔG)⋈T(i+1)(G)⋈…⋈Tn(G)  (Theorem 4.3),
        or on Spark, for a star, a BGP of a plan reached from constant
        subjects (``anchors``) or one reached from ΔG's triples
        (``seeded``), ``hub_scan``."""
        selects = []
        if len(n.triples) > MAX_PATTERNS:
            raise NotRendered(f"a BGP of more than {MAX_PATTERNS} triple patterns")
        if any(tp.g is not None for tp in n.triples):
            raise NotRendered("a triple pattern of a named graph")
        k = self.known
        changed = [tp for tp in n.triples
                   if k.changed(tp.p, k.inserted) or k.changed(tp.p, k.deleted)]
        if (self.anchors is not None or self.seeded is not None) and len(n.triples) > 1:
            return self.hub_scan(n) if changed else None  # Spark: reached from constants, ΔG
        centre = self.centre or (hub(n.triples) if self.spark else None)
        if centre is not None:
            self.reached += [(centre, tp) for tp in n.triples]
            self.keys += [self.key(tp, centre) for tp in changed]
            if changed and len(n.triples) > 1:
                return self.hub_scan(n)
        order = None if self.spark else anchored(n.triples)
        if order is not None:
            return self.anchored_scan(n, order) if changed else None
        centre = subject_hub(n.triples) if self.known.probe and not self.spark else None
        if centre is not None and changed:
            return self.star_scan(n, centre, changed)
        for i, tp in enumerate(n.triples):
            if tp not in changed:
                continue  # Ti(ΔG) is empty
            items = [self.triple(t, "new" if j < i else "old")
                     for j, t in enumerate(n.triples) if j != i]
            selects.append(self.select(n, join(connected([self.triple(tp, "delta")], items))))
        return self.summed(n, selects)

    def key(self, tp: A.TriplePattern, centre: str) -> str:
        """The values ``centre`` takes in ΔG's triples matching ``tp`` (one
        per triple: ``candidates`` makes the keys of several patterns a set)."""
        j = join([self.triple(tp, "delta")])
        return (f"SELECT {j.cols[centre]} AS h FROM {j.from_}"
                + (f" WHERE {' AND '.join(j.where)}" if j.where else ""))

    def hub_scan(self, n: P.Scan) -> str | None:
        """ΔB of a star (every pattern binds its centre): B(G') − B(G) on
        the centre's values ΔG's triples give it (its keys), one join of
        the triples those keys reach (``pv_reach``, ``reach``: each once,
        ``kn`` whether in G', ``ko`` whether in G), a mapping's annotation
        the product of its triples' ``kn`` less that of their ``ko``. A
        mapping with any other centre joins no triple of ΔG: its annotation
        is 1 − 1, dropped. n − 1 joins on one key, against Theorem 4.3's n
        terms of n − 1 joins each: Spark's cost is per exchange, not per
        row (design note 175). A BGP of a plan whose BGPs are all reached
        from constant subjects (``anchors``) is the same join over what
        they reach: every mapping of it, in G or G', is made of those
        triples (note 194); so is a BGP reached from ΔG's triples
        (``seeded``): every mapping of it that holds one of them is."""
        items = [self.both(n)]
        k = net(items)
        return self.summed(n, [self.select(n, join(items), [f"{k} <> 0"], k)])

    def both(self, n: P.Scan) -> Item:
        """A BGP read through ``pv_reach`` (``hub_scan``, ``old``): its
        mappings in G or G' with ``kn`` (in G') and ``ko`` (in G), each the
        product of its triples', a step of the program computed once for
        every rule reading it: Q2's twelve patterns were joined in ΔQ,
        again in the OPTIONAL's candidates, again per candidate for its
        old support (design note 197)."""
        if n.id not in self.steps:
            items = connected([], [self.triple(t, "reach") for t in n.triples])
            j, kn, ko = join(items), product(items, "kn"), product(items, "ko")
            self.steps[n.id] = self.alias("b")
            where = [*j.where, f"({kn} = 1 OR {ko} = 1)"]
            self.ctes.append((self.steps[n.id], (
                f"SELECT {self._cols(sorted(j.cols), j.cols)}, {kn} AS kn, {ko} AS ko "
                f"FROM {j.from_} WHERE {' AND '.join(where)}")))
        s = shape(n)
        return self._cte_item(self.steps[n.id], s.vars, s.certain)

    def star_scan(self, n: P.Scan, centre: str, changed: Sequence[A.TriplePattern]) -> str | None:
        """ΔB of a star whose patterns all have its centre as subject, on
        Postgres for a small batch (``Known.probe``): B(G') − B(G) on the
        centre's values ΔG's triples give it (its keys), each pattern read
        by index probes per key (``reached``), each triple with ``kn``
        (in G') and ``ko`` (in G); a mapping's annotation is the product of
        its triples' ``kn`` less that of their ``ko``. A mapping with any
        other centre joins no triple of ΔG: its annotation is 1 − 1,
        dropped. n probes a key, against Theorem 4.3's n terms of n − 1
        joins each: a smaller statement, planned and started faster
        (design note 177)."""
        k = self.alias("k")
        keys = Item(f"({candidates([self.key(tp, centre) for tp in changed])}) AS {k}",
                    {centre: f"{k}.h"}, frozenset({centre}))
        items = connected([], [self.reached_by(tp, {centre: f"{k}.h"}) for tp in n.triples],
                          [centre])
        d = net(items)
        return self.summed(n, [self.select(n, join([keys, *items]), [f"{d} <> 0"], d)])

    def anchored_scan(self, n: P.Scan, order: Sequence[A.TriplePattern]) -> str | None:
        """ΔB of a BGP anchored at constant subjects (``anchored``): B(G')
        − B(G) evaluated whole, each pattern in ``order`` read by index
        probes on its subject (``reached_by``), each triple with ``kn`` (in
        G') and ``ko`` (in G); a mapping's annotation is the product of its
        triples' ``kn`` less that of their ``ko``, zeros dropped. Its
        mappings are the few the constants reach, whatever the batch: n
        probes, against Theorem 4.3's n terms of n − 1 joins each (BSBM's
        Q2, a product's twelve patterns: 12 scans for 144; design note 180)."""
        items = self.reached_in(order)
        d = net(items)
        return self.summed(n, [self.select(n, join(items), [f"{d} <> 0"], d)])

    def anchored_old(self, n: P.Scan, order: Sequence[A.TriplePattern]) -> Item:
        """B(G) of a BGP anchored at constant subjects: the mappings of
        ``anchored_scan``'s triples all in G (each ``ko`` 1), one FROM item
        (its probes chained in their order, fenced), joined as a whole by
        the rules that read it (a difference's, a group's)."""
        items = self.reached_in(order)
        j, a = join(items), self.alias("b")
        in_g = " AND ".join([*j.where, product(items, "ko") + " = 1"])
        sql = (f"(SELECT {self._cols(sorted(j.cols), j.cols)} FROM {j.from_} WHERE {in_g}"
               f"{self.fence}) AS {a}")
        cols = {v: f"{a}.{self.column[v]}" for v in sorted(j.cols)}
        return Item(sql, cols, frozenset(cols))

    def reached_in(self, order: Sequence[A.TriplePattern]) -> list[Item]:
        """``reached_by`` of each pattern in ``order``, each subject a
        constant or bound by the patterns before it (``anchored``)."""
        bound: dict[str, str] = {}
        items = []
        for tp in order:
            it = self.reached_by(tp, dict(bound))
            bound.update(it.cols)
            items.append(it)
        return items

    def reached_by(self, tp: A.TriplePattern, bound: dict[str, str]) -> Item:
        """The triples of G' and of ΔG's deletions matching ``tp`` whose
        subject is a constant or bound (``bound``: SQL of the variables the
        query around binds, ``tp``'s subject among them), each once with
        ``kn`` (1: in G') and ``ko`` (in G: not one of ΔG's insertions),
        read by index probes: a LATERAL subquery, fenced, binding the
        variables ``bound`` lacks."""
        a = self.alias()
        at: dict[str, str] = {}  # each new variable's first position
        same = []  # (position, what it equals; {t}: the triple's table)
        for pos, slot in zip("spo", (tp.s, tp.p, tp.o)):
            if not A.is_var(slot):
                same.append((pos, self.term(slot)))
            elif str(slot) in bound:
                same.append((pos, bound[str(slot)]))
            elif str(slot) in at:
                same.append((pos, f"{{t}}.{at[str(slot)]}"))
            else:
                at[str(slot)] = pos
        assert same[0][0] == "s", "a probe's subject is known"
        conds = {t: [f"{t}.{pos} = {v.format(t=t)}" for pos, v in same] for t in ("t", "d")}
        cols = {v: f"{a}.{pos}" for v, pos in at.items()}
        held = " AND ".join([f"t.pod_id = ANY({PODS})", *conds["t"], *self._one_per_pod("t")])
        sql = (f"LATERAL (SELECT t.p, t.o, 1 AS kn, CASE WHEN {inserted('t')} THEN 0 ELSE 1 END "
               f"AS ko FROM pod_triples t WHERE {held} UNION ALL SELECT d.p, d.o, 0, 1 FROM {DG} d "
               f"WHERE d.sign < 0 AND {' AND '.join(conds['d'])}{self.fence}) AS {a}")
        return Item(sql, cols, frozenset(cols))

    def _expr(self, e: A.Expr | None, j: Joined, iris: frozenset[str]) -> list[str]:
        if e is None:
            return []
        sql = condition(e, lambda v: j.cols.get(v), self.term, iris, spark=self.spark)
        if sql is None:
            raise NotRendered("an expression SQL does not state exactly")
        return [f"({sql}) IS TRUE"]

    def extend(self, n: P.Extend) -> str | None:
        """Extend by a variable, as the translation of aggregates makes it
        (``?k`` from ``SAMPLE(?k)``, ``?n`` from ``COUNT``): ΔP1 with ``?y``
        kept where bound, else a copy of ``?x`` (unbound where both are)."""
        assert isinstance(n.expr, A.Var)
        selects = []
        for alt in self.delta(n.child):
            j = join(alt)
            src, cols = j.cols.get(n.expr.name), dict(j.cols)
            if src is not None:
                have = cols.get(n.var)
                cols[n.var] = src if have is None else \
                    have if n.var in j.certain else f"coalesce({have}, {src})"
            selects.append(self.select(n, Joined(j.from_, j.where, cols, j.certain, j.k)))
        return self.summed(n, selects)  # two mappings may meet: one binding ?y, one ?x

    def group(self, n: P.Group) -> str | None:
        """GROUP BY variables with COUNT (of a variable or of *, DISTINCT or
        not), SUM and AVG of a variable (``sums``), MIN, MAX and SAMPLE of a
        variable (the least or greatest of the values its members bind by
        the dictionary's sort keys, ``views.sortkey``: ORDER BY's order, as
        ``views.aggregates``; SAMPLE the least, the key itself for a key):
        the groups ΔP1 touches recomputed from their members — the stored
        or matched old members of those groups and ΔP1's — their old and
        new solution each a row when they differ (counting paper §4, as
        ``views.interpret``). A DISTINCT count counts the values (the
        mappings, for *) some member has before (after) the batch: the
        members summed by their columns first (all of them, for *), each
        sum is one of those values' (a multiplicity, never below 0); so are
        a SUM's and an AVG's (presence and the type of their values are not
        linear in the rows). Their terms are looked up in the dictionary
        (``storage.terms.number_id``); one it lacks makes the statement
        change nothing and name it (``MISSING``), to be added and the
        statement run again. A group that keeps tallies (``tally``) reads
        them for the groups that have them instead of their old members."""
        keys = self._group_keys(n)
        rel = self.delta(n.child)
        if not rel:
            return None
        (d,), = rel
        col, counted, numbers, extremes = self.column, _counted(n), _numbers(n), _extremes(n)
        own, ranked = _own(n, keys)
        touched = self.alias("t")
        self.ctes.append((touched, f"SELECT DISTINCT {self._cols(keys, d.cols)} FROM {d.sql}"))
        key_cols = [col[v] for v in keys]
        table, held = self.tallies.get(n.id), aggregates(n)  # a table only where ``n.tallied``
        reread = touched  # the groups whose old members are read
        if table is not None:  # those with tallies of the epoch read them instead (note 181)
            have, reread, gone = self.alias("c"), self.alias("t"), None
            if ranked:  # the members the batch takes, with their extremes' sort keys
                gone = self.alias("q")
                taken = f"(SELECT {self._cols(own, d.cols)} FROM {d.sql} WHERE {d.k} < 0)"
                self.ctes.append((gone, ("SELECT * FROM "
                                  f"{_ranked_members(taken, [col[v] for v in ranked])} AS w")))
            self.ctes += [(have, T.cached(touched, key_cols, table, held, gone)),
                          (reread, T.missed(touched, key_cols, have))]
        parts = [f"SELECT {self._cols(own, d.cols)}, 0 AS ko, {d.k} AS kd FROM {d.sql}"]
        for alt in self.old(n.child):  # from the touched keys (joins keep their written order)
            j, x, y = join(connected([], alt, keys)), self.alias("x"), self.alias("y")
            on = [f"{j.cols[v]} = {x}.{col[v]}" if v in j.certain else
                  f"{j.cols[v]} IS NOT DISTINCT FROM {x}.{col[v]}" if v in j.cols else
                  f"{x}.{col[v]} IS NULL" for v in keys]
            cols, where = (f"{self._cols(own, j.cols)}, {j.k} AS ko, 0 AS kd",
                           " AND ".join([*on, *j.where] or ["TRUE"]))
            parts.append(f"SELECT {y}.* FROM " + self.per_key(
                f"{reread} AS {x}", f"SELECT {cols} FROM {j.from_} WHERE {where}", y)
                if self.probes(alt) else
                f"SELECT {cols} FROM {reread} AS {x} CROSS JOIN {j.from_} WHERE {where}")
        sums = self.alias("g")
        summed = _summed(n)
        results = [t for side in ("o_", "n_") for r, (fn, var) in enumerate(numbers)
                   for t in term(fn, side, summed.index(var), r)]  # SUMs' and AVGs' terms
        # from all the members, or from the tallies read and the members' changes
        grouped = self.grouped(n, parts, None if table is None else have)
        if table is not None:
            self.tally_writes.append((table, key_cols, sums, held))
        self.ctes.append((sums, f"SELECT g.*, {', '.join(results)} FROM ({grouped}) AS g"
                          if results else grouped))
        was, now = ("o_ > 0", "n_ > 0") if keys else ("TRUE", "TRUE")
        moved = " OR ".join([f"({was}) <> ({now})", *(f"o{i} <> n{i}" for i in range(len(counted))),
                             *(f"o_{x}{r} IS DISTINCT FROM n_{x}{r}" for r in range(len(numbers))
                               for x in "tl"),
                             *(f"o_r{r} IS DISTINCT FROM n_r{r}" for r in range(len(extremes)))])
        rows = self.alias("r")

        def values(side: str) -> list[str]:  # a group's counts and sums on one side
            return [*(f"{side}{i} AS c{i}" for i in range(len(counted))),
                    *(f"{side}_{x}{r} AS s{x}{r}" for r in range(len(numbers)) for x in "tl"),
                    *(f"{side}_r{r} AS e{r}" for r in range(len(extremes)))]

        self.ctes.append((rows, " UNION ALL ".join(
            f"SELECT {', '.join([*key_cols, *values(side), f'{k} AS k'])} "
            f"FROM {sums} WHERE {exists} AND ({moved})"
            for side, exists, k in (("o", was, -1), ("n", now, 1)))))
        terms = [(f"'{XSD.integer}'", f"CAST(c{i} AS text)") for i in range(len(counted))]
        terms += [(f"st{r}", f"sl{r}") for r in range(len(numbers))]
        if terms:
            self.numbers.append((rows, terms))
        out = []
        for v in sorted(shape(n).vars):
            agg = next((a for a in n.aggregates if a.var == v), None)
            if agg is None:
                out.append(f"{col[v]} AS {col[v]}")
            elif agg.fn == "COUNT":
                out.append(f"{integer_id(f'c{counted.index(_count_of(agg))}')} AS {col[v]}")
            elif agg.fn in ("SUM", "AVG"):
                assert isinstance(agg.expr, A.Var)
                r = numbers.index((agg.fn, agg.expr.name))
                out.append(f"{number_id(f'st{r}', f'sl{r}')} AS {col[v]}")
            else:  # MIN, MAX, SAMPLE: the key's id after its sort key; SAMPLE of a key: the key
                assert isinstance(agg.expr, A.Var)
                if agg.expr.name in keys and agg.fn == "SAMPLE":
                    out.append(f"{col[agg.expr.name]} AS {col[v]}")
                else:
                    r = extremes.index(_extreme(agg))
                    out.append(f"CAST(CAST('x' || right(e{r}, 16) AS bit(64)) AS bigint) AS {col[v]}")
        return f"SELECT {', '.join([*out, 'k'])} FROM {rows}"

    def grouped(self, n: P.Group, parts: Sequence[str], have: str | None,
                written: bool = False) -> str:
        """``tally.grouped`` over the group's member rows (``parts``: SELECTs
        of ``_own``'s columns, ``ko`` and ``kd``): their old and new
        aggregates' inputs, from the tallies ``have`` where given; with
        ``written``, the new tallies too (``fill``)."""
        col, counted, summed, keys = self.column, _counted(n), _summed(n), self._group_keys(n)
        own, ranked = _own(n, keys)
        members = self.alias("m")
        body = " UNION ALL ".join(parts)
        if summed or ranked or any(distinct for _, distinct in counted):
            cols = ", ".join(col[v] for v in own)
            body = (f"SELECT {cols}, sum(ko) AS ko, sum(kd) AS kd FROM ({body}) AS u"
                    + (f" GROUP BY {cols}" if own else ""))
        self.ctes.append((members, body))
        source = members
        if ranked:
            source = _ranked_members(members, [col[v] for v in ranked])
        if summed:
            source = sums_members(source, [col[v] for v in summed])
        elif ranked:
            source += " AS w"
        counts = [("*" if v is None else f"DISTINCT {col[v]}", True) if distinct else
                  ("TRUE" if v is None else f"{col[v]} IS NOT NULL", False)
                  for v, distinct in counted]
        return T.grouped(source, [col[v] for v in keys], have, counts, aggregates(n), written)

    def fill(self, n: P.Group, table: str) -> str:
        """The statement writing every group's tallies (``n.tallied``) into
        ``table`` from its members as they are (the graph with ΔG empty),
        stamped with the epoch the job's close moves to (``tally.filled``)."""
        keys = self._group_keys(n)
        own, _ = _own(n, keys)
        parts = []
        for alt in self.old(n.child):
            j = join(connected([], alt, keys))
            parts.append(f"SELECT {self._cols(own, j.cols)}, {j.k} AS ko, 0 AS kd "
                         f"FROM {j.from_}" + (f" WHERE {' AND '.join(j.where)}" if j.where else ""))
        sums = self.grouped(n, parts, None, written=True)
        ctes = ", ".join(f"{c} AS ({b})" for c, b in self.ctes)
        self.ctes = []
        return f"WITH {ctes} " + T.filled(table, [self.column[v] for v in keys], sums,
                                          aggregates(n))

    def _group_keys(self, n: P.Group) -> list[str]:
        """The group's key variables (a key that is an expression, or an
        aggregate other than COUNT, SUM or AVG, MIN, MAX or SAMPLE of a
        variable, does not render)."""
        keys = [e.name for e in n.keys if isinstance(e, A.Var)]
        if len(keys) != len(n.keys):
            raise NotRendered("a GROUP BY expression")
        if len(set(keys)) != len(keys):
            raise NotRendered("a variable grouped by twice")
        for a in n.aggregates:
            if not ((a.fn == "COUNT" and (isinstance(a.expr, A.Var) or a.expr is None))
                    or (a.fn in ("SUM", "AVG") and isinstance(a.expr, A.Var) and not a.distinct)
                    or (a.fn in ("MIN", "MAX", "SAMPLE") and isinstance(a.expr, A.Var))):
                raise NotRendered(f"the aggregate {'DISTINCT ' if a.distinct else ''}{a.fn}"
                                  + (" of *" if a.expr is None else ""))
        return keys

    def join_rule(self, n: P.Join) -> str | None:
        """ΔP1⋈ΔP2 + ΔP1⋈P2 + P1⋈ΔP2 (Theorem 4.5), with the OPTIONAL's
        filter on μ1 ∪ μ2."""
        iris = shape(n).iris
        dl, dr = self.delta(n.left), self.delta(n.right)
        selects = []
        for first, rest in ((dl, dr), (dl, self.old(n.right)), (dr, self.old(n.left))):
            for fa in first:
                for ra in rest:
                    j = join(connected(fa, ra))
                    selects.append(self.select(n, j, self._expr(n.expr, j, iris)))
        return self.summed(n, selects)

    def filter(self, n: P.Filter) -> str | None:
        iris = shape(n.child).iris
        selects = []
        for alt in self.delta(n.child):
            j = join(alt)
            selects.append(self.select(n, j, self._expr(n.expr, j, iris)))
        return " UNION ALL ".join(selects) or None

    def exists_filter(self, n: P.Filter) -> str | None:
        """FILTER [NOT] EXISTS { BGP [FILTER] } (SPARQL 1.1 §18.6: the pattern
        under each mapping's bindings): a mapping's value can change only
        when ΔG matches one of the pattern's triples under it. The candidates
        are Δchild's mappings and the stored child's compatible with such a
        match; each is decided on G and on G' (its old and new count kept
        where the EXISTS holds as asked)."""
        e, (bgp, inner) = n.expr, exists_of(n.expr)  # type: ignore[misc]
        assert isinstance(e, A.Exists)
        names = sorted(shape(n).vars)
        dc = self.delta(n.child)
        parts = [f"SELECT {self._cols(names, d.cols)} FROM {d.sql}" for d, in dc]
        k = self.known
        for tp in bgp.triples:
            if not (k.changed(tp.p, k.inserted) or k.changed(tp.p, k.deleted)):
                continue  # no triple of ΔG matches it
            for alt in self.old(n.child):
                own = join(alt).cols
                j = join(connected([self.triple(tp, "delta")], alt))
                parts.append(f"SELECT {self._cols(names, own)} FROM {j.from_}"
                             + (f" WHERE {' AND '.join(j.where)}" if j.where else ""))
        if not parts:
            return None
        cands = self.alias("m")
        self.ctes.append((cands, candidates(parts)))
        m = self._cte_item(cands, shape(n).vars, shape(n).certain)
        joins: list[str] = []
        was = self.lookup(self.old(n.child), m)
        now = f"{was} + {self.joined(n.child, m, joins)}"
        iris = joined_iris(shape(n.child), shape(P.Scan(triples=bgp.triples)))
        holds = [self._exists(bgp, inner, m, source, iris, e.negated) for source in ("new", "old")]
        cols = [self.column[v] for v in names]
        inner_cols = [*(f"{m.cols[v]} AS {self.column[v]}" for v in names),
                      f"CASE WHEN {holds[0]} THEN {now} ELSE 0 END AS kn",
                      f"CASE WHEN {holds[1]} THEN {was} ELSE 0 END AS ko"]
        return (f"SELECT {', '.join([*cols, 'kn - ko AS k'])} FROM (SELECT "
                f"{', '.join(inner_cols)} FROM {m.sql}{''.join(joins)}{self.fence}) AS x "
                "WHERE kn <> ko")

    def _exists(self, bgp: A.BGP, inner: A.Expr | None, m: Item, source: str,
                iris: frozenset[str], negated: bool) -> str:
        """Whether the pattern has a solution under ``m``'s bindings on G
        (``source`` "old") or G' ("new"), negated for NOT EXISTS."""
        items = [self.triple(tp, source) for tp in bgp.triples]
        j = join(connected([], items, m.cols), outer=m)
        where = [*j.where, *self._expr(inner, j, iris)]
        test = f"EXISTS (SELECT 1 FROM {j.from_}" + \
            (f" WHERE {' AND '.join(where)}" if where else "") \
            + f"{self.fence if self.probes(items) else ''})"  # the fence: never hashed whole
        return f"NOT {test}" if negated else test

    def distinct(self, n: P.Distinct) -> str | None:
        """A mapping enters or leaves with its support."""
        rel = self.delta(n.child)
        if not rel:
            return None
        (d,), = rel
        names = sorted(shape(n).vars)
        was = self.lookup(self.old(n.child), d)
        inner = [f"{d.cols[v]} AS {self.column[v]}" for v in names]
        outer = [self.column[v] for v in names]
        return (f"SELECT {', '.join([*outer, 'CASE WHEN w > 0 THEN -1 ELSE 1 END AS k'])} "
                f"FROM (SELECT {', '.join([*inner, f'{d.k} AS dk', f'{was} AS w'])} "
                f"FROM {d.sql}{self.fence}) AS x WHERE (w > 0) <> (w + dk > 0)")

    def diff(self, n: P.Diff) -> str | None:
        """Theorem 4.6: the left mappings that may change are those of ΔP1
        and those compatible with a right mapping whose support changed
        (ΔS̄); each is re-decided against the right's new support."""
        names = sorted(shape(n).vars)
        iris = joined_iris(shape(n.left), shape(n.right))  # of μ1 ∪ μ2
        dl_rel, dr_rel = self.delta(n.left), self.delta(n.right)
        if not dl_rel and not dr_rel:
            return None
        parts = [f"SELECT {self._cols(names, dl.cols)} FROM {dl.sql}" for dl, in dl_rel]
        for dr, in dr_rel:
            changed = self.alias("c")
            rnames = sorted(shape(n.right).vars)
            was = self.lookup(self.old(n.right), dr)
            outer = ", ".join(self.column[v] for v in rnames) or "unit_"
            self.ctes.append((changed, (
                f"SELECT {outer} FROM (SELECT "
                f"{', '.join([self._cols(rnames, dr.cols), f'{dr.k} AS dk', f'{was} AS w'])} "
                f"FROM {dr.sql}{self.fence}) AS x WHERE (w = 0) <> (w + dk = 0)")))
            self.once.add(changed)
            c = self._cte_item(changed, shape(n.right).vars, shape(n.right).certain)
            for alt in self.old(n.left):
                own = join(alt).cols
                j = join(connected([c], alt))
                where = [*j.where, *self._shares(n, own, c.cols)]
                parts.append(f"SELECT {self._cols(names, own)} FROM {j.from_}"
                             + (f" WHERE {' AND '.join(where)}" if where else ""))
        cands = self.alias("m")
        self.ctes.append((cands, candidates(parts)))
        m = self._cte_item(cands, shape(n).vars, shape(n).certain)
        joins: list[str] = []
        kl = f"{self.lookup(self.old(n.left), m)} + {self.joined(n.left, m, joins)}"
        kout = self.lookup(self.old(n), m)
        blocked = [self._blocked(n, alt, cands, m, iris, joins,
                                 lambda own, js: self.joined(n.right, own, js), "<> 0")
                   for alt in self.old(n.right)]
        blocked += [self._blocked(n, alt, cands, m, iris, joins,
                                  lambda own, _: self.lookup(self.old(n.right), own), "= 0",
                                  with_k=False) for alt in dr_rel]
        blocks = " OR ".join(blocked) or "FALSE"
        cols = [self.column[v] for v in names]
        inner = [*(f"{m.cols[v]} AS {self.column[v]}" for v in names), f"{kl} AS kl",
                 f"{kout} AS kout", f"({blocks}) AS blocked"]
        kept = "CASE WHEN kl <> 0 AND NOT blocked THEN kl ELSE 0 END"
        return (f"SELECT {', '.join([*cols, 'kept - kout AS k'])} FROM (SELECT "
                f"{', '.join([*cols, f'{kept} AS kept', 'kout'])} FROM (SELECT "
                f"{', '.join(inner)} FROM {m.sql}{''.join(joins)}{self.fence}) AS y) AS x "
                "WHERE kept <> kout")

    def _blocks(self, n: P.Diff, alt: Alt, m: Item, iris: frozenset[str],
                k: Callable[[Item, list[str]], str], test: str, with_k: bool = True) -> str:
        """Some row of ``alt`` compatible with ``m`` blocks it (shares a
        variable, for MINUS; satisfies the OPTIONAL's filter on μ1 ∪ μ2) and
        is in the right's new support (``k`` of the row, given as a probe
        and the joins it may add, then ``test``): an EXISTS per candidate,
        as Spark runs it (Postgres: ``_blocked``)."""
        own = join(alt)
        j = join(alt, outer=m)
        joins: list[str] = []
        where = [*j.where, *self._shares(n, m.cols, own.cols),
                 *self._expr(n.expr, j, iris), f"{_support(own, k, joins, with_k)} {test}"]
        return f"EXISTS (SELECT 1 FROM {j.from_}{''.join(joins)} WHERE {' AND '.join(where)})"

    def _blocked(self, n: P.Diff, alt: Alt, cands: str, m: Item, iris: frozenset[str],
                 joins: list[str], k: Callable[[Item, list[str]], str], test: str,
                 with_k: bool = True) -> str:
        """Whether some row of ``alt`` blocks ``m``, as ``_blocks`` decides
        it. On Postgres, the candidates ``alt``'s rows block are found once,
        by a join (a CTE), and the candidates' query LEFT JOINs them (added
        to ``joins``): an EXISTS per candidate read the right's
        delta (a CTE, no index) once per candidate and row (design note
        156). The support test sits above the join (a fence): Postgres,
        taking it for true of one row in 200, joined each of those rows to
        every candidate."""
        if self.spark:
            return self._blocks(n, alt, m, iris, k, test, with_k)
        s, own = shape(n), join(alt)
        probe = self._cte_item(cands, s.vars, s.certain)
        probed = self.probes(alt)
        j = join(alt, outer=probe) if probed else join([probe, *alt])
        where = [*j.where, *self._shares(n, probe.cols, own.cols), *self._expr(n.expr, j, iris)]
        from_, row = j.from_, own
        if probed:  # alt's rows read per candidate, their columns named apart
            rvars, y = sorted(own.cols), self.alias("y")
            from_ = self.per_key(probe.sql, f"SELECT {self._cols(rvars, own.cols)}, {own.k} AS "
                                 f"k_ FROM {j.from_} WHERE {' AND '.join(where) or 'TRUE'}", y)
            row, where = Joined("", [], {v: f"{y}.{self.column[v]}" for v in rvars},
                                own.certain, f"{y}.k_"), []
        inner: list[str] = []
        support = _support(row, k, inner, with_k)
        names = sorted(s.vars)
        hits = self.alias("b")
        self.once.add(hits)
        self.ctes.append((hits, (
            f"SELECT DISTINCT {', '.join(self.column[v] for v in names) or 'unit_'}, TRUE AS hit "
            f"FROM (SELECT {self._cols(names, probe.cols)}, "
            f"{support} AS w FROM {from_}{''.join(inner)}"
            + (f" WHERE {' AND '.join(where)}" if where else "") + f"{self.fence}) AS x "
            f"WHERE w {test}")))
        a = self.alias("x")
        _left_join(self._cte_item(hits, s.vars, s.certain, a), m, joins)
        return f"{a}.hit IS NOT NULL"

    def _shares(self, n: P.Diff, left: dict[str, str], right: dict[str, str]) -> list[str]:
        """MINUS removes only mappings sharing a variable (other than a
        pushed-down GRAPH variable) with the right one (SPARQL 1.1 §18.5)."""
        if not n.minus:
            return []
        shared = sorted((left.keys() & right.keys()) - {n.graph_var})
        if not shared:
            return ["FALSE"]
        return ["(" + " OR ".join(f"({left[v]} IS NOT NULL AND {right[v]} IS NOT NULL)"
                                  for v in shared) + ")"]

    def _cols(self, names: Sequence[str], cols: dict[str, str]) -> str:
        return ", ".join(f"{cols.get(v, NULL)} AS {self.column[v]}" for v in names) \
            or "1 AS unit_"

    def _cte_item(self, cte: str, vars_: frozenset[str], certain: frozenset[str],
                  a: str | None = None) -> Item:
        a = a or self.alias("x")
        return Item(f"{cte} AS {a}", {v: f"{a}.{self.column[v]}" for v in sorted(vars_)},
                    certain)


def _support(own: Joined, k: Callable[[Item, list[str]], str], joins: list[str],
             with_k: bool) -> str:
    """A right row's annotation in the right's new support: its own k plus
    its change (``k`` of the row as a probe, which may add to ``joins``),
    or the value ``k`` gives alone (``with_k`` False)."""
    dk = k(Item("", own.cols, own.certain, own.k), joins)
    return f"{own.k} + {dk}" if with_k else dk


def _left_join(item: Item, outer: Item, joins: list[str]) -> bool:
    """``item``'s rows holding exactly ``outer``'s mapping, LEFT JOINed
    (added to ``joins``) by equalities a hash join can take (``_matching``);
    False, and no join, where no row can."""
    on = _matching(item.cols, item.certain, outer, hashable=True)
    if on is not None:
        joins.append(f" LEFT JOIN {item.sql} ON {' AND '.join(on) or 'TRUE'}")
    return on is not None


def _matching(cols: dict[str, str], certain: frozenset[str], outer: Item,
              hashable: bool = False) -> list[str] | None:
    """The conditions under which a row binding ``cols`` (``certain``:
    bound in every row) holds exactly ``outer``'s mapping: equal where both
    bind a variable, unbound where only one may (None: never, one side
    binding it for sure). ``hashable`` states "both unbound or equal" as
    an equality of the ids with 0 for unbound, which a hash join can take."""
    where = []
    for v in sorted(outer.cols.keys() | cols.keys()):
        if v not in outer.cols:  # bound by the row only: unbound in the match
            if v in certain:
                return None
            where.append(f"{cols[v]} IS NULL")
            continue
        c = outer.cols[v]
        if v in cols and (v in certain or v in outer.certain):
            where.append(f"{cols[v]} = {c}")
        elif v in cols:
            where.append(f"{T.key_id(cols[v])} = {T.key_id(c)}" if hashable
                         else f"{cols[v]} IS NOT DISTINCT FROM {c}")
        elif v not in outer.certain:
            where.append(f"{c} IS NULL")
        else:
            return None
    return where


def _extreme(a: A.Aggregate) -> tuple[str, str]:
    """A MIN, MAX or SAMPLE of a variable as the extreme it takes: SAMPLE is
    the MIN (``views.aggregates``)."""
    assert isinstance(a.expr, A.Var)
    return "MAX" if a.fn == "MAX" else "MIN", a.expr.name


def _ranked_members(members: str, columns: list[str]) -> str:
    """A FROM item (to alias): the group's ``members`` with, for each
    column ``j`` a MIN, MAX or SAMPLE reads, ``hj``: its term's sort key
    (``pv_sort_key``, migration 0029) and then its id (8 bytes), in hex —
    text compares bytewise (``COLLATE "C"``) where Postgres has no ``min``
    of bytea; the key is one term's alone, so the id after it changes no
    order and is read back from the last 16 digits. NULL where the column is unbound. Each key is a
    subquery by id, never a join: the members' estimate can be off by
    1,000× (58,608 rows planned for 59 on bsbm-1000's MIN/MAX view), and a
    join then hashed the whole dictionary, twice (note 160)."""
    keys = ", ".join(f"encode((SELECT pv_sort_key(q) FROM terms AS q WHERE q.id = m.{c}) "
                     f"|| int8send(m.{c}), 'hex') AS h{j}" for j, c in enumerate(columns))
    return f"(SELECT m.*, {keys} FROM {members} AS m)"


def partition(nodes: Sequence[P.Node]) -> str | None:
    """A variable that every triple pattern of ``nodes`` (a plan's, or those
    its Spark program computes) binds and that every join and difference
    has bound on both sides: a batch then changes only mappings whose
    value of it ΔG's triples give (its keys), and every read of the graph
    is by those keys (``reach``). None where there is none, or an EXISTS
    reads the graph by keys of its own."""
    patterns = [tp for n in nodes if isinstance(n, P.Scan) for tp in n.triples]
    ranked = _shared(patterns)
    shared = set(ranked)
    for n in nodes:
        e = getattr(n, "expr", None)
        if e is not None and A.has_exists(e):
            return None
        if isinstance(n, (P.Join, P.Diff)):
            shared &= shape(n.left).certain & shape(n.right).certain
    return next((v for v in ranked if v in shared), None)


def hub(triples: Sequence[A.TriplePattern]) -> str | None:
    """A star's centre: a variable every one of ``triples`` (two or more)
    binds (``_shared``'s first); None if none."""
    return next(iter(_shared(triples)), None) if len(triples) > 1 else None


def net(items: Sequence[Item]) -> str:
    """A star's mapping's annotation from its triples' rows (``kn``: in G',
    ``ko``: in G, each item's last word its alias): Π kn − Π ko."""
    return f"({product(items, 'kn')} - {product(items, 'ko')})"


def product(items: Sequence[Item], column: str) -> str:
    """The product of ``column`` over the items' rows (each item's last word
    its alias: "pv_reach AS t7")."""
    return " * ".join(f"{it.sql.rsplit(' ', 1)[1]}.{column}" for it in items)


def inserted(a: str) -> str:
    """Whether the triple of the row ``a`` is one of ΔG's insertions: in G'
    and not in G."""
    return (f"EXISTS (SELECT 1 FROM {DG} d WHERE d.sign > 0 AND d.s = {a}.s AND d.p = {a}.p "
            f"AND d.o = {a}.o)")


def anchored(triples: Sequence[A.TriplePattern], least: int = 2
             ) -> list[A.TriplePattern] | None:
    """The patterns of a BGP (``least`` or more of the default graph, each
    with a constant predicate) in an order where each one's subject is a
    constant or a variable an earlier one binds: all of its mappings are
    reached from its constant subjects, each step by a subject's own
    triples (few, as a star's keys' are); None if there is none."""
    if len(triples) < least or any(A.is_var(tp.p) or tp.g is not None for tp in triples):
        return None
    order: list[A.TriplePattern] = []
    bound: set[str] = set()
    todo = list(triples)
    while todo:
        step = next((tp for tp in todo if not A.is_var(tp.s) or str(tp.s) in bound), None)
        if step is None:
            return None
        todo.remove(step)
        order.append(step)
        bound |= {str(x) for x in (step.s, step.o) if A.is_var(x)}
    return order


def anchors(nodes: Sequence[P.Node]) -> list[list[A.TriplePattern]] | None:
    """Each BGP of ``nodes`` (as ``partition``'s) in ``anchored``'s order,
    where every one (a single pattern too) is reached from constant subjects and no EXISTS
    reads the graph by keys of its own: every mapping of every node, in G
    and in G', is then made of the triples those chains reach (``reach``),
    few whatever the data (BSBM's Q2, one product's neighbourhood). None
    where a BGP is not."""
    orders = []
    for n in nodes:
        e = getattr(n, "expr", None)
        if e is not None and A.has_exists(e):
            return None
        if isinstance(n, P.Scan) and n.triples:
            order = anchored(n.triples, least=1)
            if order is None:
                return None
            orders.append(order)
    return orders or None


MAX_SEEDED = 6  # the most patterns of a BGP read from ΔG's triples (a CTE per pattern, per pattern)


def seeded(nodes: Sequence[P.Node]) -> list[A.TriplePattern] | None:
    """The patterns of the one BGP of ``nodes`` (as ``partition``'s) where
    nothing else of them reads the graph — no other BGP, no join, union
    or difference, no EXISTS — and the BGP is connected (two to
    ``MAX_SEEDED`` patterns of the default graph, each with a constant
    predicate, each sharing a variable with another): every mapping a
    batch changes holds a triple of ΔG, and each of its other triples is
    reached from that one through the BGP's joins (``_seeded``); the path
    view's and SUM's BGPs, which share no variable among all their
    patterns (``partition``). None where there is none."""
    scans = [n for n in nodes if isinstance(n, P.Scan) and n.triples]
    if len(scans) != 1 or not all(isinstance(n, P.Scan | P.Filter | P.Project | P.Extend
                                             | P.Distinct) for n in nodes):
        return None
    if any(A.has_exists(e) for n in nodes if (e := getattr(n, "expr", None)) is not None):
        return None
    triples = list(scans[0].triples)
    if not 2 <= len(triples) <= MAX_SEEDED or \
            any(A.is_var(tp.p) or tp.g is not None for tp in triples):
        return None
    bound, todo = _vars(triples[0]), triples[1:]
    while (step := next((tp for tp in todo if _vars(tp) & bound), None)) is not None:
        todo.remove(step)
        bound |= _vars(step)
    return None if todo else triples


def _vars(tp: A.TriplePattern) -> set[str]:
    return {str(x) for x in (tp.s, tp.o) if A.is_var(x)}


def subject_hub(triples: Sequence[A.TriplePattern]) -> str | None:
    """A star's centre that is the subject of every one of ``triples``
    (two or more), each with a constant predicate: the graph's key and
    ΔG's lead with (subject, predicate) or (predicate, subject), so each
    pattern is read by probes per key (``Renderer.star_scan``); None if
    none."""
    centre = hub(triples)  # a variable every pattern has as subject comes first
    ok = centre is not None and all(tp.s == centre and not A.is_var(tp.p) for tp in triples)
    return centre if ok else None


def _shared(patterns: Sequence[A.TriplePattern]) -> list[str]:
    """The variables every pattern binds, best keys first: subjects before
    objects, predicates last (a predicate's value reaches every triple
    with it)."""
    if not patterns:
        return []
    common = set.intersection(*({x for x in (tp.s, tp.p, tp.o) if A.is_var(x)}
                                for tp in patterns))
    return sorted(common, key=lambda v: (sum(tp.p == v for tp in patterns),  # type: ignore[arg-type]
                                         -sum(tp.s == v for tp in patterns), v))


def reach(r: Renderer) -> str | None:
    """Postgres's query of ``pv_reach`` for ``r``'s program (None: it reads
    none; with ``whole`` it reads the pods' triples too): the pods'
    triples, each once, that a read pattern holds with its centre's
    value one of the keys, ``kn`` 1 and ``ko`` whether G held it (0 for
    ΔG's insertions), and ΔG's deletions (``kn`` 0, ``ko`` 1) — a
    semi-join over the staged ΔG, in the job's snapshot. A triple reached
    whose centre's value no triple of ΔG gives is in G and G' alike: every
    mapping it joins is 1 − 1, dropped."""
    if not r.reaching:
        return None
    if r.anchors is not None:
        return _chained(r, r.anchors)
    if r.seeded is not None:
        return _seeded(r, r.seeded)
    keys = candidates(r.keys) if r.keys else f"SELECT {NULL} AS h"
    parts = []
    for centre, tp in dict.fromkeys(r.reached):
        slots = list(zip("spo", (tp.s, tp.p, tp.o)))
        at = next(pos for pos, x in slots if x == centre)
        conds = [f"t.pod_id = ANY({PODS})", f"t.{at} IN (SELECT h FROM keys)",
                 *(f"t.{pos} = {r.term(x)}" for pos, x in slots if not A.is_var(x))]
        parts.append(f"SELECT t.s, t.p, t.o FROM pod_triples t WHERE {' AND '.join(conds)}")
    reached = candidates(parts) if parts else "SELECT s, p, o FROM pod_triples WHERE false"
    return _reach_rows([f"keys AS ({keys})"], reached)


def _reach_rows(ctes: Sequence[str], reached: str, gone: str | None = None) -> str:
    """``pv_reach``'s rows: the pods' triples ``reached`` selects (after
    ``ctes``), each with ``kn`` 1 and ``ko`` whether G held it, and ΔG's
    deletions ``gone`` selects (``kn`` 0, ``ko`` 1; None: every one)."""
    gone = gone or f"SELECT d.s, d.p, d.o FROM {DG} d WHERE d.sign < 0"
    return (f"WITH {', '.join(ctes)} SELECT g.s, g.p, g.o, 1 AS kn, CASE WHEN {inserted('g')} "
            f"THEN 0 ELSE 1 END AS ko FROM ({reached}) AS g UNION ALL "
            f"SELECT e.s, e.p, e.o, 0, 1 FROM ({gone}) AS e")


def _chained(r: Renderer, orders: Sequence[Sequence[A.TriplePattern]]) -> str:
    """``reach``'s query for a plan whose BGPs are reached from constant
    subjects (``anchors``): each pattern's triples of G' and of ΔG's
    deletions whose subject is its constant or a value the pattern before
    that binds it gave (``_step``); every mapping of a BGP, in G or G', is
    made of them."""
    ctes: list[str] = []
    for order in orders:
        bound: dict[str, str] = {}  # a variable: the CTE and column that first bind it
        for tp in order:
            _step(r, tp, bound, ctes)
    return _reached_rows(ctes)


def _seeded(r: Renderer, triples: Sequence[A.TriplePattern]) -> str:
    """``reach``'s query for a plan whose one BGP is reached from ΔG's
    triples (``seeded``): for each pattern, ΔG's triples matching it (a
    seed), then each other pattern's triples of G' and of ΔG's deletions
    whose subject or object is a value a pattern reached before it (from
    the seed on, along the BGP's joins) gave that variable (``_step``):
    every mapping of the BGP holding a triple of ΔG, in G or G', is made
    of them."""
    ctes: list[str] = []
    for seed in triples:
        c = f"c{len(ctes)}"
        ctes.append(f"{c} AS (SELECT d.s, d.p, d.o, d.sign > 0 AS held FROM {DG} d WHERE "
                    + " AND ".join(_matching_slots(r, seed, "d", {})) + ")")
        bound = {str(x): f"{pos} FROM {c}" for pos, x in (("s", seed.s), ("o", seed.o))
                 if A.is_var(x)}
        todo = [tp for tp in triples if tp is not seed]
        while todo:
            tp = next(tp for tp in todo if _vars(tp) & set(bound))
            todo.remove(tp)
            _step(r, tp, bound, ctes)
    return _reached_rows(ctes)


def _reached_rows(ctes: Sequence[str]) -> str:
    """``pv_reach``'s rows from the CTEs of ``_step`` (``c0``, ``c1`` …,
    each row ``held`` in G' or one of ΔG's deletions): the triples of G'
    and the deletions they reached, no other — so a batch whose triples
    none of them reaches gives no row with ``kn`` ≠ ``ko`` (``Program.closed``)."""
    names = [f"c{i}" for i in range(len(ctes))]
    return _reach_rows(ctes, candidates([f"SELECT s, p, o FROM {c} WHERE held" for c in names]),
                       candidates([f"SELECT s, p, o FROM {c} WHERE NOT held" for c in names]))


def _step(r: Renderer, tp: A.TriplePattern, bound: dict[str, str], ctes: list[str]) -> None:
    """A CTE of ``tp``'s triples of G' and of ΔG's deletions (``held``
    whether G' holds it) matching its constants and, for the first of its
    variables ``bound`` names, one of the values reached for it, read by
    index; added to ``ctes``, and the variables it binds first to
    ``bound``."""
    c = f"c{len(ctes)}"
    held, deleted = (" AND ".join(_matching_slots(r, tp, t, bound)) for t in "td")
    ctes.append(f"{c} AS (SELECT t.s, t.p, t.o, true AS held FROM pod_triples t WHERE "
                f"t.pod_id = ANY({PODS}) AND {held} UNION ALL SELECT d.s, d.p, d.o, "
                f"false FROM {DG} d WHERE d.sign < 0 AND {deleted})")
    for pos, x in (("s", tp.s), ("o", tp.o)):
        if A.is_var(x):
            bound.setdefault(str(x), f"{pos} FROM {c}")


def _matching_slots(r: Renderer, tp: A.TriplePattern, t: str, bound: Mapping[str, str]
                    ) -> list[str]:
    """The conditions on the row ``t`` of a triple matching ``tp``: its
    constants, and for the first of its variables ``bound`` names (a
    reached CTE's column), that the row's value is one of that column's."""
    conds = [f"{t}.{pos} = {r.term(x)}" for pos, x in zip("spo", (tp.s, tp.p, tp.o))
             if not A.is_var(x)]
    joined = next(((pos, bound[str(x)]) for pos, x in (("s", tp.s), ("o", tp.o))
                   if A.is_var(x) and str(x) in bound), None)
    if joined is not None:
        conds.append(f"{t}.{joined[0]} IN (SELECT {joined[1]})")
    return conds


def summing(plan: P.Plan) -> set[str]:
    """The nodes whose delta must be one row per mapping: the stored ones
    (a K-relation takes one change per key) and those a rule reads mapping
    by mapping (a join's sides, DISTINCT's, a group's, a difference's, an
    EXISTS's input). A projection, a union or a map by a variable sums its
    children's rows into its own when it must; a filter passes its child's
    on as they are, summed if it must be: summing below them too only
    sorts the same rows twice (the path view's 23,536-row join delta on
    bsbm-100: its sorts and groups 28 → 9 ms of a re-insert's ~90, note 148)."""
    need = {n.id for n in plan.nodes if n is plan.root or plan.stored(n)}
    for n in reversed(plan.nodes):  # parents before their children
        for c in n.children:
            if isinstance(n, P.Project | P.Union) or (
                    isinstance(n, P.Extend) and isinstance(n.expr, A.Var)):
                continue
            if isinstance(n, P.Filter) and not A.has_exists(n.expr) and n.id not in need:
                continue
            need.add(c.id)
    return need


def candidates(parts: Sequence[str]) -> str:
    """The rows the selects ``parts`` name, each once: UNION removes
    duplicates only between two selects, and one select alone (a batch that
    changes one side only) repeats a row that several changed rows match
    (W3C negation/subset-03: two right mappings of one left one, whose ΔQ then
    held it twice; a probed star's keys, two triples of ΔG at one centre
    under its one changed pattern, which counted the centre's mappings twice:
    design note 191)."""
    if len(parts) == 1:
        return f"SELECT DISTINCT * FROM ({parts[0]}) AS u"
    return " UNION ".join(parts)


def _counted(n: P.Group) -> list[tuple[str | None, bool]]:
    """What the group's COUNTs count, each once: a variable or None (*),
    and whether DISTINCT."""
    return list(dict.fromkeys(_count_of(a) for a in n.aggregates if a.fn == "COUNT"))


def _numbers(n: P.Group) -> list[tuple[str, str]]:
    """The group's SUMs and AVGs (of a variable), each once."""
    return list(dict.fromkeys((a.fn, a.expr.name) for a in n.aggregates
                              if a.fn in ("SUM", "AVG") and isinstance(a.expr, A.Var)))


def _extremes(n: P.Group) -> list[tuple[str, str]]:
    """The group's MINs and MAXes (of a variable), each once; a SAMPLE
    is the MIN (as ``views.aggregates``) unless of a key."""
    keys = {e.name for e in n.keys if isinstance(e, A.Var)}
    return list(dict.fromkeys(_extreme(a) for a in n.aggregates
                              if a.fn in ("MIN", "MAX", "SAMPLE") and isinstance(a.expr, A.Var)
                              and not (a.fn == "SAMPLE" and a.expr.name in keys)))


def _own(n: P.Group, keys: Sequence[str]) -> tuple[list[str], list[str]]:
    """The variables a group's members are read with (its keys, what its
    COUNTs, SUMs, AVGs and extremes read; every one for a COUNT(DISTINCT *),
    whose members are whole mappings), and those its extremes read."""
    counted = _counted(n)
    ranked = list(dict.fromkeys(v for _, v in _extremes(n)))
    if (None, True) in counted:
        return sorted(shape(n.child).vars), ranked
    return sorted(set(keys) | {v for v, _ in counted if v is not None} | set(_summed(n))
                  | set(ranked)), ranked


def aggregates(n: P.Group) -> T.Aggregates:
    """What the group's tallies hold (``tally``)."""
    extremes = _extremes(n)
    ranked = list(dict.fromkeys(v for _, v in extremes))
    return T.Aggregates(len(_counted(n)), len(_summed(n)),
                        tuple(("max" if fn == "MAX" else "min", ranked.index(v))
                              for fn, v in extremes))


def _summed(n: P.Group) -> list[str]:
    """The variables the group's SUMs and AVGs read, each once."""
    return list(dict.fromkeys(v for _, v in _numbers(n)))


def _count_of(a: A.Aggregate) -> tuple[str | None, bool]:
    """What a COUNT counts: its variable (None: *), and whether DISTINCT."""
    return (a.expr.name if isinstance(a.expr, A.Var) else None), a.distinct


MISSING = "pv_missing"  # the numbers whose terms the dictionary lacks (the statement's CTE)


# --------------------------------------------------------------- program


def unrendered(plan: P.Plan, spark: bool = False) -> str | None:
    """Why the plan's delta program does not render (to Spark SQL with
    ``spark``): the first node that does not; None when it does."""
    try:
        _rendered(plan, spark)
    except NotRendered as e:
        return str(e)
    return None


def reaches(plan: P.Plan) -> bool:
    """Whether the plan's Spark program reads the graph only by its batch's
    keys (``reach``), not every triple of its predicates (False where it
    does not render there)."""
    try:
        return not _rendered(plan, spark=True).whole
    except NotRendered:
        return False


def reads(plan: P.Plan) -> str:
    """What the plan's program on Spark reads of the graph, in words, for
    the view's placement: by its batch's keys (``partition``, ``hub``:
    note 175) or every triple of its predicates; and what it leaves to
    Postgres (``deferred``)."""
    r = _rendered(plan, spark=True)
    later = ("; its groups, and the nodes above them, computed by Postgres from the rows "
             "Spark gives their inputs" if r.later else "")
    return _read(r) + later


def _read(r: Renderer) -> str:
    """What ``r``'s program reads of the graph, in words (``reads``)."""
    if not r.reaching and not r.whole:
        return "reading ΔG's triples only"
    if r.evaluates:
        reached = ("what its constant subjects reach" if r.centre is None
                   else f"the triples the values ΔG gives ?{r.centre} reach")
        return f"the plan evaluated in G and in G' over {reached}, no stored row read"
    if r.centre is not None:
        return (f"every read of the graph by the values ΔG gives ?{r.centre}, "
                "of the triples they reach")
    if r.anchors is not None:
        return "every read of the graph by what its constant subjects reach"
    if r.seeded is not None:
        return "every read of the graph by what ΔG's triples reach through its BGP's joins"
    if not r.reached:  # no star
        return "reading every triple of its predicates"
    return ("each BGP that is a star re-evaluated on the values ΔG gives its centre, "
            + ("of the triples they reach" if not r.whole
               else "the other reads over every triple of its predicates"))


def _rendered(plan: P.Plan, spark: bool) -> Renderer:
    """The plan's program rendered over stand-in tables, every predicate
    taken as changed (``NotRendered`` where a node does not render)."""
    if spark:
        return _spark_program(plan, stand_ins(plan), 1, Known({}))[0]
    r = Renderer(plan, stand_ins(plan), 1, Known({}))
    _program(r)
    return r


def stand_ins(plan: P.Plan) -> dict[str, NodeTables]:
    """Tables for every schema of every stored node, named only to render
    the plan (what it would read and whether it renders)."""
    return {n: {s: (f"t{i}", sorted(s)) for i, s in enumerate(schemas)}
            for n, schemas in schemas_needed(plan).items()}


def tallied(plan: P.Plan) -> dict[str, tuple[int, list[tuple[str, str]]]]:
    """The plan's groups that keep tallies (``Group.tallied``), by node: the
    number of their keys and their tally columns."""
    return {n.id: (len(n.keys), T.layout(aggregates(n)))
            for n in plan.nodes if isinstance(n, P.Group) and n.tallied}


def schemas_needed(plan: P.Plan) -> dict[str, list[Schema]]:
    """The tables a rendered plan writes: every possible schema of every
    stored node."""
    return {n.id: sorted(shape(n).schemas, key=sorted) for n in plan.nodes if plan.stored(n)}


# A job's end written into the statement that did its work (design note 170):
# given ΔV as a query of rows (binding, k), the state's growth as an SQL
# expression and the gate its changes need (``AND …``), the CTEs that end the
# job and the columns they add to the statement's row
# (``storage.views_repo.closing``)
Closing = Callable[[str, str, str], tuple[str, str]]


def render(plan: P.Plan, tables: dict[str, NodeTables], pods: int, known: Known,
           close: Closing | None = None, tallies: Mapping[str, str] | None = None
           ) -> str | None:
    """The one statement that maintains the view for the staged ΔG (None:
    the batch changes no node): its result is one row, (rows added to the
    state − rows removed, the largest change of a stored node, the counts
    whose terms the dictionary lacks: when there are, the statement changed
    nothing); with ``close``, the statement ends the job too, ΔV being the
    rows its root's tables take, and the row has ``close``'s columns. A
    group with a table in ``tallies`` (by node) keeps its tallies there
    (``tally``): the statement then reads the parameter ``:v``, the
    view's id."""
    r = Renderer(plan, tables, pods, known, tallies=tallies)
    ctes, stored = _program(r)
    return _applied(r, _written(r, ctes), stored, close) if stored else None


Stored = list[tuple[int, P.Node, str]]  # a stored node's position, the node, its ΔQ's CTE


@dataclass(frozen=True)
class Program:
    """The delta program as Spark SQL: relations computed in order, each
    read by name by those after it, then the query of the ΔQ of ``nodes``
    as rows ``node, v0 … v(n-1), k`` (``width`` variables): the stored
    nodes it computes and the inputs of those it leaves to Postgres
    (``later``, ``deferred``), which ``finish`` computes from them."""

    steps: list[tuple[str, str]]
    query: str
    nodes: list[str]
    width: int
    reach: str | None = None  # Postgres's query of ``pv_reach`` (``reach``)
    whole: bool = True  # whether it reads ``pod_triples``, the pods' graph, too
    later: frozenset[str] = frozenset()
    # every mapping of its nodes, in G and G', made of ``pv_reach``'s triples (``anchors``,
    # ``seeded``: ``_reached_rows``): none of them changed (each kn = ko), nothing changes
    closed: bool = False


def deltas(plan: P.Plan, tables: dict[str, NodeTables], pods: int, known: Known
           ) -> Program | None:
    """The same delta program in Spark SQL over the views ``pod_triples``
    (the pods' triples), ``pv_dg`` (ΔG) and the stored nodes' tables by
    name (None: the batch changes no node). ``finish`` adds its rows to
    the K-relations, after computing the nodes it leaves to Postgres."""
    r, ctes, out = _spark_program(plan, tables, pods, known)
    if not out and not r.later:
        return None
    every = sorted(r.column, key=lambda v: int(r.column[v][1:]))
    selects = [f"SELECT '{n.id}' AS node, "
               + ", ".join(f"{r.column[v] if v in shape(n).vars else NULL} AS {r.column[v]}"
                           for v in every) + ("," if every else "")
               + f" k FROM {name}" for n, name in out]
    query = " UNION ALL ".join(selects)
    if r.evaluates:  # its nodes' rows are not summed (``dual.net``)
        query = _per_mapping(query, [r.column[v] for v in every])
    return Program(ctes, query, [n.id for n, _ in out], len(every), reach(r), r.whole, r.later,
                   r.reaching and not r.whole and (r.anchors is not None or r.seeded is not None))


def _per_mapping(query: str, columns: Sequence[str]) -> str:
    """The rows of ``query`` (``node``, ``columns``, ``k``) summed per node
    and mapping, zeros dropped: one aggregation for the program, not one
    per node (Q2's six stored nodes: one exchange against six, design
    note 198)."""
    keys = ", ".join(["node", *columns])
    return (f"SELECT {keys}, CAST(sum(k) AS bigint) AS k FROM ({query}) AS q "
            f"GROUP BY {keys} HAVING sum(k) <> 0")


def _spark_program(plan: P.Plan, tables: dict[str, NodeTables], pods: int, known: Known
                   ) -> tuple[Renderer, list[tuple[str, str]], list[tuple[P.Node, str]]]:
    """The renderer of the plan's Spark program, its steps and the nodes
    whose ΔQ it gives, with their relations: the counting rules'
    (``_program``), or, where those read the graph (not ΔG's triples
    alone) and ``dual`` applies, every node evaluated over ``pv_reach``
    in G and G' (design note 198)."""
    from server.executors.sql import dual  # it renders with this module's Renderer

    r = Renderer(plan, tables, pods, known, spark=True)
    needed = {c.id for n in plan.nodes if n.id in r.later for c in n.children} - r.later
    ctes, stored = _program(r)
    if r.reaching or r.whole:
        e = Renderer(plan, tables, pods, known, spark=True)
        if dual.applies(e):
            try:
                steps = dual.program(e, needed)
                return e, steps, [(n, e.delta_name[n.id]) for n in plan.nodes
                                  if n.id in e.delta_name]
            except NotRendered:
                pass
    return r, ctes, [(n, name) for _, n, name in stored] + [
        (n, r.delta_name[n.id]) for n in plan.nodes
        if n.id in needed and not plan.stored(n) and n.id in r.delta_name]


def deferred(plan: P.Plan) -> frozenset[str]:
    """The nodes a Spark program leaves to Postgres: the groups (their
    aggregates are terms looked up in, or added to, the dictionary:
    ``Renderer.group``) and every node above one. The statement merging
    Spark's rows computes their ΔQ from those Spark gives their
    children's (``finish``)."""
    out: set[str] = set()
    for n in plan.nodes:  # children first
        if isinstance(n, P.Group) or any(c.id in out for c in n.children):
            out.add(n.id)
    return frozenset(out)


def finish(plan: P.Plan, tables: dict[str, NodeTables], pods: int, known: Known,
           nodes: Sequence[str], staged: str) -> str | None:
    """The statement adding the ΔQ rows staged in ``staged`` (``node``, then
    a column per variable of the plan in ``deltas``' order, named ``c0 …``,
    and ``k``) for ``nodes`` to the tables of the stored ones, with the
    ΔQ of the nodes the program left to Postgres (``deferred``) computed
    from them, as ``render``'s statement computes and adds its own: its
    row is ``render``'s (None: no stored node changes)."""
    r = Renderer(plan, tables, pods, known)
    later = deferred(plan)
    ctes: list[tuple[str, str]] = []
    stored: Stored = []
    for i, n in enumerate(plan.nodes):
        if n.id in nodes:
            cols = [f"c{r.column[v][1:]} AS {r.column[v]}" for v in sorted(shape(n).vars)]
            body: str | None = (f"SELECT {', '.join([*cols, 'k'])} FROM {staged} "
                                f"WHERE node = '{n.id}'")
        elif n.id in later:
            body = r.node(n)
            ctes += r.ctes
            r.ctes = []
        else:
            continue
        if body is None:
            continue
        r.delta_name[n.id] = name = f"d{i}"
        ctes.append((name, body))
        if plan.stored(n):
            stored.append((i, n, name))
    return _applied(r, _written(r, ctes), stored) if stored else None


def _program(r: Renderer) -> tuple[list[tuple[str, str]], Stored]:
    """Every node's ΔQ as named relations (CTEs) in the plan's order
    (children first), but those left to Postgres (``deferred``), and the
    stored nodes among them whose ΔQ is not empty."""
    ctes: list[tuple[str, str]] = []
    stored: Stored = []
    for i, n in enumerate(r.plan.nodes):
        if n.id in r.later:
            continue
        body = r.node(n)
        ctes += r.ctes
        r.ctes = []
        if body is None:
            continue
        name = f"d{i}"
        r.delta_name[n.id] = name
        ctes.append((name, body))
        if r.plan.stored(n):
            stored.append((i, n, name))
    return ctes, stored


def _written(r: Renderer, ctes: Sequence[tuple[str, str]]) -> list[str]:
    """``ctes`` as a statement's WITH items, those computed once
    (``Renderer.once``) materialized."""
    return [f"{c} AS {'MATERIALIZED ' if c in r.once else ''}({b})" for c, b in ctes]


def _applied(r: Renderer, ctes: list[str], stored: Stored, close: Closing | None = None) -> str:
    """``ctes`` followed by the data-modifying CTEs adding each stored
    node's ΔQ to its tables, and the statement's one row (with ``close``,
    the CTEs ending the job and its columns)."""
    ctes = list(ctes)
    grown, sizes, changes = [], [], []
    gate, missing = "", "CAST(ARRAY[] AS text[])"
    if r.numbers:  # a number the dictionary lacks: nothing changes, its term is named
        ctes.append(f"{MISSING} AS (SELECT DISTINCT dt, lex FROM (" + " UNION ALL ".join(
            f"SELECT {dt} AS dt, {lex} AS lex FROM {rows} WHERE {lex} IS NOT NULL "
            f"AND {number_id(dt, lex)} IS NULL" for rows, ns in r.numbers for dt, lex in ns)
            + ") AS u)")
        gate, missing = (f" AND NOT EXISTS (SELECT 1 FROM {MISSING})",
                         f"ARRAY(SELECT dt || ' ' || lex FROM {MISSING} ORDER BY 1)")
    for i, n, name in stored:
        sizes.append(f"(SELECT count(*) FROM {name})")
        for j, schema in enumerate(sorted(shape(n).schemas, key=sorted)):
            table, variables = r.tables[n.id][schema]
            gone, ins, sql = _apply(name, f"{i}_{j}", table, variables, schema,
                                    shape(n).vars, r.column, gate)
            ctes += sql
            grown += [f"(SELECT count(*) FROM {ins} WHERE inserted)",
                      f"- (SELECT count(*) FROM {gone})"]
            if n is r.plan.root:
                changes.append(_bindings(name, schema, shape(n).vars, r.column))
    for t, (table, keys, sums, a) in enumerate(r.tally_writes):
        ctes += T.writes(table, keys, sums, a, str(t), gate)
    growth = f"(0 {' + '.join([''] + grown)})"
    row = (f"{growth}::bigint AS grown, "
           f"greatest(0, {', '.join(sizes)}) AS largest, {missing} AS missing")
    if close is not None:
        ended, columns = close(" UNION ALL ".join(changes) or _NO_CHANGE, growth, gate)
        ctes.append(ended)
        row = f"{row}, {columns}"
    return f"WITH {', '.join(ctes)} SELECT {row}"


_NO_CHANGE = "SELECT CAST(NULL AS jsonb) AS binding, CAST(0 AS bigint) AS k WHERE false"


def _bindings(delta: str, schema: Schema, all_vars: frozenset[str], column: dict[str, str]
              ) -> str:
    """The rows of a root's delta its table of ``schema`` takes (``_apply``'s),
    as (binding, k): the binding {variable: term id}, as the change feed
    stores it (``storage.feed``)."""
    pairs = ", ".join("'{}', d.{}".format(v.replace("'", "''"), column[v]) for v in sorted(schema))
    return (f"SELECT jsonb_build_object({pairs}) AS binding, d.k FROM {delta} AS d "
            f"WHERE {' AND '.join(_schema_of(schema, all_vars, column)) or 'TRUE'}")


def _schema_of(schema: Schema, all_vars: frozenset[str], column: dict[str, str]) -> list[str]:
    """The conditions on a delta's row ``d`` that it is a mapping of ``schema``."""
    return [f"d.{column[v]} IS NOT NULL" for v in sorted(schema)] + \
        [f"d.{column[v]} IS NULL" for v in sorted(all_vars - schema)]


def constants(plan: P.Plan) -> set[Identifier]:
    """The constant terms of the plan's triple patterns and expressions
    (a rendered EXISTS's pattern and filter among them)."""
    out: set[Identifier] = set()
    for n in plan.nodes:
        if isinstance(n, P.Scan):
            out |= {x for t in n.triples for x in (t.s, t.p, t.o) if not A.is_var(x)}  # type: ignore[misc]
        for e in (getattr(n, "expr", None),):
            if e is not None:
                out |= {x.term for x in A.walk_expr(e) if isinstance(x, A.Const)}
                if (found := exists_of(e)) is not None:
                    bgp, inner = found
                    out |= {x for t in bgp.triples for x in (t.s, t.p, t.o)  # type: ignore[misc]
                            if not A.is_var(x)}
                    if inner is not None:
                        out |= {x.term for x in A.walk_expr(inner) if isinstance(x, A.Const)}
    return out


def exists_of(e: A.Expr) -> tuple[A.BGP, A.Expr | None] | None:
    """The pattern of a filter that is one [NOT] EXISTS of a BGP, and the
    pattern's own filter (which must have no EXISTS of its own); None for
    any other expression (the interpreter decides those)."""
    if not isinstance(e, A.Exists):
        return None
    p, inner = e.pattern, None
    if isinstance(e.pattern, A.Filter):
        p, inner = e.pattern.p, e.pattern.expr
    if not isinstance(p, A.BGP) or not p.triples or A.has_exists(inner) or \
            len(p.triples) > MAX_PATTERNS:
        return None
    if any(t.g is not None or any(isinstance(x, BNode) for x in (t.s, t.p, t.o))
           for t in p.triples):
        return None
    return p, inner


def _apply(delta: str, tag: str, table: str, variables: list[str], schema: Schema,
           all_vars: frozenset[str], column: dict[str, str], gate: str = ""
           ) -> tuple[str, str, list[str]]:
    """The CTEs adding the delta's rows of one schema to its table, in
    disjoint rows (one statement): a negative change deletes the row it
    brings to 0 and lowers any other (a stored row's k is positive, the
    node's solutions counted, so it only meets rows that exist), and a
    positive one is upserted. The rows of an insertion are never probed
    for deletion (21,116 probes, 134 ms of a 740 ms re-insert, note 126),
    and no change is tested against the DELETE's returned rows: Postgres
    takes those for one row and scanned them once per change (1,000 × 375:
    33 ms, note 156). ``gate``: a condition every change also needs
    (``MISSING`` empty)."""
    keys = key_columns(variables)
    src = [column[v] for v in variables] or ["TRUE"]
    match = _schema_of(schema, all_vars, column)
    on = " AND ".join([f"t.{c} = d.{s}" for c, s in zip(column_names(variables), src)]
                      or ["t.unit"])
    gone, ins = f"g{tag}", f"i{tag}"
    where = (" AND ".join(match) or "TRUE") + gate
    sql = [(f"{gone} AS (DELETE FROM \"{table}\" AS t USING {delta} AS d WHERE d.k < 0 AND "
            f"{where} AND {on} AND t.k + d.k = 0 RETURNING {', '.join(f't.{c}' for c in keys)})"),
           (f"l{tag} AS (UPDATE \"{table}\" AS t SET k = t.k + d.k FROM {delta} AS d "
            f"WHERE d.k < 0 AND {where} AND {on} AND t.k + d.k <> 0)"),
           (f"{ins} AS (INSERT INTO \"{table}\" AS t ({', '.join(keys)}, k) "
            f"SELECT {', '.join(f'd.{s}' if s != 'TRUE' else 'TRUE' for s in src)}, d.k "
            f"FROM {delta} AS d WHERE d.k > 0 AND {where} "
            f"ON CONFLICT ({', '.join(keys)}) DO UPDATE SET "
            "k = t.k + excluded.k RETURNING (t.xmax = 0) AS inserted)")]
    return gone, ins, sql

"""A plan's delta program on Spark as two evaluations at once: every
node's mappings over ``pv_reach`` in G' and in G, each row with ``kn`` and
``ko`` (its annotation in each; a node's annotation in G' is the sum of
its rows' ``kn``), and a stored node's ΔQ their net, Σ kn − Σ ko per
mapping (design note 198).

It holds where every mapping a batch can change, in G and in G', is made
of ``pv_reach``'s triples and every other is absent from them or nets to
0 (``applies``): a plan whose BGPs are all chained from constant subjects
(``render.anchors``: ``pv_reach`` holds what those chains reach in G' and
among ΔG's deletions), or one partitioned by a centre whose keys ΔG gives.
Evaluated over those triples, each node gives its changed mappings as
over the whole graph, so Q(G') − Q(G) needs neither the stored rows nor
the counting rules' lookups of them (BSBM's Q2: seven Spark jobs, one
per step read twice, against the rules' nine, one of which tested each
candidate's old support).

A node the evaluation does not render (``NotRendered``) leaves the plan to
the counting rules (``render.deltas``).
"""

from __future__ import annotations

from collections.abc import Callable

from server.executors.sql.render import Item, Joined, Renderer, join, product
from server.executors.sql.shape import NotRendered, joined_iris, shape
from views import algebra as A
from views import plan as P


def evaluated(r: Renderer, n: P.Node) -> Item:
    """``n``'s rows over ``pv_reach`` (``kn``, ``ko``): a triple pattern's
    read where it is named, any other node's a step of ``r``'s program
    (its CTE, computed once however many read it)."""
    match n:
        case P.Scan() if len(n.triples) == 1:
            return r.triple(n.triples[0], "reach")
        case P.Scan() if n.triples:
            return r.both(n)
    if n.id not in r.steps:
        body = _body(r, n)  # its children's steps first
        r.steps[n.id] = name = r.alias("e")
        r.ctes.append((name, body))
    s = shape(n)
    return r._cte_item(r.steps[n.id], s.vars, s.certain)


def _body(r: Renderer, n: P.Node) -> str:
    s = shape(n)
    match n:
        case P.Join():
            items = [evaluated(r, n.left), evaluated(r, n.right)]
            j = join(items)
            return _kept(r, n, j.from_, j.cols, [*j.where, *r._expr(n.expr, j, s.iris)],
                         product(items, "kn"), product(items, "ko"))
        case P.Diff():
            return _diff(r, n)
        case P.Union():
            return " UNION ALL ".join(_rows(r, n, evaluated(r, c)) for c in (n.left, n.right))
        case P.Project():
            return _rows(r, n, evaluated(r, n.child))
        case P.Filter() if not A.has_exists(n.expr):
            return _rows(r, n, evaluated(r, n.child),
                         lambda j: r._expr(n.expr, j, shape(n.child).iris))
        case P.Distinct():
            inner = _rows(r, n, evaluated(r, n.child))
            cols = _names(r, n)
            return (f"SELECT {', '.join(cols)}, "
                    f"CASE WHEN sum(kn) > 0 THEN 1 ELSE 0 END AS kn, "
                    f"CASE WHEN sum(ko) > 0 THEN 1 ELSE 0 END AS ko "
                    f"FROM ({inner}) AS g GROUP BY {', '.join(cols)}")
    raise NotRendered(f"{n.describe()} evaluated over pv_reach")


def _names(r: Renderer, n: P.Node) -> list[str]:
    """``n``'s columns: one per variable, or ``unit_`` where it has none."""
    return [r.column[v] for v in sorted(shape(n).vars)] or ["unit_"]


def _rows(r: Renderer, n: P.Node, child: Item,
          passes: Callable[[Joined], list[str]] | None = None) -> str:
    """``child``'s rows in ``n``'s columns (NULL where it binds no such
    variable), their annotations as they are; only those ``passes``'
    conditions hold for, where given (a filter's)."""
    j = join([child])
    return _kept(r, n, j.from_, j.cols, [*j.where, *(passes(j) if passes else [])],
                 product([child], "kn"), product([child], "ko"), nonzero=False)


def _kept(r: Renderer, n: P.Node, from_: str, cols: dict[str, str], where: list[str],
          kn: str, ko: str, nonzero: bool = True) -> str:
    """A SELECT of ``n``'s rows: its variables' columns, ``kn`` and ``ko``;
    with ``nonzero``, none that is in neither graph (a product of rows
    that hold in different ones)."""
    names = sorted(shape(n).vars)
    where = [*where, *([f"({kn} <> 0 OR {ko} <> 0)"] if nonzero else [])]
    return (f"SELECT {r._cols(names, cols)}, {kn} AS kn, {ko} AS ko FROM {from_}"
            + (f" WHERE {' AND '.join(where)}" if where else ""))


def _diff(r: Renderer, n: P.Diff) -> str:
    """MINUS and OPTIONAL's unmatched half: a left row keeps its annotation
    in a graph where no right mapping of that graph (a row with a non-zero
    annotation there: every annotation of an evaluation is ≥ 0) blocks it
    — compatible and sharing a variable, for MINUS; compatible and
    satisfying the OPTIONAL's filter on μ1 ∪ μ2 (an error does not block)."""
    left = evaluated(r, n.left)
    j = join([left])
    iris = joined_iris(shape(n.left), shape(n.right))
    outer = Item("", j.cols, j.certain)

    def blocked(column: str) -> str:
        right = evaluated(r, n.right)
        m = join([right], outer=outer)
        own = join([right]).cols
        where = [*m.where, *r._shares(n, j.cols, own), *r._expr(n.expr, m, iris),
                 f"{product([right], column)} <> 0"]
        return f"EXISTS (SELECT 1 FROM {m.from_} WHERE {' AND '.join(where)})"

    names = _names(r, n)
    kn = f"{product([left], 'kn')} * CASE WHEN {blocked('kn')} THEN 0 ELSE 1 END"
    ko = f"{product([left], 'ko')} * CASE WHEN {blocked('ko')} THEN 0 ELSE 1 END"
    inner = _kept(r, n, j.from_, j.cols, j.where, kn, ko, nonzero=False)
    return f"SELECT {', '.join(names)}, kn, ko FROM ({inner}) AS x WHERE kn <> 0 OR ko <> 0"


def net(r: Renderer, n: P.Node) -> str:
    """``n``'s rows whose annotations differ in G and G', each as kn − ko:
    its ΔQ once summed per mapping (the program's query sums every node's
    at once, ``render.deltas``)."""
    names = _names(r, n)
    rows = _rows(r, n, evaluated(r, n))
    return f"SELECT {', '.join(names)}, kn - ko AS k FROM ({rows}) AS u WHERE kn <> ko"


def applies(r: Renderer) -> bool:
    """Whether ``r``'s plan is evaluated so: one whose BGPs are chained
    from constant subjects (``anchors``), or one partitioned by a centre
    (``partition``) none of whose DISTINCTs merges mappings of different
    centres. A centre's plan reaches the mappings whose centre is one of
    the batch's keys, each whole (every pattern binds the centre, every
    join and difference shares it); any other is unchanged and reached
    by no triple, absent on both sides — right for every node but a
    DISTINCT over a projection that dropped the centre, which would
    merge a changed mapping with an unreached, unchanged one."""
    if r.anchors is not None:
        return True
    return r.centre is not None and all(
        r.centre in shape(n.child).certain for n in r.plan.nodes
        if isinstance(n, P.Distinct) and n.id not in r.later)


def program(r: Renderer, needed: set[str]) -> list[tuple[str, str]]:
    """The steps of ``r``'s program (``applies``): each node it computes
    evaluated over ``pv_reach`` where read, and the ``net`` rows of each
    stored one and of each input of a node left to Postgres
    (``needed``), named in ``r.delta_name``; none for a centre's plan no
    pattern of which ΔG changes. ``NotRendered`` where a node is not
    evaluated so."""
    if r.centre is not None:  # the centre's keys: its values in ΔG's matching triples
        k = r.known
        for n in r.plan.nodes:
            if isinstance(n, P.Scan) and n.id not in r.later:
                r.reached += [(r.centre, tp) for tp in n.triples]
                r.keys += [r.key(tp, r.centre) for tp in n.triples
                           if k.changed(tp.p, k.inserted) or k.changed(tp.p, k.deleted)]
        if not r.keys:
            r.evaluates = True
            return []
    ctes: list[tuple[str, str]] = []
    for i, n in enumerate(r.plan.nodes):
        if n.id in r.later or not (r.plan.stored(n) or n.id in needed):
            continue
        body = net(r, n)
        ctes += r.ctes
        r.ctes = []
        r.delta_name[n.id] = name = f"d{i}"
        ctes.append((name, body))
    r.evaluates = True
    return ctes

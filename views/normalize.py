"""Normalisation rewrites, each a pure ``step(pattern) -> pattern``.

- ``push_graph``: GRAPH g { P } becomes GraphNames(g) ⋈ P' where P' is P with
  g as the graph slot of every triple pattern (SPARQL 1.1 §18.5 Graph:
  ∪ over named graphs of eval(D(g), P) ⋈ {g}): one join variable carries the
  active graph. Every solution of P' binds a variable g (design note 222):
  the empty pattern becomes GraphNames(g) and VALUES is joined with it, so
  OPTIONAL, MINUS and EXISTS meet their right side graph by graph.
  Sub-selects project g too, GROUP BY groups by g too, and MINUS does not
  count g as a shared variable.
- ``expand_paths`` (``views.paths``): property paths as joins, unions,
  filters and ``Closure`` nodes.
- ``merge_bgps``: Join(BGP, BGP) is one BGP (paper §4.3 handles a BGP whole);
  the empty BGP is the identity of Join.
"""

from __future__ import annotations

from dataclasses import replace

from views import algebra as A
from views.errors import UnsupportedFeature
from views.paths import expand_paths


def normalize(p: A.Pattern) -> A.Pattern:
    for step in RULES:
        p = step(p)
    return p


def push_graph(p: A.Pattern, graph: A.Slot | None = None) -> A.Pattern:
    match p:
        case A.Graph():
            if graph is not None and graph != p.term:
                raise UnsupportedFeature("GRAPH nested in another GRAPH")
            _check_graph_body(p)
            return A.Join(left=A.GraphNames(term=p.term), right=push_graph(p.p, p.term))
        case A.BGP():
            if graph is None:
                return p
            if not p.triples and A.is_var(graph):
                return A.GraphNames(term=graph)  # the empty pattern, once in each graph
            return A.BGP(triples=tuple(replace(t, g=graph) for t in p.triples))
        case A.Filter():
            return A.Filter(expr=_expr(p.expr, graph), p=push_graph(p.p, graph))
        case A.Extend():
            return A.Extend(p=push_graph(p.p, graph), var=p.var, expr=_expr(p.expr, graph))
        case A.LeftJoin():
            expr = None if p.expr is None else _expr(p.expr, graph)
            return A.LeftJoin(left=push_graph(p.left, graph), right=push_graph(p.right, graph),
                              expr=expr)
        case A.Minus():
            # a Minus already pushed keeps its variable: normalising is idempotent
            gv = graph if graph is not None and A.is_var(graph) else p.graph_var
            return A.Minus(left=push_graph(p.left, graph), right=push_graph(p.right, graph),
                           graph_var=gv)  # type: ignore[arg-type]
        case A.Join() | A.Union_():
            return replace(p, left=push_graph(p.left, graph), right=push_graph(p.right, graph))
        case A.Project():
            if graph is not None and A.is_var(graph) and graph not in p.vars \
                    and graph in pattern_vars(p.p):
                raise UnsupportedFeature("a sub-select inside GRAPH ?g with its own inner ?g (GRAPH is "
                                         "maintained by moving ?g into each triple pattern, "
                                         "which would join the two ?g here)")
            inner = push_graph(p.p, graph)
            if graph is not None and A.is_var(graph) and graph not in p.vars:
                return A.Project(p=inner, vars=(*p.vars, graph))  # type: ignore[arg-type]
            return A.Project(p=inner, vars=p.vars)
        case A.Group():
            inner = push_graph(p.p, graph)
            if graph is None or not A.is_var(graph):
                return replace(p, p=inner)
            return A.Group(p=inner, keys=(*p.keys, A.Var(name=graph)),  # type: ignore[arg-type]
                           aggregates=p.aggregates)
        case A.Distinct():
            return replace(p, p=push_graph(p.p, graph))
        case A.PathPattern():
            return p if graph is None else replace(p, g=graph)
        case A.Closure():  # only built from a PathPattern, after this step
            return replace(p, p=push_graph(p.p, graph))
        case A.Values():
            if graph is not None and A.is_var(graph):  # its rows, once in each graph
                return A.Join(left=A.GraphNames(term=graph), right=p)
            return p
        case A.GraphNames():
            return p
    raise TypeError(p)


def _check_graph_body(g: A.Graph) -> None:
    """Cases where pushing the graph slot down would change the answer."""
    if not A.is_var(g.term):
        return
    name: str = g.term  # type: ignore[assignment]
    if _mentions_var(g.p, name) or _binds_in_leaf(g.p, name):
        raise UnsupportedFeature("the GRAPH variable used inside its own GRAPH pattern (GRAPH is "
                                 "maintained by moving the variable into each triple "
                                 "pattern, which would change what the inner use sees)")
    if _implicit_group(g.p):
        raise UnsupportedFeature("an aggregate without GROUP BY inside GRAPH ?var (it has a row "
                                 "for every graph, matches or not; the graph moved into "
                                 "the group keys gives rows only where it matches)")


def pattern_vars(p: A.Pattern) -> set[str]:
    """Every variable named anywhere in ``p`` (of a ``Closure``, the ends:
    its edge pattern's variables are its own)."""
    out: set[str] = set()
    if isinstance(p, A.Closure):
        return {x for x in (p.subject, p.object, p.graph)
                if x is not None and A.is_var(x)}  # type: ignore[misc]
    match p:
        case A.BGP():
            out |= A.triple_vars(p.triples)
        case A.Values():
            out |= {v for row in p.rows for v, _ in row}
        case A.Extend():
            out |= {p.var} | A.expr_vars(p.expr)
        case A.Filter():
            out |= A.expr_vars(p.expr)
        case A.Graph() | A.GraphNames() if A.is_var(p.term):
            out.add(p.term)  # type: ignore[arg-type]
        case A.PathPattern():
            out |= {x for x in (p.s, p.o, p.g) if x is not None and A.is_var(x)}  # type: ignore[misc]
    for c in A.children(p):
        out |= pattern_vars(c)
    return out


def _binds_in_leaf(p: A.Pattern, name: str) -> bool:
    match p:
        case A.BGP():
            return any(name in (t.s, t.p, t.o) for t in p.triples)
        case A.PathPattern():
            return name in (p.s, p.o)
        case A.Values():
            return any(v == name for row in p.rows for v, _ in row)
        case A.Project():
            return name in p.vars and _binds_in_leaf(p.p, name)
    return any(_binds_in_leaf(c, name) for c in A.children(p))


def _implicit_group(p: A.Pattern) -> bool:
    if isinstance(p, A.Group) and not p.keys:
        return True
    return any(_implicit_group(c) for c in A.children(p))


def _mentions_var(p: A.Pattern, name: str) -> bool:
    exprs = []
    match p:
        case A.Filter() | A.Extend():
            exprs.append(p.expr)
        case A.LeftJoin() if p.expr is not None:
            exprs.append(p.expr)
    if any(name in A.expr_vars(e) for e in exprs):
        return True
    return any(_mentions_var(c, name) for c in A.children(p))


def _expr(e: A.Expr, graph: A.Slot | None) -> A.Expr:
    match e:
        case A.Exists():
            return A.Exists(pattern=push_graph(e.pattern, graph), negated=e.negated)
        case A.Call():
            return A.Call(fn=e.fn, args=tuple(_expr(a, graph) for a in e.args))
    return e


def merge_bgps(p: A.Pattern) -> A.Pattern:
    match p:
        case A.Join():
            left, right = merge_bgps(p.left), merge_bgps(p.right)
            if isinstance(left, A.BGP) and isinstance(right, A.BGP):
                return A.BGP(triples=left.triples + right.triples)
            if isinstance(left, A.BGP) and not left.triples:
                return right
            if isinstance(right, A.BGP) and not right.triples:
                return left
            return A.Join(left=left, right=right)
        case A.Filter():
            return A.Filter(expr=_map_exists(p.expr, merge_bgps), p=merge_bgps(p.p))
        case A.Extend():
            return A.Extend(p=merge_bgps(p.p), var=p.var, expr=_map_exists(p.expr, merge_bgps))
        case A.LeftJoin() | A.Union_() | A.Minus():
            return replace(p, left=merge_bgps(p.left), right=merge_bgps(p.right))
        case A.Project() | A.Distinct() | A.Group() | A.Graph() | A.Closure():
            return replace(p, p=merge_bgps(p.p))
    return p




def _map_exists(e: A.Expr, f) -> A.Expr:  # type: ignore[no-untyped-def]
    match e:
        case A.Exists():
            return A.Exists(pattern=f(e.pattern), negated=e.negated)
        case A.Call():
            return A.Call(fn=e.fn, args=tuple(_map_exists(a, f) for a in e.args))
    return e


RULES = (push_graph, expand_paths, merge_bgps)

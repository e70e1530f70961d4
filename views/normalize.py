"""Normalisation rewrites, each a pure ``step(pattern) -> pattern``.

- ``push_graph``: GRAPH g { P } becomes GraphNames(g) ⋈ P' where P' is P with
  g as the graph slot of every triple pattern (SPARQL 1.1 §18.5 Graph:
  ∪ over named graphs of eval(D(g), P) ⋈ {g}): one join variable carries the
  active graph. Every solution of P' binds a variable g (design note 222):
  the empty pattern becomes GraphNames(g) and VALUES is joined with it, so
  OPTIONAL, MINUS and EXISTS meet their right side graph by graph.
  Sub-selects project g too, GROUP BY groups by g too, and MINUS does not
  count g as a shared variable. Where P names g itself, P's g is renamed
  apart first (§18.6: a variable of P, joined with the graph's name after);
  a GRAPH inside another reads its own graph; an aggregate without GROUP BY
  keeps a row for every graph (design note 230).
- ``expand_paths`` (``views.paths``): property paths as joins, unions,
  filters and ``Closure`` nodes.
- ``merge_bgps``: Join(BGP, BGP) is one BGP (paper §4.3 handles a BGP whole);
  the empty BGP is the identity of Join.
"""

from __future__ import annotations

import dataclasses
from dataclasses import replace

from views import algebra as A
from views.aggregates import compute
from views.paths import expand_paths


def normalize(p: A.Pattern) -> A.Pattern:
    for step in RULES:
        p = step(p)
    return p


def push_graph(p: A.Pattern, graph: A.Slot | None = None) -> A.Pattern:
    match p:
        case A.Graph():
            if graph is not None and graph != p.term:
                return _nested(p, graph)
            if A.is_var(p.term) and _names(p.p, p.term):  # type: ignore[arg-type]
                return _renamed(p)
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
                    and graph in pattern_vars(p.p):  # its own ?g, a local: renamed apart
                p = replace(p, p=_rename(p.p, graph, f"_:%local:{graph}"))  # type: ignore[arg-type]
            inner = push_graph(p.p, graph)
            if graph is not None and A.is_var(graph) and graph not in p.vars:
                return A.Project(p=inner, vars=(*p.vars, graph))  # type: ignore[arg-type]
            return A.Project(p=inner, vars=p.vars)
        case A.Group():
            inner = push_graph(p.p, graph)
            if graph is None or not A.is_var(graph):
                return replace(p, p=inner)
            grouped = A.Group(p=inner, keys=(*p.keys, A.Var(name=graph)),  # type: ignore[arg-type]
                              aggregates=p.aggregates)
            return grouped if p.keys else _in_every_graph(grouped, graph)  # type: ignore[arg-type]
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


def _nested(p: A.Graph, outer: A.Slot) -> A.Pattern:
    """A GRAPH inside another: §18.6 evaluates it in its own graph (the
    dataset ``D(D[i])`` keeps every named graph), whatever the outer one is;
    joined with the outer graph's names, every solution binds the outer
    variable as the others inside the outer GRAPH do (design note 222)."""
    inner = push_graph(p)
    return A.Join(left=A.GraphNames(term=outer), right=inner) if A.is_var(outer) else inner


def _renamed(p: A.Graph) -> A.Pattern:
    """``GRAPH ?g { P }`` where P names ?g: §18.6 evaluates P in each graph
    with ?g a variable of P's own (unbound in a FILTER or BIND unless P binds
    it), then joins with ?g ↦ the graph. So P's ?g is renamed to a fresh
    variable h, the GRAPH pushed as usual, the join's compatibility kept as a
    filter (h unbound, or the same term as ?g), and h projected away: the
    mappings with h unbound and with h = ?g are one mapping of §18.6, their
    counts added."""
    g: str = p.term  # type: ignore[assignment]
    h = f"_:%in:{g}"  # % is in no blank node label; a nested rename prefixes again
    body: A.Pattern = _rename(p.p, g, h)  # type: ignore[assignment]
    same = A.Call(fn="||", args=(
        A.Call(fn="!", args=(A.Call(fn="BOUND", args=(A.Var(name=h),)),)),
        A.Call(fn="SAMETERM", args=(A.Var(name=h), A.Var(name=g)))))
    keep = tuple(sorted((pattern_vars(body) - {h}) | {g}))
    return A.Project(p=A.Filter(expr=same, p=push_graph(A.Graph(term=g, p=body))), vars=keep)


_NOT_NAMES = ("fn", "separator")  # the str fields that hold no variable


def _names(node: object, name: str) -> bool:
    """Whether ``name`` occurs in ``node`` other than as a nested GRAPH's
    own variable (a GRAPH ?g inside GRAPH ?g is the same graph: pushed as is)."""
    if isinstance(node, A.Graph):
        return _names(node.p, name)
    if isinstance(node, str):
        return A.is_var(node) and node == name
    if isinstance(node, tuple):
        return any(_names(x, name) for x in node)
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        return any(_names(getattr(node, f.name), name) for f in dataclasses.fields(node)
                   if f.name not in _NOT_NAMES)
    return False


def _rename(node: object, old: str, new: str) -> object:
    """``node`` with every occurrence of the variable ``old`` named ``new``."""
    if isinstance(node, str):
        return new if A.is_var(node) and node == old else node
    if isinstance(node, tuple):
        return tuple(_rename(x, old, new) for x in node)
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        return dataclasses.replace(node, **{  # type: ignore[type-var]
            f.name: _rename(getattr(node, f.name), old, new)
            for f in dataclasses.fields(node) if f.name not in _NOT_NAMES})
    return node


def _in_every_graph(grouped: A.Group, g: str) -> A.Pattern:
    """An aggregate without GROUP BY inside ``GRAPH ?g``: §18.6 gives it a
    row in every graph, whether its pattern matches there or not (COUNT 0
    where it does not), but grouped by ?g the graphs it does not match have
    no group. So the graphs' names are left-joined with the groups (a COUNT(*)
    marks a graph that has one), and each aggregate of a graph without a
    group is the aggregate's value over no rows."""
    seen = f"_:%rows:{g}"
    own = tuple(replace(a, var=f"_:%of:{a.var}") for a in grouped.aggregates)
    counted = replace(grouped, aggregates=(*own, A.Aggregate(fn="COUNT", expr=None,
                                                             distinct=False, var=seen)))
    out: A.Pattern = A.LeftJoin(left=A.GraphNames(term=g), right=counted, expr=None)
    for a, mine in zip(grouped.aggregates, own, strict=True):
        empty = compute(a, [])
        value: A.Expr = A.Var(name=mine.var)
        if empty is not None:
            value = A.Call(fn="IF", args=(A.Call(fn="BOUND", args=(A.Var(name=seen),)), value,
                                          A.Const(term=empty)))
        out = A.Extend(p=out, var=a.var, expr=value)
    return A.Project(p=out, vars=(g, *(a.var for a in grouped.aggregates)))


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

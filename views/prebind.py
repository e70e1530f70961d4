"""A pattern evaluated under given bindings, as a pattern of its own: how
the engine decides EXISTS { P } for a mapping μ (SPARQL 1.1 §18.6, where
``substitute(P, μ)`` replaces P's variables by μ's values).

The bound variables are substituted into triple patterns and expressions and
kept in the solutions (joined back as one VALUES row), so MINUS and OPTIONAL
inside P still see them as shared. A sub-select sees only the bindings of the
variables it projects (its other variables are its own); a group is computed
on its own and its solutions kept where they agree with μ.

>>> from rdflib import URIRef
>>> from views.parse import parse
>>> p = parse("SELECT * { ?s <http://e/p> ?o }").pattern
>>> bound = prebind(p, {"s": URIRef("http://e/a")})
>>> [t.s for t in bound.p.right.triples]
[rdflib.term.URIRef('http://e/a')]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from rdflib.term import Identifier

from views import algebra as A
from views.terms import TRUE

Bindings = Mapping[str, Identifier]


def prebind(p: A.Pattern, m: Bindings) -> A.Pattern:
    """``p`` restricted to the solutions compatible with ``m``."""
    if not m:
        return p
    match p:
        case A.BGP():
            return _with_row(_bound(m, A.triple_vars(p.triples)), A.BGP(
                triples=tuple(_triple(t, m) for t in p.triples)))
        case A.GraphNames():
            name = p.term if isinstance(p.term, str) and A.is_var(p.term) else None
            if name is not None and name in m:
                return _with_row({name: m[name]}, A.GraphNames(term=m[name]))
            return p
        case A.Values():
            return A.Values(rows=tuple(r for r in p.rows if all(m.get(v, t) == t for v, t in r)))
        case A.Join() | A.Union_() | A.Minus():
            return replace(p, left=prebind(p.left, m), right=prebind(p.right, m))
        case A.LeftJoin():
            return A.LeftJoin(left=prebind(p.left, m), right=prebind(p.right, m),
                              expr=None if p.expr is None else substitute(p.expr, m))
        case A.Filter():
            return A.Filter(expr=substitute(p.expr, m), p=prebind(p.p, m))
        case A.Extend():
            # a variable the Extend binds and ``m`` binds too: its value must agree
            return _with_row(_bound(m, (p.var,)), A.Extend(p=prebind(p.p, m), var=p.var,
                                                           expr=substitute(p.expr, m)))
        case A.Distinct():
            return A.Distinct(p=prebind(p.p, m))
        case A.Project():
            return A.Project(p=prebind(p.p, _bound(m, p.vars)), vars=p.vars)
        case A.Group():
            out = {e.name for e in p.keys if isinstance(e, A.Var)} | {a.var for a in p.aggregates}
            return _with_row(_bound(m, out), p)
        case A.Closure():
            ends = {x for x in (p.subject, p.object, p.graph) if x is not None and A.is_var(x)}
            row = _bound(m, ends)
            if isinstance(p.subject, str) and A.is_var(p.subject) and p.subject in m and \
                    A.is_var(p.object):  # one source instead of every one
                p = replace(p, subject=m[p.subject])
            return _with_row(row, p)
        case A.Graph():
            inner = prebind(p.p, m)
            name = p.term if isinstance(p.term, str) and A.is_var(p.term) else None
            if name is not None and name in m:
                return _with_row({name: m[name]}, A.Graph(term=m[name], p=inner))
            return A.Graph(term=p.term, p=inner)
    raise TypeError(p)


def substitute(e: A.Expr, m: Bindings) -> A.Expr:
    """``e`` with the variables ``m`` binds replaced by their values; BOUND of
    such a variable is true."""
    match e:
        case A.Var() if e.name in m:
            return A.Const(term=m[e.name])
        case A.Call() if e.fn == "BOUND" and isinstance(e.args[0], A.Var) and \
                e.args[0].name in m:
            return A.Const(term=TRUE)
        case A.Call():
            return A.Call(fn=e.fn, args=tuple(substitute(a, m) for a in e.args))
        case A.Exists():
            return A.Exists(pattern=prebind(e.pattern, m), negated=e.negated)
    return e


def _bound(m: Bindings, names: object) -> dict[str, Identifier]:
    return {v: t for v, t in m.items() if v in names}  # type: ignore[operator]


def _triple(t: A.TriplePattern, m: Bindings) -> A.TriplePattern:
    def value(slot: A.Slot | None) -> A.Slot | None:
        return m.get(slot, slot) if slot is not None and A.is_var(slot) else slot  # type: ignore[arg-type]

    return A.TriplePattern(s=value(t.s), p=value(t.p), o=value(t.o), g=value(t.g))  # type: ignore[arg-type]


def _with_row(row: dict[str, Identifier], p: A.Pattern) -> A.Pattern:
    """``p`` joined with the one solution ``row`` (nothing when it is empty)."""
    if not row:
        return p
    return A.Join(left=A.Values(rows=(tuple(sorted(row.items())),)), right=p)

"""What the SQL renderer knows of a plan node before any data: the variables
its solutions may bind, those every solution binds, its possible schemas
(counting paper §4.5.3: one K-relation table each) and the variables that
can never hold a literal (so SPARQL's ``=`` on them is term identity).

>>> from views.compile import compile_query
>>> p = compile_query("SELECT * { ?s <http://e/p> ?o OPTIONAL { ?o <http://e/q> ?z } }").plan
>>> s = shape(p.root)
>>> sorted(s.vars), sorted(s.certain), sorted(sorted(x) for x in s.schemas)
(['o', 's', 'z'], ['o', 's'], [['o', 's'], ['o', 's', 'z']])
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from rdflib.term import Literal

from views import algebra as A
from views import plan as P
from views.schemas import subsets

Schema = frozenset[str]


class NotRendered(Exception):
    """The node has no SQL rendering; its view runs in the interpreter."""


# A rendered node has a table per schema, made before its first batch; past
# this many its view runs in the interpreter, which makes the tables of the
# schemas its solutions have (the count is checked before the sets are built:
# a group of 17 optional variables has 2^17)
MAX_SCHEMAS = 64


def _within(count: int) -> None:
    if count > MAX_SCHEMAS:
        raise NotRendered(f"its solutions may have more than {MAX_SCHEMAS} schemas")


@dataclass(frozen=True)
class Shape:
    vars: frozenset[str]  # bound in some solution
    certain: frozenset[str]  # bound in every solution
    schemas: frozenset[Schema]  # the variable sets solutions may have
    iris: frozenset[str]  # never bound to a literal


@functools.lru_cache(maxsize=4096)
def shape(n: P.Node) -> Shape:
    """The shape of node ``n``'s solutions (cached by node id: nodes are
    values)."""
    match n:
        case P.Scan():
            vs = frozenset(A.triple_vars(n.triples))
            iris = frozenset(x for t in n.triples for x in (t.s, t.p) if A.is_var(x))
            return Shape(vs, vs, frozenset({vs}), iris)
        case P.Values():
            schemas = frozenset(frozenset(v for v, _ in r) for r in n.rows) or \
                frozenset({frozenset()})
            vs = frozenset().union(*schemas)
            iris = frozenset(v for v in vs if not any(
                isinstance(t, Literal) for r in n.rows for w, t in r if w == v))
            return Shape(vs, frozenset.intersection(*schemas), schemas, iris)
        case P.GraphNames():
            vs = frozenset({n.term}) if A.is_var(n.term) else frozenset()
            return Shape(vs, vs, frozenset({vs}), vs)  # type: ignore[arg-type]
        case P.Join():
            left, right = shape(n.left), shape(n.right)
            _within(len(left.schemas) * len(right.schemas))
            return Shape(left.vars | right.vars, left.certain | right.certain,
                         frozenset(a | b for a in left.schemas for b in right.schemas),
                         joined_iris(left, right))
        case P.Diff():
            return shape(n.left)
        case P.Union():
            left, right = shape(n.left), shape(n.right)
            _within(len(left.schemas) + len(right.schemas))
            iris = frozenset(v for v in left.vars | right.vars
                             if (v in left.iris or v not in left.vars)
                             and (v in right.iris or v not in right.vars))
            return Shape(left.vars | right.vars, left.certain & right.certain,
                         left.schemas | right.schemas, iris)
        case P.Filter() | P.Distinct():
            return shape(n.child)
        case P.Extend(expr=A.Var(name=src)):
            c = shape(n.child)  # a copy where the variable is unbound: bound where either is
            if src not in c.vars:
                return c
            iri = all(v in c.iris for v in (src, n.var) if v in c.vars)
            return Shape(c.vars | {n.var}, c.certain | ({n.var} if src in c.certain else set()),
                         frozenset(s | {n.var} if src in s else s for s in c.schemas),
                         c.iris | {n.var} if iri else c.iris - {n.var})
        case P.Extend():
            c = shape(n.child)
            _within(2 * len(c.schemas))
            return Shape(c.vars | {n.var}, c.certain, c.schemas | frozenset(
                s | {n.var} for s in c.schemas), c.iris - {n.var})
        case P.Project():
            c, keep = shape(n.child), frozenset(n.vars)
            return Shape(c.vars & keep, c.certain & keep,
                         frozenset(s & keep for s in c.schemas), c.iris & keep)
        case P.Group():
            keys = frozenset(e.name for e in n.keys if isinstance(e, A.Var))
            aggs = frozenset(a.var for a in n.aggregates)
            sure = group_certain(n)
            _within(2 ** min(len((keys | aggs) - sure), 64))
            schemas = frozenset(sure | u for u in subsets((keys | aggs) - sure))
            return Shape(keys | aggs, sure, schemas, frozenset())
        case P.Closure():  # the pair's ends (and graph); an end may be a literal
            vs = frozenset(x for x in (n.subject, n.object, n.graph)
                           if x is not None and A.is_var(x))  # type: ignore[misc]
            return Shape(vs, vs, frozenset({vs}), frozenset({n.graph}) if n.graph else frozenset())
    raise NotRendered(n.describe())  # a node kind the renderer does not know


def group_certain(n: P.Group) -> frozenset[str]:
    """The variables every solution of a group binds: a key its members all
    bind, a COUNT (never an error), and, where every group has a member
    (GROUP BY: an ungrouped aggregate has its one group even over no rows),
    the SAMPLE of a variable every member binds."""
    child = shape(n.child).certain
    keyed = bool(n.keys)
    sure = {e.name for e in n.keys if isinstance(e, A.Var) and e.name in child}
    for a in n.aggregates:
        if a.fn == "COUNT" or (keyed and a.fn == "SAMPLE" and isinstance(a.expr, A.Var)
                               and a.expr.name in child):
            sure.add(a.var)
    return frozenset(sure)


def joined_iris(left: Shape, right: Shape) -> frozenset[str]:
    """A joined variable is never a literal when a side that always binds it
    says so, or every side that may bind it does."""
    out = set()
    for v in left.vars | right.vars:
        sides = [s for s in (left, right) if v in s.vars]
        if any(v in s.certain and v in s.iris for s in sides) or all(v in s.iris for s in sides):
            out.add(v)
    return frozenset(out)

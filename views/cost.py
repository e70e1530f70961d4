"""An upper estimate of a plan's size from statistics of its input, so a view
whose results would swamp the server (a cartesian product, a VALUES block
multiplied by another) is refused at registration instead of taking the
server down at its first backfill.

The estimate is deliberately crude and on the high side where it matters:
triple patterns that share no variable multiply (a cartesian product), a
join on a shared variable is taken as at most its larger input (a key
join), unions add, an arbitrary-length path connects at most E² pairs of
its E edges (E with one end constant), and operators that can only remove or keep rows keep
their input's size.

>>> from views.compile import compile_query
>>> plan = compile_query("SELECT * { ?a <http://e/p> ?b . ?c <http://e/q> ?d }").plan
>>> estimate(plan, lambda tp: 1000)
1000000
>>> estimate(compile_query("SELECT * { ?a <http://e/p> ?b . ?b <http://e/q> ?d }").plan,
...          lambda tp: 1000)
1000
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from views import algebra as A
from views import plan as P

# the input's triples matching one triple pattern alone (variables match
# anything); a statistic may stop counting at a cap it returns instead
Triples = Callable[[A.TriplePattern], int]
_ANY = A.TriplePattern(s="?s", p="?p", o="?o")


def estimate(plan: P.Plan, triples: Triples) -> int:
    """An upper estimate of the rows of ``plan``'s largest node."""
    sizes: dict[str, tuple[int, frozenset[str]]] = {}
    for n in plan.nodes:
        sizes[n.id] = _size(n, sizes, triples)
    return max((s for s, _ in sizes.values()), default=0)


def _size(n: P.Node, done: dict[str, tuple[int, frozenset[str]]],
          triples: Triples) -> tuple[int, frozenset[str]]:
    """(rows, variables) of node ``n``."""
    kids = [done[c.id] for c in n.children]
    match n:
        case P.Scan():
            return _scan(n.triples, triples)
        case P.Values():
            return len(n.rows), frozenset(v for r in n.rows for v, _ in r)
        case P.GraphNames():
            names = frozenset({n.term}) if isinstance(n.term, str) and A.is_var(n.term) \
                else frozenset()
            return triples(_ANY), names
        case P.Join():
            return _join(kids[0], kids[1])
        case P.Union():
            return kids[0][0] + kids[1][0], kids[0][1] | kids[1][1]
        case P.Extend():
            return kids[0][0], kids[0][1] | {n.var}
        case P.Project():
            return kids[0][0], kids[0][1] & frozenset(n.vars)
        case P.Group():
            out = {e.name for e in n.keys if isinstance(e, A.Var)} | {a.var for a in n.aggregates}
            return kids[0][0], frozenset(out)
        case P.Closure():
            ends = frozenset(x for x in (n.subject, n.object, n.graph)
                             if x is not None and A.is_var(x))  # type: ignore[misc]
            edges = kids[0][0]  # a cycle through E edges connects E² pairs; one end fixed, E
            return (edges * edges if len(ends - {n.graph}) == 2 else edges), ends
    return kids[0]  # Diff, Filter, Distinct: at most their (left) input


def _join(a: tuple[int, frozenset[str]], b: tuple[int, frozenset[str]]
          ) -> tuple[int, frozenset[str]]:
    rows = max(a[0], b[0]) if a[1] & b[1] else a[0] * b[0]
    return rows, a[1] | b[1]


def _scan(tps: Sequence[A.TriplePattern], triples: Triples) -> tuple[int, frozenset[str]]:
    """Connected triple patterns as a key join of their largest; components
    that share no variable multiply."""
    parts = [(triples(tp), frozenset(A.triple_vars([tp]))) for tp in tps]
    components: list[tuple[int, frozenset[str]]] = []
    for rows, names in parts:
        joined = [c for c in components if c[1] & names]
        for c in joined:
            components.remove(c)
        components.append((max([rows] + [c[0] for c in joined]),
                           names.union(*(c[1] for c in joined))))
    return math.prod(c[0] for c in components), frozenset().union(*(c[1] for c in components))

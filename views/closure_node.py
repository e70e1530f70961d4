"""The delta rule of a ``Closure`` node: its child's output is the edge
relation, its own stored output is T (the reachable pairs, in the node's
variables), both read through the ``KRelation`` interface — in memory or in
Postgres alike — and ``views.closure`` turns the edges' support changes
into ΔT (semi-naive for insertions, Backward/Forward for deletions).

A graph node is a term, or a (graph, term) pair when the edges are
partitioned by a GRAPH variable. From a constant subject T holds one source
(the constant's node in each graph); to a constant object, the edges are
walked backwards from it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable

from rdflib.term import Identifier

from views import algebra as A
from views import plan as P
from views.closure import Pair, backward_forward, insert
from views.kset import KRelation, KSet, Mu, mu

Node = Hashable


class _Shape:
    """How the node's nodes, edges and pairs map to solution mappings."""

    def __init__(self, n: P.Closure) -> None:
        self.n = n
        self.reverse = not A.is_var(n.object) and A.is_var(n.subject)
        self.const: Identifier | None = None
        if not A.is_var(n.subject):
            self.const = n.subject  # type: ignore[assignment]
        elif self.reverse:
            self.const = n.object  # type: ignore[assignment]
        # the edge variables in walking order
        self.a, self.b = (n.dst, n.src) if self.reverse else (n.src, n.dst)

    def node(self, m: dict[str, Identifier], var: str) -> Node:
        g = self.n.graph
        return (m[g], m[var]) if g is not None else m[var]

    def bind(self, x: Node, var: str) -> dict[str, Identifier]:
        g = self.n.graph
        if g is None:
            return {var: x}  # type: ignore[dict-item]
        return {g: x[0], var: x[1]}  # type: ignore[index]

    def term(self, x: Node) -> Identifier:
        return x[1] if self.n.graph is not None else x  # type: ignore[index,return-value]

    def is_source(self, x: Node) -> bool:
        return self.const is None or self.term(x) == self.const

    def row(self, x: Node, y: Node) -> Mu:
        """The output mapping of the pair T(x, y)."""
        n = self.n
        if self.const is None:
            out = self.bind(y, n.object)  # type: ignore[arg-type]
            out[n.subject] = self.term(x)  # type: ignore[index]
            return mu(out)
        return mu(self.bind(y, n.subject if self.reverse else n.object))  # type: ignore[arg-type]

    def pair(self, m: Mu) -> Pair:
        d = dict(m)
        n = self.n
        if self.const is None:
            return self.node(d, n.subject), self.node(d, n.object)  # type: ignore[arg-type]
        end = n.subject if self.reverse else n.object
        y = self.node(d, end)  # type: ignore[arg-type]
        x = (d[n.graph], self.const) if n.graph is not None else self.const
        return x, y


class _Before:
    """The edges and T before the batch, read from the stored relations
    (each lookup once per batch)."""

    def __init__(self, shape: _Shape, edges: KRelation, reach: KRelation) -> None:
        self.shape, self.edges, self.reach_rel = shape, edges, reach
        self.cache: dict[tuple[str, Node], frozenset[Node]] = {}

    def _look(self, kind: str, x: Node, rel: KRelation, probe_var: str | None,
              result: Callable[[dict[str, Identifier]], Node]) -> frozenset[Node]:
        key = (kind, x)
        found = self.cache.get(key)
        if found is None:
            probe = self.shape.bind(x, probe_var) if probe_var is not None else (
                {self.shape.n.graph: x[0]} if self.shape.n.graph is not None else {})  # type: ignore[index]
            rows = rel.compatible_many([probe])[0]
            found = frozenset(result(dict(m)) for m, k in rows if k > 0)
            self.cache[key] = found
        return found

    def out(self, x: Node) -> Collection[Node]:
        s = self.shape
        return self._look("out", x, self.edges, s.a, lambda d: s.node(d, s.b))

    def inn(self, y: Node) -> Collection[Node]:
        s = self.shape
        return self._look("in", y, self.edges, s.b, lambda d: s.node(d, s.a))

    def succ(self, x: Node) -> Collection[Node]:
        s = self.shape
        if s.const is None:
            return self._look("succ", x, self.reach_rel, s.n.subject,  # type: ignore[arg-type]
                              lambda d: s.node(d, s.n.object))  # type: ignore[arg-type]
        if not s.is_source(x):
            return frozenset()
        end = s.n.subject if s.reverse else s.n.object
        return self._look("succ", x, self.reach_rel, None, lambda d: s.node(d, end))  # type: ignore[arg-type]

    def pred(self, y: Node) -> Collection[Node]:
        s = self.shape
        if s.const is None:
            return self._look("pred", y, self.reach_rel, s.n.object,  # type: ignore[arg-type]
                              lambda d: s.node(d, s.n.subject))  # type: ignore[arg-type]
        end = s.n.subject if s.reverse else s.n.object
        return self._look("pred", y, self.reach_rel, end,  # type: ignore[arg-type]
                          lambda d: s.pair(mu(d))[0])

    def reach(self, x: Node, y: Node) -> bool:
        return y in self.succ(x) if self.shape.const is not None else x in self.pred(y)


def closure_delta(n: P.Closure, edges_before: KRelation, edges_delta: KSet,
                  before: KRelation, max_rows: int | None = None) -> KSet:
    """ΔT of node ``n`` from its child's old output and delta and its own old
    output (SPARQL 1.1 §18.4 ALP: the edges are a set, T is a set). More
    than ``max_rows`` new pairs raise ``ViewTooLarge`` as soon as they are
    derived (a closure can be quadratic in its edges)."""
    shape = _Shape(n)
    was = edges_before.get_many(edges_delta)
    inserted: set[Pair] = set()
    deleted: set[Pair] = set()
    for m, k in edges_delta.items():
        old = was.get(m, 0)
        if (old > 0) == (old + k > 0):
            continue
        d = dict(m)
        e = (shape.node(d, shape.a), shape.node(d, shape.b))
        (inserted if old + k > 0 else deleted).add(e)
    if not inserted and not deleted:
        return {}
    g = _Before(shape, edges_before, before)
    removed = backward_forward(g, deleted, shape.is_source) if deleted else set()
    added = insert(g, removed, deleted, inserted, shape.is_source, max_rows)
    out: KSet = {}
    for x, y in removed - added:
        out[shape.row(x, y)] = -1
    for x, y in added - removed:
        out[shape.row(x, y)] = 1
    return out

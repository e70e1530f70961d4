"""An in-memory RDF dataset with the effective change ΔG of each update.

Quads are ``(g, s, p, o)`` with ``g = None`` for the default graph. Graphs are
sets (architecture decision 5). With ``union_default`` the default graph is the
union of the named graphs, its triples support-counted, so a view sees a triple
appear or vanish only when its last copy does.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from rdflib.term import Identifier

from views import algebra as A
from views.terms import canonical

Quad = tuple  # (g | None, s, p, o)
Delta = dict  # dict[Quad, int]: +1 insert, -1 delete; effective set changes


@dataclass(frozen=True, kw_only=True)
class Spec:
    """The dataset a view reads (SPARQL 1.1 §13.2): with no FROM and no FROM
    NAMED (``default`` and ``named`` None), the default graph is the union of
    every document and every document is a named graph; otherwise the default
    graph is the merge of the FROM documents and the named graphs are the
    FROM NAMED ones (each empty when not given). ``graphs``: the view reads
    named graphs at all (a GRAPH pattern), so their changes matter.
    ``exclude``: a document (pod, path) that is in neither — the one the view
    writes its graph into, so it never reads its own output."""

    default: tuple[str, ...] | None = None
    named: tuple[str, ...] | None = None
    graphs: bool = False
    exclude: tuple[int, str] | None = None

    @property
    def union(self) -> bool:
        """The default graph is the union of every document (no FROM, nothing
        excluded)."""
        return self.default is None and self.exclude is None

    @property
    def documents(self) -> bool:
        """The view reads documents, not only the union default graph."""
        return self.graphs or not self.union


class QuadStore(Protocol):
    """What the evaluators read: quad lookups and the named graphs."""

    def match(self, g: object, s: Identifier | None, p: Identifier | None,
              o: Identifier | None) -> Iterable[Quad]: ...

    def match_many(self, keys: Sequence[tuple]) -> list[list[Quad]]:
        """``match`` for each ``(g, s, p, o)`` key, aligned with ``keys``: one
        round trip where the store is a database."""
        ...

    def graph_names(self) -> list[Identifier]: ...

    def graph_size(self, g: Identifier) -> int: ...


class GraphIndex:
    """One graph: a set of triples with s/p/o hash indexes."""

    def __init__(self) -> None:
        self.triples: set[tuple] = set()
        self.by: tuple[defaultdict[Identifier, set[tuple]], ...] = (
            defaultdict(set), defaultdict(set), defaultdict(set))

    def add(self, t: tuple) -> None:
        self.triples.add(t)
        for i in range(3):
            self.by[i][t[i]].add(t)

    def remove(self, t: tuple) -> None:
        self.triples.discard(t)
        for i in range(3):
            bucket = self.by[i][t[i]]
            bucket.discard(t)
            if not bucket:
                del self.by[i][t[i]]

    def match(self, s: Identifier | None, p: Identifier | None,
              o: Identifier | None) -> Iterable[tuple]:
        bound = [(i, x) for i, x in enumerate((s, p, o)) if x is not None]
        if not bound:
            return self.triples
        if len(bound) == 3:
            t = (s, p, o)
            return (t,) if t in self.triples else ()
        i, x = min(bound, key=lambda b: len(self.by[b[0]].get(b[1], ())))
        cands = self.by[i].get(x, ())
        return [t for t in cands if all(t[j] == y for j, y in bound)]


class Dataset:
    """Default graph plus named graphs; ``apply`` returns the effective ΔG."""

    def __init__(self, union_default: bool = False) -> None:
        self.union_default = union_default
        self.default = GraphIndex()
        self.named: dict[Identifier, GraphIndex] = {}
        self._counts: dict[tuple, int] = defaultdict(int)

    def __len__(self) -> int:
        return len(self.default.triples) + sum(len(g.triples) for g in self.named.values())

    def quads(self) -> Iterator[Quad]:
        for t in self.default.triples:
            yield (None, *t)
        for g, idx in self.named.items():
            for t in idx.triples:
                yield (g, *t)

    def contains(self, q: Quad) -> bool:
        g, t = q[0], tuple(q[1:])
        graph = self.default if g is None else self.named.get(g)
        return graph is not None and t in graph.triples

    def load(self, triples: Iterable[tuple[Identifier, Identifier, Identifier]]) -> None:
        """Add triples to the default graph, their terms canonical already
        (decoded from the dictionary): ``apply`` without its ΔG."""
        for t in triples:
            self.default.add(t)

    def apply(self, changes: Iterable[tuple[Quad, int]]) -> Delta:
        """Apply inserts (+1) and deletes (-1); return what really changed."""
        delta: Delta = {}
        for given, sign in changes:
            q = tuple(map(canonical, given))  # one form per term (decision 8)
            if self.union_default and q[0] is None:
                raise ValueError("with a union default graph, write to a named graph")
            if (sign > 0) == self.contains(q):
                continue  # inserting a present quad or deleting an absent one
            self._set(q, sign > 0, delta)
            if self.union_default:
                t = tuple(q[1:])
                before = self._counts[t]
                self._counts[t] = before + (1 if sign > 0 else -1)
                if (before == 0) != (self._counts[t] == 0):
                    self._set((None, *t), sign > 0, delta)
                if not self._counts[t]:
                    del self._counts[t]
        return delta

    def _set(self, q: Quad, present: bool, delta: Delta) -> None:
        g, t = q[0], tuple(q[1:])
        if g is None:
            graph = self.default
        else:
            graph = self.named.get(g) or self.named.setdefault(g, GraphIndex())
        (graph.add if present else graph.remove)(t)
        if g is not None and not graph.triples:
            del self.named[g]
        v = delta.get(q, 0) + (1 if present else -1)
        if v:
            delta[q] = v
        else:
            delta.pop(q, None)

    def graph_names(self) -> list[Identifier]:
        """The non-empty named graphs."""
        return list(self.named)

    def graph_size(self, g: Identifier) -> int:
        graph = self.named.get(g)
        return len(graph.triples) if graph is not None else 0

    def match(self, g: object, s: Identifier | None, p: Identifier | None,
              o: Identifier | None) -> Iterator[Quad]:
        """Quads matching; ``g`` is None (default graph), a graph name, or
        ``ANY_NAMED`` for every named graph."""
        if g is None:
            for t in self.default.match(s, p, o):
                yield (None, *t)
            return
        graphs: Iterable[tuple[Identifier, GraphIndex]]
        if g is ANY_NAMED:
            graphs = self.named.items()
        else:
            assert isinstance(g, Identifier)
            graphs = ((g, self.named[g]),) if g in self.named else ()
        for name, idx in graphs:
            for t in idx.match(s, p, o):
                yield (name, *t)

    def match_many(self, keys: Sequence[tuple]) -> list[list[Quad]]:
        return [list(self.match(*k)) for k in keys]


ANY_NAMED = object()


class Before:
    """The dataset as it was before ``delta``: G = G' - ΔG, read through G'."""

    def __init__(self, ds: QuadStore, delta: Delta) -> None:
        self.ds, self.delta = ds, delta
        net: dict[Identifier, int] = defaultdict(int)
        for q, sign in delta.items():
            if q[0] is not None:
                net[q[0]] += sign
        self._net = net
        self._removed = [q for q, sign in delta.items() if sign < 0]
        # the deleted quads by the terms a lookup binds, one index per
        # shape of lookup (which of s, p, o it binds), built when first asked
        self._by: dict[tuple[bool, ...], dict[tuple, list[Quad]]] = {}

    def graph_size(self, g: Identifier) -> int:
        return self.ds.graph_size(g) - self._net.get(g, 0)

    def graph_names(self) -> list[Identifier]:
        names = set(self.ds.graph_names()) | set(self._net)
        return [g for g in names if self.graph_size(g) > 0]

    def match(self, g: object, s: Identifier | None, p: Identifier | None,
              o: Identifier | None) -> Iterator[Quad]:
        return iter(self.match_many([(g, s, p, o)])[0])

    def match_many(self, keys: Sequence[tuple]) -> list[list[Quad]]:
        now = self.ds.match_many(keys)
        return [[q for q in found if self.delta.get(q, 0) <= 0] + self._deleted(key)
                for key, found in zip(keys, now)]

    def _deleted(self, key: tuple) -> list[Quad]:
        """The deleted quads that answer ``key``: those with its bound terms
        (one probe of the index of its shape), in its graph."""
        shape = tuple(x is not None for x in key[1:])
        index = self._by.get(shape)
        if index is None:
            index = self._by[shape] = defaultdict(list)
            for q in self._removed:
                index[tuple(x for x, bound in zip(q[1:], shape) if bound)].append(q)
        found = index.get(tuple(x for x in key[1:] if x is not None), ())
        return [q for q in found if quad_matches(q, *key)]


def quad_matches(q: tuple, g: object, s: object, p: object, o: object) -> bool:
    """Does quad ``q`` answer the lookup (g, s, p, o)? None is a wildcard."""
    if g is ANY_NAMED:
        if q[0] is None:
            return False
    elif q[0] != g:
        return False
    return all(want is None or want == have for want, have in zip((s, p, o), q[1:]))


def spec_of(q: A.Query, pattern: A.Pattern) -> Spec:
    """The dataset ``Spec`` of a parsed query whose normalised pattern is
    ``pattern``."""
    given = bool(q.from_graphs or q.from_named)
    return Spec(default=tuple(map(str, q.from_graphs)) if given else None,
                named=tuple(map(str, q.from_named)) if given else None,
                graphs=A.uses_named_graphs(pattern))

"""K-sets of solution mappings (counting paper §3.2).

A solution mapping is a ``Mu``: a frozenset of ``(variable, term)`` pairs. A
K-set maps mappings to non-zero integers. ``KRel`` is a K-set split by schema
(paper §4.5.3) with hash indexes built on demand for compatibility probes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence

from rdflib.term import Identifier

Mu = frozenset  # frozenset[tuple[str, Identifier]]
KSet = dict  # dict[Mu, int]


def mu(d: Mapping[str, Identifier]) -> Mu:
    """The mapping of a dict.

    >>> sorted(mu({"x": 1, "y": 2}))
    [('x', 1), ('y', 2)]
    """
    return frozenset(d.items())


def compatible(a: Mapping[str, Identifier], b: Mapping[str, Identifier]) -> bool:
    """μ1 ~ μ2: they agree on every shared variable (SPARQL 1.1 §18.3)."""
    if len(a) > len(b):
        a, b = b, a
    return all(b.get(k, v) == v for k, v in a.items())


def add_into(target: KSet, source: Iterable[tuple[Mu, int]], sign: int = 1) -> KSet:
    """target += sign * source, dropping zeros (K-set Union)."""
    for m, k in source:
        v = target.get(m, 0) + sign * k
        if v:
            target[m] = v
        else:
            target.pop(m, None)
    return target


class KRel:
    """A materialised K-set, split by schema, with compatibility probes.

    >>> r = KRel()
    >>> r.add(mu({"x": 1, "y": 2}), 3)
    >>> r.add(mu({"x": 1}), 1)
    >>> sorted(k for _, k in r.compatible({"x": 1, "y": 5}))
    [1]
    """

    def __init__(self, rows: KSet | None = None) -> None:
        self.rows: KSet = {}
        self.by_schema: dict[frozenset[str], set[Mu]] = defaultdict(set)
        self._idx: dict[tuple[frozenset[str], tuple[str, ...]], dict[tuple, set[Mu]]] = {}
        for m, k in (rows or {}).items():
            self.add(m, k)

    def __len__(self) -> int:
        return len(self.rows)

    def get(self, m: Mu) -> int:
        return self.rows.get(m, 0)

    def get_many(self, ms: Iterable[Mu]) -> dict[Mu, int]:
        """The annotations of ``ms`` that are not 0 (a database answers them
        in one query)."""
        return {m: k for m in ms if (k := self.rows.get(m, 0))}

    def add(self, m: Mu, k: int) -> None:
        if not k:
            return
        old = self.rows.get(m, 0)
        new = old + k
        if old and not new:
            del self.rows[m]
            self._index(m, remove=True)
        elif new:
            self.rows[m] = new
            if not old:
                self._index(m, remove=False)

    def apply(self, delta: KSet) -> None:
        for m, k in delta.items():
            self.add(m, k)

    def _index(self, m: Mu, remove: bool) -> None:
        schema = frozenset(v for v, _ in m)
        bucket = self.by_schema[schema]
        (bucket.discard if remove else bucket.add)(m)
        if remove and not bucket:
            del self.by_schema[schema]
        d = dict(m)
        for (s, keys), index in self._idx.items():
            if s != schema:
                continue
            key = tuple(d[k] for k in keys)
            if remove:
                index[key].discard(m)
                if not index[key]:
                    del index[key]
            else:
                index.setdefault(key, set()).add(m)

    def compatible(self, probe: Mapping[str, Identifier],
                   require_shared: bool = False) -> Iterator[tuple[Mu, int]]:
        """Rows compatible with ``probe``; with ``require_shared`` only rows
        that share at least one variable with it (MINUS, §18.5)."""
        for schema in list(self.by_schema):
            keys = tuple(sorted(schema.intersection(probe)))
            if require_shared and not keys:
                continue
            if not keys:
                for m in self.by_schema.get(schema, ()):
                    yield m, self.rows[m]
                continue
            index = self._idx.get((schema, keys))
            if index is None:
                index = self._build(schema, keys)
            for m in index.get(tuple(probe[k] for k in keys), ()):
                yield m, self.rows[m]

    def compatible_many(self, probes: Sequence[Mapping[str, Identifier]],
                        require_shared: bool = False) -> list[list[tuple[Mu, int]]]:
        """``compatible`` for each probe, aligned with ``probes``."""
        return [list(self.compatible(p, require_shared)) for p in probes]

    def _build(self, schema: frozenset[str], keys: tuple[str, ...]) -> dict[tuple, set[Mu]]:
        index: dict[tuple, set[Mu]] = {}
        for m in self.by_schema.get(schema, ()):
            d = dict(m)
            index.setdefault(tuple(d[k] for k in keys), set()).add(m)
        self._idx[(schema, keys)] = index
        return index

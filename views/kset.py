"""K-sets of solution mappings (counting paper §3.2).

A solution mapping is a ``Mu``: a frozenset of ``(variable, term)`` pairs. A
K-set maps mappings to non-zero integers. ``KRel`` is a K-set split by schema
(paper §4.5.3) with hash indexes built on demand for compatibility probes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Protocol

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


def project(r: KSet, names: Iterable[str]) -> KSet:
    """K-set Project (paper §3.2): annotations of equal projections summed.

    >>> project({mu({"x": 1, "y": 2}): 2, mu({"x": 1, "y": 3}): 1}, ["x"])
    {frozenset({('x', 1)}): 3}
    """
    keep = set(names)
    out: KSet = {}
    for m, k in r.items():
        add_into(out, [(frozenset(x for x in m if x[0] in keep), k)])
    return out


def join_into(out: KSet, rows: Iterable[tuple[Mu, int]], rel: KRelation,
              keep: Callable[[dict[str, Identifier]], bool] | None = None,
              limit: int | None = None) -> KSet:
    """out += rows ⋈ rel (K-set Join, paper §3.2): rel is probed for all
    rows at once; ``keep`` filters the merged mappings. With ``limit``, it
    stops once ``out`` holds more rows than that (incomplete: the caller
    refuses it), so a cartesian product is not built whole first.

    >>> sorted(join_into({}, [(mu({"x": 1}), 2)], KRel({mu({"x": 1, "y": 5}): 3})).values())
    [6]
    """
    left = [(dict(m1), k1) for m1, k1 in rows]
    for (d1, k1), found in zip(left, rel.compatible_many([d for d, _ in left])):
        for m2, k2 in found:
            merged = {**d1, **dict(m2)}
            if keep is None or keep(merged):
                add_into(out, [(mu(merged), k1 * k2)])
        if limit is not None and len(out) > limit:
            break
    return out


def minus_blocks(left: Mapping[str, Identifier], right: Mapping[str, Identifier],
                 graph_var: str | None = None) -> bool:
    """μ2 removes μ1 in MINUS (SPARQL 1.1 §18.5): compatible and sharing a
    variable; a pushed-down GRAPH variable does not count as shared."""
    return bool(left.keys() & right.keys() - {graph_var}) and compatible(left, right)


class KRelation(Protocol):
    """A node's stored output, wherever it lives (in memory: ``KRel``; in
    Postgres: ``storage.krel.PgRel``; a BGP read through the data:
    ``views.interpret.VirtualBGP``). Every read takes a batch of keys, so a
    database answers it in one query per table."""

    def get_many(self, ms: Iterable[Mu]) -> dict[Mu, int]:
        """The non-zero annotations of ``ms``."""
        ...

    def compatible_many(self, probes: Sequence[Mapping[str, Identifier]],
                        require_shared: bool = False) -> Sequence[Iterable[tuple[Mu, int]]]:
        """For each probe, the rows compatible with it (with
        ``require_shared``, only rows sharing a variable with it)."""
        ...

    @property
    def rows(self) -> KSet:
        """Every row."""
        ...

    def apply(self, delta: KSet) -> int:
        """Add ``delta``; rows whose annotation reaches 0 are gone. How many
        rows there are now more (or fewer, negative) than before."""
        ...


class KRel:
    """A materialised K-set, split by schema, with compatibility probes.

    >>> r = KRel()
    >>> r.apply({mu({"x": 1, "y": 2}): 3, mu({"x": 1}): 1})
    2
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

    def add(self, m: Mu, k: int) -> int:
        """Add ``k`` to ``m``'s annotation; the change in the number of rows."""
        if not k:
            return 0
        old = self.rows.get(m, 0)
        new = old + k
        if old and not new:
            del self.rows[m]
            self._index(m, remove=True)
            return -1
        self.rows[m] = new
        if not old:
            self._index(m, remove=False)
            return 1
        return 0

    def apply(self, delta: KSet) -> int:
        return sum(self.add(m, k) for m, k in delta.items())

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
                        require_shared: bool = False) -> list[Iterator[tuple[Mu, int]]]:
        """``compatible`` for each probe, aligned with ``probes``: each read
        as it is consumed (a product is not held whole)."""
        return [self.compatible(p, require_shared) for p in probes]

    def _build(self, schema: frozenset[str], keys: tuple[str, ...]) -> dict[tuple, set[Mu]]:
        index: dict[tuple, set[Mu]] = {}
        for m in self.by_schema.get(schema, ()):
            d = dict(m)
            index.setdefault(tuple(d[k] for k in keys), set()).add(m)
        self._idx[(schema, keys)] = index
        return index

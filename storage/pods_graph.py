"""A view's input graph in Postgres: the default graphs of the pods it may
read, as one set (decision 5), and their documents as named graphs, behind the interface the engine reads
(``views.dataset.QuadStore``): lookups for a whole batch of keys, one query
per set of bound positions."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cached_property

from rdflib.term import Identifier, URIRef
from sqlalchemy import Connection, Row, text

from storage import documents
from storage.arrays import columns, unnest
from storage.codec import Codec
from storage.documents import Documents
from views.dataset import ANY_NAMED, Spec

DEFAULT_BASE = "http://127.0.0.1:8000/pods"  # the server's pods when none is configured
REMEMBERED = 100_000  # rows of lookups a PodsGraph keeps for a job's later probes


class PodsGraph:
    """A view's input: the default graphs of the pods it may read, as one set
    (decision 5), and their documents as named graphs, as ``spec`` (the
    query's FROM and FROM NAMED) says: with neither, the default graph is
    ``pod_triples`` and every document of the pods is a named graph; with
    them, the merge of the FROM documents and the FROM NAMED ones — of the
    pods the view may read only (consent)."""

    def __init__(self, conn: Connection, codec: Codec, pods: list[int],
                 base: str = DEFAULT_BASE, spec: Spec | None = None) -> None:
        self.conn, self.codec, self.pods, self.base = conn, codec, pods, base
        self.spec = spec or Spec()
        self.docs = Documents(conn, pods, base)
        # rows answering each lookup made: a job's snapshot does not change, and
        # a delta program probes the same keys again and again (a BGP's delta
        # joins every pattern but one, once per pattern); up to REMEMBERED rows
        self._answered: dict[tuple, list[tuple]] = {}
        self._remembered = 0

    def with_pods(self, pods: list[int]) -> PodsGraph:
        return PodsGraph(self.conn, self.codec, pods, self.base, self.spec)

    @cached_property
    def default_rids(self) -> list[int] | None:
        """The documents merged into the default graph (None: the pods' union)."""
        if self.spec.union:
            return None
        return [r for r in self.docs.among(self.spec.default) if r != self._excluded]

    @cached_property
    def named_rids(self) -> list[int]:
        return [r for r in self.docs.among(self.spec.named) if r != self._excluded]

    @cached_property
    def _excluded(self) -> int | None:
        if self.spec.exclude is None:
            return None
        pod, path = self.spec.exclude
        return self.docs.ids.get(self.docs.iri(pod, path)) if pod in self.docs.prefixes else None

    @cached_property
    def _named_set(self) -> frozenset[int]:
        return frozenset(self.named_rids)

    def graph_names(self) -> list[Identifier]:
        if not self.pods:
            return []
        return [URIRef(self.docs.iris[r]) for r in self.docs.non_empty(self.named_rids)]

    def graph_size(self, g: Identifier) -> int:
        rid = self._named(g)
        return 0 if rid is None else self.docs.size(rid)

    def _named(self, g: object) -> int | None:
        """The resource of the named graph ``g``, if the dataset has it."""
        if not self.pods:
            return None
        rid = self.docs.ids.get(str(g))
        return rid if rid is not None and rid in self._named_set else None

    def match(self, g: object, s: Identifier | None, p: Identifier | None,
              o: Identifier | None) -> Iterator[tuple]:
        return iter(self.match_many([(g, s, p, o)])[0])

    def match_many(self, keys: Sequence[tuple]) -> list[list[tuple]]:
        """The quads answering each ``(g, s, p, o)`` key: one query per source
        (the union default graph, the merge of the FROM documents, the named
        graphs) and set of bound positions, the keys joined in as arrays."""
        out: list[list[tuple]] = [[] for _ in keys]
        if not self.pods:
            return out
        ids = self.codec.encode((t for k in keys for t in k[1:] if t is not None), add=False)
        groups: dict[tuple[str, tuple[str, ...]], dict[tuple, list[int]]] = {}
        for i, (g, *spo) in enumerate(keys):
            if any(t is not None and t not in ids for t in spo):
                continue  # an unknown term matches nothing
            bound = tuple(c for c, t in zip("spo", spo) if t is not None)
            key = tuple(ids[t] for t in spo if t is not None)
            if g is None:
                source = "union" if self.default_rids is None else "merge"
            elif g is ANY_NAMED:
                source = "named"
            elif (rid := self._named(g)) is not None:
                source, bound, key = "named", ("g", *bound), (rid, *key)
            else:
                continue  # no such named graph
            groups.setdefault((source, bound), {}).setdefault(key, []).append(i)
        for (source, bound), by_key in groups.items():
            found = self._answers(source, bound, list(by_key))
            names = self.codec.decode(x for rows in found.values() for r in rows for x in r[1:])
            for key, rows in found.items():
                quads = [(None if r[0] is None else URIRef(self.docs.iris[r[0]]),
                          names[r[1]], names[r[2]], names[r[3]]) for r in rows]
                for i in by_key[key]:
                    out[i] = quads
        return out

    def _answers(self, source: str, bound: tuple[str, ...],
                 keys: list[tuple]) -> dict[tuple, list[tuple]]:
        """``_lookup``'s rows by key, the keys answered before in this job
        not asked again."""
        answered = self._answered
        asked = [k for k in keys if (source, bound, k) not in answered]
        found = self._lookup(source, bound, asked) if asked else {}
        if self._remembered < REMEMBERED:
            for k in asked:
                rows = answered[(source, bound, k)] = found.get(k, [])
                self._remembered += len(rows) + 1
        return {k: found[k] if k in found else answered.get((source, bound, k), [])
                for k in keys}

    def _lookup(self, source: str, bound: tuple[str, ...],
                keys: list[tuple]) -> dict[tuple, list[tuple]]:
        """Rows (g or None, s, p, o) answering each key, by key."""
        if source == "union":
            rows = [(None, *r) for r in self._union(bound, keys)]
        elif source == "merge":
            rows = [(None, *r) for r in documents.lookup(
                self.conn, self.default_rids or [], bound, keys, distinct=True)]
        else:
            rows = [tuple(r) for r in documents.lookup(self.conn, self.named_rids, bound, keys,
                                                       distinct=False)]
        out: dict[tuple, list[tuple]] = {}
        for r in rows:
            out.setdefault(tuple(r["gspo".index(c)] for c in bound), []).append(r)
        return out

    def _union(self, bound: tuple[str, ...], keys: list[tuple]) -> list[tuple]:
        # a triple in several pods is one triple (decision 5)
        distinct = "DISTINCT " if len(self.pods) > 1 else ""
        if not bound:
            return [tuple(r) for r in self.conn.execute(text(
                f"SELECT {distinct}s, p, o FROM pod_triples WHERE pod_id = ANY(:pods)"),
                {"pods": self.pods})]
        on = "".join(f" AND t.{c} = x.{c}" for c in bound)
        return [tuple(r) for r in self.conn.execute(text(
            f"SELECT {distinct}t.s, t.p, t.o FROM {unnest(bound)} "
            f"JOIN pod_triples AS t ON t.pod_id = ANY(:pods){on}"),
            {"pods": self.pods, **columns(keys, bound)})]


def triple_count(conn: Connection, pods: list[int]) -> int:
    """Triples held by these pods (with repeats across pods): the size of a
    view's input, for the job router."""
    return int(conn.execute(text("SELECT count(*) FROM pod_triples WHERE pod_id = ANY(:p)"),
                            {"p": pods}).scalar_one())


# The graph's triples as Postgres's statistics last counted them (-1: never)
GRAPH_ROWS = "(SELECT reltuples FROM pg_class WHERE oid = CAST('pod_triples' AS regclass))"


def analyzed(conn: Connection) -> float:
    """The pods' triples and the dictionary analyzed: the triples counted.
    For a graph grown past twice what its statistics counted, where
    nothing else analyzes it (a Postgres without autovacuum, whose graph
    came by writes, not by loads: ``pods.loading`` analyzes; design note
    183) — without them Postgres takes a predicate's triples for one row
    and reads them all to join a batch's few."""
    conn.execute(text("ANALYZE pod_triples, terms"))
    return float(conn.execute(text(f"SELECT {GRAPH_ROWS}")).scalar_one())


def pod_entry(conn: Connection, pod: int, others: list[int]) -> list[Row]:
    """The triples of ``pod`` that none of ``others`` holds: what the pod adds
    to (or takes from) a view's input when it enters (or leaves)."""
    return list(conn.execute(text(
        "SELECT s, p, o FROM pod_triples t WHERE t.pod_id = :p AND NOT EXISTS ("
        " SELECT 1 FROM pod_triples u WHERE u.pod_id = ANY(:others) AND u.s = t.s "
        " AND u.p = t.p AND u.o = t.o)"), {"p": pod, "others": others}).all())


def count_matching(conn: Connection, pods: list[int], s: int | None, p: int | None,
                   o: int | None, cap: int) -> int:
    """Triples of these pods matching (s, p, o) (term ids; None: any), counted
    up to ``cap``."""
    where = "".join(f" AND {c} = :{c}" for c, v in (("s", s), ("p", p), ("o", o))
                    if v is not None)
    return int(conn.execute(text(
        f"SELECT count(*) FROM (SELECT 1 FROM pod_triples WHERE pod_id = ANY(:pods){where} "
        "LIMIT :cap) AS x"), {"pods": pods, "s": s, "p": p, "o": o, "cap": cap}).scalar_one())

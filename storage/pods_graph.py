"""A view's input graph in Postgres: the default graphs of the pods it may
read, as one set (decision 5), behind the interface the engine reads
(``views.dataset.QuadStore``): lookups for a whole batch of keys, one query
per set of bound positions."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from rdflib.term import Identifier
from sqlalchemy import Connection, Row, text

from storage.arrays import columns, unnest
from storage.codec import Codec


class PodsGraph:
    """A view's input: the default graphs of the pods it may read, as one set
    (decision 5). Named graphs are not exposed to views yet."""

    def __init__(self, conn: Connection, codec: Codec, pods: list[int]) -> None:
        self.conn, self.codec, self.pods = conn, codec, pods

    def graph_names(self) -> list[Identifier]:
        return []

    def graph_size(self, g: Identifier) -> int:
        return 0

    def match(self, g: object, s: Identifier | None, p: Identifier | None,
              o: Identifier | None) -> Iterator[tuple]:
        return iter(self.match_many([(g, s, p, o)])[0])

    def match_many(self, keys: Sequence[tuple]) -> list[list[tuple]]:
        """The triples answering each ``(g, s, p, o)`` key: one query per set
        of bound positions, the keys joined in as arrays."""
        out: list[list[tuple]] = [[] for _ in keys]
        if not self.pods:
            return out
        ids = self.codec.encode((t for k in keys for t in k[1:] if t is not None), add=False)
        groups: dict[tuple[str, ...], dict[tuple, list[int]]] = {}
        for i, (g, *spo) in enumerate(keys):
            if g is not None or any(t is not None and t not in ids for t in spo):
                continue  # no named graphs yet; an unknown term matches nothing
            bound = tuple(c for c, t in zip("spo", spo) if t is not None)
            key = tuple(ids[t] for t in spo if t is not None)
            groups.setdefault(bound, {}).setdefault(key, []).append(i)
        for bound, by_key in groups.items():
            found = self._lookup(bound, list(by_key))
            names = self.codec.decode(x for rows in found.values() for r in rows for x in r)
            for key, rows in found.items():
                quads = [(None, names[r[0]], names[r[1]], names[r[2]]) for r in rows]
                for i in by_key[key]:
                    out[i] = quads
        return out

    def _lookup(self, bound: tuple[str, ...], keys: list[tuple]) -> dict[tuple, list[tuple]]:
        # a triple in several pods is one triple (decision 5)
        distinct = "DISTINCT " if len(self.pods) > 1 else ""
        if not bound:
            rows = self.conn.execute(text(f"SELECT {distinct}s, p, o FROM pod_triples "
                                          "WHERE pod_id = ANY(:pods)"), {"pods": self.pods})
            return {(): [tuple(r) for r in rows]}
        on = "".join(f" AND t.{c} = x.{c}" for c in bound)
        rows = self.conn.execute(text(
            f"SELECT {distinct}t.s, t.p, t.o FROM {unnest(bound)} "
            f"JOIN pod_triples AS t ON t.pod_id = ANY(:pods){on}"),
            {"pods": self.pods, **columns(keys, bound)})
        out: dict[tuple, list[tuple]] = {}
        for r in rows:
            t = tuple(r)
            out.setdefault(tuple(t["spo".index(c)] for c in bound), []).append(t)
        return out


def triple_count(conn: Connection, pods: list[int]) -> int:
    """Triples held by these pods (with repeats across pods): the size of a
    view's input, for the job router."""
    return int(conn.execute(text("SELECT count(*) FROM pod_triples WHERE pod_id = ANY(:p)"),
                            {"p": pods}).scalar_one())


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

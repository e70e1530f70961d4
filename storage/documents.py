"""The pods' documents as named graphs (issue 19; the Schmedding paper's
dataset from linked-data documents): every resource of a pod is a named graph
whose name is its IRI (``{base}/{pod}/{path}``), its triples the resource's
quads. What a view's input (``storage.pods_graph.PodsGraph``) reads when its
query names graphs (GRAPH) or documents (FROM, FROM NAMED)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from urllib.parse import quote

from sqlalchemy import Connection, Row, text

from storage import changes
from storage.arrays import columns, unnest


class Documents:
    """The resources of a view's pods, by id and by IRI (as of the
    transaction's snapshot)."""

    def __init__(self, conn: Connection, pods: list[int], base: str) -> None:
        self.conn, self.pods, self.base = conn, pods, base.rstrip("/")

    @cached_property
    def prefixes(self) -> dict[int, str]:
        """Each pod's IRI prefix: its root container's IRI."""
        rows = self.conn.execute(text("SELECT id, name FROM pods WHERE id = ANY(:p)"),
                                 {"p": self.pods})
        return {int(r.id): f"{self.base}/{quote(r.name)}/" for r in rows}

    @cached_property
    def iris(self) -> dict[int, str]:
        """Resource id -> IRI, for every resource of the pods."""
        rows = self.conn.execute(text(
            "SELECT id, pod_id, path FROM resources WHERE pod_id = ANY(:p)"), {"p": self.pods})
        return {int(r.id): self.prefixes[int(r.pod_id)] + r.path for r in rows}

    @cached_property
    def ids(self) -> dict[str, int]:
        return {iri: rid for rid, iri in self.iris.items()}

    def iri(self, pod: int, path: str) -> str:
        return self.prefixes[pod] + path

    def among(self, names: tuple[str, ...] | None) -> list[int]:
        """The resources named (all of them when ``names`` is None)."""
        if names is None:
            return sorted(self.iris)
        return sorted(self.ids[n] for n in set(names) if n in self.ids)

    def non_empty(self, rids: list[int]) -> list[int]:
        """Those of ``rids`` that hold a triple (the dataset's named graphs)."""
        return [int(r[0]) for r in self.conn.execute(text(
            "SELECT r FROM unnest(CAST(:r AS bigint[])) AS r WHERE EXISTS "
            "(SELECT 1 FROM quads q WHERE q.resource_id = r)"), {"r": rids})]

    def size(self, rid: int) -> int:
        return int(self.conn.execute(text("SELECT count(*) FROM quads WHERE resource_id = :r"),
                                     {"r": rid}).scalar_one())


def lookup(conn: Connection, rids: list[int], bound: tuple[str, ...], keys: list[tuple],
           distinct: bool) -> list[Row]:
    """The quads of resources ``rids`` matching each key (values of the
    ``bound`` columns among g, s, p, o; g a resource id): rows (g, s, p, o),
    or (s, p, o) once each with ``distinct`` (the merge of the resources)."""
    cols = "DISTINCT t.s, t.p, t.o" if distinct else "t.resource_id AS g, t.s, t.p, t.o"
    if not bound:
        return list(conn.execute(text(
            f"SELECT {cols} FROM quads t WHERE t.resource_id = ANY(:rids)"), {"rids": rids}))
    on = "".join(f" AND t.{'resource_id' if c == 'g' else c} = x.{c}" for c in bound)
    return list(conn.execute(text(
        f"SELECT {cols} FROM {unnest(bound)} JOIN quads AS t ON t.resource_id = ANY(:rids){on}"),
        {"rids": rids, **columns(keys, bound)}))


def holders(conn: Connection, rids: list[int], triples: Sequence[tuple]) -> dict[tuple, int]:
    """How many of resources ``rids`` hold each triple (term ids) now."""
    if not triples:
        return {}
    rows = conn.execute(text(
        f"SELECT x.s, x.p, x.o, count(t.resource_id) AS n FROM {unnest(('s', 'p', 'o'))} "
        "LEFT JOIN quads t ON t.resource_id = ANY(:rids) AND t.s = x.s AND t.p = x.p "
        "AND t.o = x.o GROUP BY 1, 2, 3"), {"rids": rids, **columns(triples, ("s", "p", "o"))})
    return {(r.s, r.p, r.o): int(r.n) for r in rows}


def net_changes(conn: Connection, pods: list[int], after: int, upto: int,
                predicates: list[int] | None = None) -> list[Row]:
    """Every (pod, path, triple) whose membership in that document changed
    over (after, upto] — with one of ``predicates`` when given — and the
    change's sign: rows (pod_id, path, s, p, o, net), net ±1 (a document is a
    set; a resource deleted and made again under its path is one document).
    The diffs are the change log's (``changes.diffs``)."""
    return list(conn.execute(text(
        "SELECT c.pod_id, c.path, cq.s, cq.p, cq.o, sum(cq.sign) AS net "
        f"FROM ({changes.diffs(':a', ':u', 'CAST(:preds AS bigint[])')}) AS cq "
        "JOIN changes c ON c.seq = cq.seq WHERE c.pod_id = ANY(CAST(:pods AS bigint[])) "
        "AND c.seq > :a AND c.seq <= :u GROUP BY 1, 2, 3, 4, 5 HAVING sum(cq.sign) <> 0"),
        {"pods": pods, "a": after, "u": upto, "preds": predicates}))


def quads_of(conn: Connection, rids: list[int]) -> list[Row]:
    """Every quad (g, s, p, o) of resources ``rids``."""
    return lookup(conn, rids, (), [], distinct=False)

"""Maintenance state in Postgres: the K-relations of view nodes and the
view's input graph, behind the same interfaces as the in-memory engine
(``views.kset.KRel`` and ``views.dataset.QuadStore``), so the one delta
program runs with its state in the database, inside the worker's transaction.

Each (view, node, schema) has its own table (decision 3) whose columns are the
term ids of the schema's variables, plus ``k``; rows at k = 0 are deleted in
the same transaction. Probes are indexed lookups; an index on the probed
columns is created the first time a key set is probed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping

from rdflib.term import Identifier
from sqlalchemy import Connection, text

from storage import terms
from views.kset import KSet, Mu


class Codec:
    """Terms <-> ids within one transaction, cached both ways."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.ids: dict[Identifier, int] = {}
        self.terms: dict[int, Identifier] = {}

    def encode(self, items: Iterable[Identifier], add: bool) -> dict[Identifier, int]:
        """Ids of ``items``; unknown terms are added when ``add``, else left out."""
        wanted = [t for t in set(items) if t not in self.ids]
        if wanted:
            found = terms.intern(self.conn, wanted) if add else self._known(wanted)
            self.ids.update(found)
            self.terms.update({v: k for k, v in found.items()})
        return self.ids

    def _known(self, items: list[Identifier]) -> dict[Identifier, int]:
        rows = self.conn.execute(text("SELECT digest, id FROM terms WHERE digest = ANY(:d)"),
                                 {"d": [terms.digest(t) for t in items]})
        by_digest = {bytes(r.digest): int(r.id) for r in rows}
        return {t: by_digest[terms.digest(t)] for t in items if terms.digest(t) in by_digest}

    def decode(self, ids: Iterable[int]) -> dict[int, Identifier]:
        missing = {i for i in ids if i not in self.terms}
        if missing:
            found = terms.decode(self.conn, missing)
            self.terms.update(found)
            self.ids.update({v: k for k, v in found.items()})
        return self.terms


def view_tables(conn: Connection, view: int) -> dict[int, dict[frozenset[str],
                                                                tuple[str, list[str]]]]:
    """The registered K-relation tables of a view, by node and schema: one
    read per job, not one per node."""
    out: dict[int, dict[frozenset[str], tuple[str, list[str]]]] = {}
    for r in conn.execute(text("SELECT node, table_name, variables FROM krel_tables "
                               "WHERE view_id = :v"), {"v": view}):
        out.setdefault(r.node, {})[frozenset(r.variables)] = (r.table_name, list(r.variables))
    return out


def _table_name(view: int, node: int, schema: frozenset[str]) -> str:
    h = hashlib.sha1("\x00".join(sorted(schema)).encode()).hexdigest()[:10]
    return f"kr_{view}_{node}_{h}"


class PgRel:
    """A node's K-set in Postgres, split by schema."""

    def __init__(self, conn: Connection, codec: Codec, view: int, node: int,
                 tables: dict[frozenset[str], tuple[str, list[str]]] | None = None) -> None:
        """``tables``: the node's registered schema tables (``view_tables``);
        read from the registry when not given."""
        self.conn, self.codec, self.view, self.node = conn, codec, view, node
        self.tables = tables if tables is not None else view_tables(conn, view).get(node, {})
        self._indexed: set[tuple[str, tuple[str, ...]]] = set()

    # columns are c0, c1, … in the order of the sorted variable names
    @staticmethod
    def _cols(variables: list[str]) -> list[str]:
        return [f"c{i}" for i in range(len(variables))]

    def table(self, schema: frozenset[str]) -> tuple[str, list[str]]:
        if schema in self.tables:
            return self.tables[schema]
        variables = sorted(schema)
        name = _table_name(self.view, self.node, schema)
        cols = self._cols(variables)
        coldefs = ", ".join(f"{c} BIGINT NOT NULL" for c in cols) or "unit BOOLEAN NOT NULL"
        key = ", ".join(cols) or "unit"
        self.conn.execute(text(f'CREATE TABLE "{name}" ({coldefs}, k BIGINT NOT NULL, '
                               f"PRIMARY KEY ({key}))"))
        self.conn.execute(text("INSERT INTO krel_tables (view_id, node, table_name, variables) "
                               "VALUES (:v, :n, :t, CAST(:vars AS jsonb))"),
                          {"v": self.view, "n": self.node, "t": name,
                           "vars": json.dumps(variables)})
        self.tables[schema] = (name, variables)
        return self.tables[schema]

    def _where(self, variables: list[str], probe: Mapping[str, int]) -> tuple[str, dict]:
        conds, params = [], {}
        for i, v in enumerate(variables):
            if v in probe:
                conds.append(f"c{i} = :p{i}")
                params[f"p{i}"] = probe[v]
        return (" AND ".join(conds) or "TRUE"), params

    def _decode_rows(self, rows: list, variables: list[str]) -> Iterator[tuple[Mu, int]]:
        names = self.codec.decode(x for r in rows for x in r[:-1] if variables)
        for r in rows:
            yield frozenset((v, names[r[i]]) for i, v in enumerate(variables)), int(r[-1])

    def _encode_probe(self, probe: Mapping[str, Identifier]) -> tuple[dict[str, int], set[str]]:
        """Ids of the probe's terms, and the variables whose term the dictionary
        does not know (no stored row can match those)."""
        ids = self.codec.encode(probe.values(), add=False)
        known = {v: ids[t] for v, t in probe.items() if t in ids}
        return known, set(probe) - set(known)

    def get(self, m: Mu) -> int:
        schema = frozenset(v for v, _ in m)
        if schema not in self.tables:
            return 0
        probe, unknown = self._encode_probe(dict(m))
        if unknown:
            return 0
        name, variables = self.tables[schema]
        where, params = self._where(variables, probe)
        k = self.conn.execute(text(f'SELECT k FROM "{name}" WHERE {where}'), params).scalar()
        return int(k or 0)

    def compatible(self, probe: Mapping[str, Identifier],
                   require_shared: bool = False) -> Iterator[tuple[Mu, int]]:
        encoded, unknown = self._encode_probe(probe)
        for schema, (name, variables) in list(self.tables.items()):
            shared = tuple(sorted(schema.intersection(probe)))
            if require_shared and not shared:
                continue
            if unknown.intersection(shared):
                continue
            self._index(name, variables, shared)
            where, params = self._where(variables, {v: encoded[v] for v in shared})
            cols = ", ".join(self._cols(variables) + ["k"]) if variables else "k"
            rows = self.conn.execute(text(f'SELECT {cols} FROM "{name}" WHERE {where}'),
                                     params).all()
            yield from self._decode_rows(rows, variables)

    def _index(self, name: str, variables: list[str], shared: tuple[str, ...]) -> None:
        if not shared or len(shared) == len(variables) or (name, shared) in self._indexed:
            return
        cols = ", ".join(f"c{variables.index(v)}" for v in shared)
        ix = f"{name}_{'_'.join(str(variables.index(v)) for v in shared)}"
        self.conn.execute(text(f'CREATE INDEX IF NOT EXISTS "{ix}" ON "{name}" ({cols})'))
        self._indexed.add((name, shared))

    def apply(self, delta: KSet) -> None:
        """Add ``delta``; rows whose k reaches 0 are deleted."""
        if not delta:
            return
        ids = self.codec.encode((t for m in delta for _, t in m), add=True)
        by_schema: dict[frozenset[str], list[tuple[Mu, int]]] = {}
        for m, k in delta.items():
            by_schema.setdefault(frozenset(v for v, _ in m), []).append((m, k))
        for schema, rows in by_schema.items():
            name, variables = self.table(schema)
            cols = self._cols(variables) or ["unit"]
            params = []
            for m, k in rows:
                d = dict(m)
                row = {c: ids[d[v]] for c, v in zip(cols, variables)} if variables else {
                    "unit": True}
                params.append({**row, "k": k})
            names = ", ".join(cols)
            values = ", ".join(f":{c}" for c in cols)
            self.conn.execute(text(
                f'INSERT INTO "{name}" AS t ({names}, k) VALUES ({values}, :k) '
                f"ON CONFLICT ({names}) DO UPDATE SET k = t.k + excluded.k"), params)
            match = " AND ".join(f"{c} = :{c}" for c in cols)
            self.conn.execute(text(f'DELETE FROM "{name}" WHERE {match} AND k = 0'), params)

    @property
    def rows(self) -> KSet:
        out: KSet = {}
        for name, variables in self.tables.values():
            cols = ", ".join(self._cols(variables) + ["k"]) if variables else "k"
            out.update(self._decode_rows(self.conn.execute(
                text(f'SELECT {cols} FROM "{name}"')).all(), variables))
        return out

    def __len__(self) -> int:
        return sum(int(self.conn.execute(text(f'SELECT count(*) FROM "{n}"')).scalar_one())
                   for n, _ in self.tables.values())


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
        if g is not None or not self.pods:
            return
        bound = {c: t for c, t in (("s", s), ("p", p), ("o", o)) if t is not None}
        ids = self.codec.encode(bound.values(), add=False)
        if any(t not in ids for t in bound.values()):
            return
        where = "".join(f" AND {c} = :{c}" for c in bound)
        rows = self.conn.execute(text(
            f"SELECT DISTINCT s, p, o FROM pod_triples WHERE pod_id = ANY(:pods){where}"),
            {"pods": self.pods, **{c: ids[t] for c, t in bound.items()}}).all()
        names = self.codec.decode(x for r in rows for x in r)
        for r in rows:
            yield (None, names[r.s], names[r.p], names[r.o])

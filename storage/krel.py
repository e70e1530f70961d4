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
from collections.abc import Iterable, Iterator, Mapping, Sequence

from rdflib.term import Identifier
from sqlalchemy import Connection, text

from storage import terms
from storage.arrays import columns, unnest
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
    return tables_by_node(tuple(r) for r in conn.execute(text(
        "SELECT node, table_name, variables FROM krel_tables WHERE view_id = :v"), {"v": view}))


def tables_by_node(rows: Iterable[Sequence]) -> dict[int, dict[frozenset[str],
                                                               tuple[str, list[str]]]]:
    """``(node, table_name, variables)`` rows by node and schema."""
    out: dict[int, dict[frozenset[str], tuple[str, list[str]]]] = {}
    for node, name, variables in rows:
        out.setdefault(node, {})[frozenset(variables)] = (name, list(variables))
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

    def _decode_rows(self, rows: Sequence, variables: list[str]) -> Iterator[tuple[Mu, int]]:
        names = self.codec.decode(x for r in rows for x in r[:-1] if variables)
        for r in rows:
            yield frozenset((v, names[r[i]]) for i, v in enumerate(variables)), int(r[-1])

    def get(self, m: Mu) -> int:
        return self.get_many([m]).get(m, 0)

    def get_many(self, ms: Iterable[Mu]) -> dict[Mu, int]:
        """The stored annotations of ``ms``: one query per schema."""
        by_schema: dict[frozenset[str], list[Mu]] = {}
        for m in set(ms):
            by_schema.setdefault(frozenset(v for v, _ in m), []).append(m)
        out: dict[Mu, int] = {}
        for schema, group in by_schema.items():
            if schema not in self.tables:
                continue
            name, variables = self.tables[schema]
            ids = self.codec.encode((t for m in group for _, t in m), add=False)
            keys = [tuple(ids[d[v]] for v in variables)
                    for d in map(dict, group) if all(t in ids for t in d.values())]
            if keys:
                found = self._lookup(name, variables, tuple(variables), keys)
                out.update(row for rows in found.values() for row in rows)
        return out

    def compatible(self, probe: Mapping[str, Identifier],
                   require_shared: bool = False) -> Iterator[tuple[Mu, int]]:
        return iter(self.compatible_many([probe], require_shared)[0])

    def compatible_many(self, probes: Sequence[Mapping[str, Identifier]],
                        require_shared: bool = False) -> list[list[tuple[Mu, int]]]:
        """The stored rows compatible with each probe, aligned with ``probes``
        (with ``require_shared``, only rows sharing a variable with it): one
        query per schema table and set of shared variables."""
        out: list[list[tuple[Mu, int]]] = [[] for _ in probes]
        ids = self.codec.encode((t for p in probes for t in p.values()), add=False)
        for schema, (name, variables) in list(self.tables.items()):
            by_shared: dict[tuple[str, ...], dict[tuple, list[int]]] = {}
            for i, p in enumerate(probes):
                shared = tuple(v for v in variables if v in p)
                if (require_shared and not shared) or any(p[v] not in ids for v in shared):
                    continue  # a term the dictionary lacks matches no stored row
                key = tuple(ids[p[v]] for v in shared)
                by_shared.setdefault(shared, {}).setdefault(key, []).append(i)
            for shared, by_key in by_shared.items():
                found = self._lookup(name, variables, shared, list(by_key))
                for key, rows in found.items():
                    for i in by_key[key]:
                        out[i].extend(rows)
        return out

    def _lookup(self, name: str, variables: list[str], shared: tuple[str, ...],
                keys: list[tuple]) -> dict[tuple, list[tuple[Mu, int]]]:
        """The rows of table ``name`` whose ``shared`` columns equal each key
        (term ids), by key: the keys are joined in as arrays."""
        self._index(name, variables, shared)
        cols = ", ".join([f"t.c{i}" for i in range(len(variables))] + ["t.k"])
        if not shared:
            rows = self.conn.execute(text(f'SELECT {cols} FROM "{name}" AS t')).all()
            return {(): list(self._decode_rows(rows, variables))}
        pos = [variables.index(v) for v in shared]
        keyed = [f"c{c}" for c in pos]
        on = " AND ".join(f"t.{c} = x.{c}" for c in keyed)
        rows = self.conn.execute(text(
            f'SELECT {cols} FROM {unnest(keyed)} JOIN "{name}" AS t ON {on}'),
            columns(keys, keyed)).all()
        out: dict[tuple, list[tuple[Mu, int]]] = {}
        for r, decoded in zip(rows, self._decode_rows(rows, variables)):
            out.setdefault(tuple(r[c] for c in pos), []).append(decoded)
        return out

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
            types = {"unit": "boolean"}
            values = [(*(ids[d[v]] for v in variables), k) if variables else (True, k)
                      for d, k in ((dict(m), k) for m, k in rows)]
            names = ", ".join(cols)
            zeros = self.conn.execute(text(
                f'INSERT INTO "{name}" AS t ({names}, k) '
                f"SELECT * FROM {unnest([*cols, 'k'], types=types)} "
                f"ON CONFLICT ({names}) DO UPDATE SET k = t.k + excluded.k "
                f"RETURNING {names}, k"), columns(values, [*cols, "k"])).all()
            gone = [r for r in zeros if r[-1] == 0]
            if gone:  # rows whose k reached 0 leave in the same transaction
                on = " AND ".join(f"t.{c} = x.{c}" for c in cols)
                self.conn.execute(text(
                    f'DELETE FROM "{name}" AS t USING {unnest(cols, types=types)} WHERE {on}'),
                    columns(gone, cols))

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

"""The K-relation tables of view nodes: their layout, their registry, and
``PgRel``, a node's stored output behind the engine's ``KRelation``
interface (``views.kset``), so the one delta program runs with its state in
the database, inside the worker's transaction.

The layout (decision 3), owned here and nowhere else: each (view, node,
schema) has one table ``kr_<view>_<node>_<schema>`` whose columns ``c0 … cn``
are the term ids of the schema's variables in sorted order, plus ``k``
(BIGINT); a schema without variables has one boolean column ``unit``. Node
ids are the plan's content-derived ids (``views.plan``), so a table is never
attached to a different computation. Rows whose k reaches 0 are deleted in
the same transaction. Tables are registered in ``krel_tables``, beside
the tally table of each group that keeps one (``create_tally``, registered with
the variables ``[TALLY]``: the SQL executor's, ``server.executors.sql.tally``),
which ``tables`` and ``size`` leave out and ``drop_all`` drops.

A view's root tables carry the change feed's capture triggers (``watch``):
every statement that changes them, whichever executor runs it, adds its rows'
changes to the job's capture table (``storage.feed``). A table is made
watched when it is created for the node the job names as its feed's root
(the transaction setting ``podviews.feed_root``), or by ``feed.watch``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence

from rdflib.term import Identifier
from sqlalchemy import Connection, text

from storage.arrays import columns, unnest
from storage.codec import Codec
from views.kset import KSet, Mu

Schema = frozenset[str]
Table = tuple[str, list[str]]  # (table name, variables in column order)
NodeTables = dict[Schema, Table]
# the variables a group node's tally table is registered with (``create_tally``):
# no SPARQL variable is named so
TALLY = "#tally"


# ------------------------------------------------------------------ layout


def table_name(view: int, node: str, schema: Iterable[str]) -> str:
    """The table of a view node's rows of one schema (at most 63 bytes)."""
    h = hashlib.sha1("\x00".join(sorted(schema)).encode()).hexdigest()[:10]
    return f"kr_{view}_{node[:16]}_{h}"


def column_names(variables: Sequence[object]) -> list[str]:
    """The columns of a schema's variables (sorted): ``c0, c1, …``."""
    return [f"c{i}" for i in range(len(variables))]


def key_columns(variables: Sequence[str]) -> list[str]:
    """The primary key: the variables' columns, or ``unit`` for the empty schema."""
    return column_names(variables) or ["unit"]


def schema_key(variables: Iterable[str]) -> str:
    """A schema as text (how staged rows name theirs)."""
    return json.dumps(sorted(variables))


def tables(conn: Connection, view: int) -> dict[str, NodeTables]:
    """The registered tables of a view, by node and schema."""
    return by_node(tuple(r) for r in conn.execute(text(
        "SELECT node, table_name, variables FROM krel_tables WHERE view_id = :v"), {"v": view}))


def by_node(rows: Iterable[Sequence]) -> dict[str, NodeTables]:
    """``(node, table_name, variables)`` rows by node and schema (a group
    node's tally table not among them: ``tallies``)."""
    out: dict[str, NodeTables] = {}
    for node, name, variables in rows:
        if list(variables) != [TALLY]:
            out.setdefault(node, {})[frozenset(variables)] = (name, list(variables))
    return out


def tallies(rows: Iterable[Sequence]) -> dict[str, str]:
    """The tally tables among ``(node, table_name, variables)`` rows, by node."""
    return {node: name for node, name, variables in rows if list(variables) == [TALLY]}


def create_tally(conn: Connection, view: int, node: str, keys: int,
                 columns: Sequence[tuple[str, str]]) -> str:
    """The tally table of a group node, created and registered (``TALLY``):
    its ``keys`` key columns ``c0 …`` (a key's term id, 0 where the group
    leaves it unbound; ``unit`` for a group of no keys), ``epoch``, and
    ``columns`` (name, SQL type and constraints)."""
    name, cols = f"kt_{view}_{node[:16]}", column_names(range(keys))
    coldefs = ", ".join([_key_defs(cols), "epoch BIGINT NOT NULL",
                         *(f"{c} {t}" for c, t in columns)])
    conn.execute(text(f'CREATE TABLE "{name}" ({coldefs}, '
                      f"PRIMARY KEY ({', '.join(cols or ['unit'])}))"))
    _register(conn, view, node, name, [TALLY])
    return name


def _key_defs(cols: Sequence[str]) -> str:
    """The definitions of a table's key columns (term ids), or of ``unit``."""
    return ", ".join(f"{c} BIGINT NOT NULL" for c in cols) or "unit BOOLEAN NOT NULL"


def _register(conn: Connection, view: int, node: str, name: str, variables: list[str]) -> None:
    conn.execute(text("INSERT INTO krel_tables (view_id, node, table_name, variables) "
                      "VALUES (:v, :n, :t, CAST(:vars AS jsonb))"),
                 {"v": view, "n": node, "t": name, "vars": json.dumps(variables)})


def create(conn: Connection, view: int, node: str, schema: Schema) -> Table:
    """The table of a node's schema, created and registered."""
    variables = sorted(schema)
    name = table_name(view, node, schema)
    conn.execute(text(f'CREATE TABLE "{name}" ({_key_defs(column_names(variables))}, '
                      f"k BIGINT NOT NULL, PRIMARY KEY ({', '.join(key_columns(variables))}))"))
    _register(conn, view, node, name, variables)
    if conn.execute(text("SELECT current_setting('podviews.feed_root', true)")
                    ).scalar() == f"{view}:{node}":
        watch(conn, name, variables)
    return name, variables


def watch(conn: Connection, name: str, variables: list[str]) -> None:
    """The capture triggers on a root table: its row changes go to the job's
    capture table while capture is on, by the trigger function of the
    table's arity (``podviews_capture_for``, migration 0019: static SQL,
    planned once per table and session)."""
    arg = json.dumps(variables).replace("'", "''")
    function = conn.execute(text("SELECT podviews_capture_for(:n)"),
                            {"n": len(variables)}).scalar_one()
    for op, refs in (("INSERT", "NEW TABLE AS new_rows"),
                     ("UPDATE", "OLD TABLE AS old_rows NEW TABLE AS new_rows"),
                     ("DELETE", "OLD TABLE AS old_rows")):
        conn.execute(text(f'CREATE TRIGGER "feed_{op.lower()}" AFTER {op} ON "{name}" '
                          f"REFERENCING {refs} FOR EACH STATEMENT "
                          f'EXECUTE FUNCTION "{function}"(\'{arg}\')'))


def drop_all(conn: Connection, view: int) -> int:
    """Every table of the view dropped and unregistered; how many there were."""
    names = [r[0] for r in conn.execute(
        text("SELECT table_name FROM krel_tables WHERE view_id = :v"), {"v": view})]
    for name in names:
        conn.execute(text(f'DROP TABLE IF EXISTS "{name}"'))
    conn.execute(text("DELETE FROM krel_tables WHERE view_id = :v"), {"v": view})
    return len(names)


def rows_of(conn: Connection, node_tables: NodeTables) -> list[tuple[list[str], list[tuple]]]:
    """Every row of a node: per table, its variables and its ``(ids…, k)`` rows."""
    out = []
    for name, variables in node_tables.values():
        cols = ", ".join(column_names(variables) + ["k"])
        out.append((variables, [tuple(r) for r in conn.execute(text(f'SELECT {cols} FROM "{name}"'))]))
    return out


def count(conn: Connection, node_tables: NodeTables) -> int:
    """The node's solutions counted with their multiplicities (k > 0)."""
    return sum(int(conn.execute(text(
        f'SELECT coalesce(sum(k), 0) FROM "{name}" WHERE k > 0')).scalar_one())
               for name, _ in node_tables.values())


def size(conn: Connection, view: int) -> int:
    """Rows in all the view's tables: its stored state."""
    return sum(int(conn.execute(text(f'SELECT count(*) FROM "{name}"')).scalar_one())
               for node in tables(conn, view).values() for name, _ in node.values())


# ------------------------------------------------------------- relations


class PgRel:
    """A node's K-set in Postgres, split by schema (``views.kset.KRelation``)."""

    def __init__(self, conn: Connection, codec: Codec, view: int, node: str,
                 node_tables: NodeTables) -> None:
        """``node_tables``: the node's registered tables (``tables``); new
        schemas' tables are added to it as rows arrive."""
        self.conn, self.codec, self.view, self.node = conn, codec, view, node
        self.tables = node_tables
        self._indexed: set[tuple[str, tuple[str, ...]]] = set()

    def table(self, schema: Schema) -> Table:
        if schema not in self.tables:
            self.tables[schema] = create(self.conn, self.view, self.node, schema)
        return self.tables[schema]

    def _decode_rows(self, rows: Sequence, variables: list[str]) -> Iterator[tuple[Mu, int]]:
        names = self.codec.decode(x for r in rows for x in r[:-1] if variables)
        for r in rows:
            yield frozenset((v, names[r[i]]) for i, v in enumerate(variables)), int(r[-1])

    def get_many(self, ms: Iterable[Mu]) -> dict[Mu, int]:
        """The stored annotations of ``ms``: one query per schema."""
        by_schema: dict[Schema, list[Mu]] = {}
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

    def compatible_many(self, probes: Sequence[Mapping[str, Identifier]],
                        require_shared: bool = False) -> list[list[tuple[Mu, int]]]:
        """The stored rows compatible with each probe, aligned with ``probes``
        (with ``require_shared``, only rows sharing a variable with it): one
        query per schema table and set of shared variables."""
        out: list[list[tuple[Mu, int]]] = [[] for _ in probes]
        ids = self.codec.encode((t for p in probes for t in p.values()), add=False)
        for name, variables in list(self.tables.values()):
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
        cols = ", ".join([f"t.{c}" for c in column_names(variables)] + ["t.k"])
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

    def apply(self, delta: KSet) -> int:
        """Add ``delta``; rows whose k reaches 0 are deleted. The change in
        the number of stored rows."""
        if not delta:
            return 0
        grown = 0
        ids = self.codec.encode((t for m in delta for _, t in m), add=True)
        by_schema: dict[Schema, list[tuple[Mu, int]]] = {}
        for m, k in delta.items():
            by_schema.setdefault(frozenset(v for v, _ in m), []).append((m, k))
        for schema, rows in by_schema.items():
            name, variables = self.table(schema)
            cols = key_columns(variables)
            types = {"unit": "boolean"}
            values = [(*(ids[d[v]] for v in variables), k) if variables else (True, k)
                      for d, k in ((dict(m), k) for m, k in rows)]
            names = ", ".join(cols)
            # (xmax = 0): the row was inserted, not updated, by the upsert
            zeros = self.conn.execute(text(
                f'INSERT INTO "{name}" AS t ({names}, k) '
                f"SELECT * FROM {unnest([*cols, 'k'], types=types)} "
                f"ON CONFLICT ({names}) DO UPDATE SET k = t.k + excluded.k "
                f"RETURNING {names}, k, (t.xmax = 0) AS inserted"),
                columns(values, [*cols, "k"])).all()
            grown += sum(1 for r in zeros if r.inserted)
            gone = [tuple(r)[:-1] for r in zeros if r.k == 0]
            grown -= len(gone)
            if gone:  # rows whose k reached 0 leave in the same transaction
                on = " AND ".join(f"t.{c} = x.{c}" for c in cols)
                self.conn.execute(text(
                    f'DELETE FROM "{name}" AS t USING {unnest(cols, types=types)} WHERE {on}'),
                    columns(gone, cols))
        return grown

    @property
    def rows(self) -> KSet:
        out: KSet = {}
        for variables, rows in rows_of(self.conn, self.tables):
            out.update(self._decode_rows(rows, variables))
        return out

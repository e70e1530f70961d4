"""A Spark job's output staged in the job's transaction and merged into the
view's K-relations (decision 4: "writing ΔV back through a staging table and
one merge").

The job's REPEATABLE READ snapshot cannot see rows other sessions commit
after it began, so the rows come back through the worker (Arrow, then COPY as
CSV into a temporary table) rather than over JDBC. Each node table then
becomes the staged K-set: rows no longer there are deleted, new and changed
rows upserted — the difference, never a truncate, so readers keep the old
state until the job commits.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from sqlalchemy import Connection, text

from storage import krel
from storage.codec import Codec
from storage.db import raw
from storage.krel import column_names, key_columns, schema_key
from views.terms import term_of

STAGE = "spark_stage"


def load(conn: Connection, width: int, csv: bytes) -> None:
    """Stage rows ``node, schema, c0 … c<width-1>, k`` given as CSV (with a header)."""
    cols = "".join(f", {c} BIGINT" for c in column_names(range(width)))
    conn.execute(text(f"CREATE TEMP TABLE {STAGE} (node TEXT NOT NULL, schema TEXT NOT NULL"
                      f"{cols}, k BIGINT NOT NULL) ON COMMIT DROP"))
    with raw(conn).cursor().copy(f"COPY {STAGE} FROM STDIN WITH (FORMAT csv, HEADER true)") as copy:
        copy.write(csv)
    conn.execute(text(f"CREATE INDEX ON {STAGE} (node, schema)"))
    conn.execute(text(f"ANALYZE {STAGE}"))


def map_provisional(conn: Connection, codec: Codec,
                    provisional: Iterable[tuple[int, int, str, str | None, str | None]]) -> bool:
    """Add computed terms (provisional id, kind, lexical, datatype, lang) to
    the dictionary; their staged ids are mapped to the real ones. True when
    there was any."""
    terms: dict[int, object] = {}
    for pid, kind, lexical, datatype, lang in provisional:
        t = term_of(kind, lexical, datatype, lang)
        if terms.setdefault(pid, t) != t:
            raise RuntimeError(f"two computed terms share provisional id {pid}")
    if not terms:
        return False
    ids = codec.encode(terms.values(), add=True)  # type: ignore[arg-type]
    conn.execute(text("CREATE TEMP TABLE term_map (tmp BIGINT PRIMARY KEY, id BIGINT NOT NULL) "
                      "ON COMMIT DROP"))
    conn.execute(text("INSERT INTO term_map VALUES (:t, :i)"),
                 [{"t": pid, "i": ids[t]} for pid, t in terms.items()])  # type: ignore[index]
    return True


def merge(conn: Connection, view: int, nodes: Iterable[str], mapped: bool) -> int:
    """Make every listed node's K-relation equal its staged rows; the number
    of rows that changed (0: the stored state already was the evaluation)."""
    staged = conn.execute(text(f"SELECT DISTINCT node, schema FROM {STAGE}")).all()
    tables = krel.tables(conn, view)
    for r in staged:  # tables for schemas seen for the first time
        schema = frozenset(json.loads(r.schema))
        known = tables.setdefault(r.node, {})
        if schema not in known:
            known[schema] = krel.create(conn, view, r.node, schema)
    present = {(r.node, r.schema) for r in staged}
    changed = 0
    for node in nodes:
        for name, variables in tables.get(node, {}).values():
            if (node, schema_key(variables)) in present:
                changed += _replace(conn, name, variables, node, mapped)
            else:  # the schema has no rows now (the stage may lack its columns)
                changed += int(conn.execute(text(f'DELETE FROM "{name}"')).rowcount)
    return changed


def _replace(conn: Connection, table: str, variables: list[str], node: str, mapped: bool) -> int:
    cols = column_names(variables)
    if mapped:
        picks = ", ".join(f"COALESCE(m{i}.id, s.{c}) AS {c}" for i, c in enumerate(cols))
        joins = " ".join(f"LEFT JOIN term_map m{i} ON m{i}.tmp = s.{c}" for i, c in enumerate(cols))
    else:
        picks, joins = ", ".join(f"s.{c}" for c in cols), ""
    conn.execute(text("DROP TABLE IF EXISTS staged_rel"))
    conn.execute(text(f"CREATE TEMP TABLE staged_rel ON COMMIT DROP AS SELECT "
                      f"{picks + ', ' if cols else ''}s.k FROM {STAGE} s {joins} "
                      f"WHERE s.node = :n AND s.schema = :s"),
                 {"n": node, "s": schema_key(variables)})
    conn.execute(text("ANALYZE staged_rel"))
    key = key_columns(variables)
    same = " AND ".join(f"r.{c} = t.{c}" for c in cols) or "TRUE"
    gone = conn.execute(text(f'DELETE FROM "{table}" t WHERE NOT EXISTS '
                             f"(SELECT 1 FROM staged_rel r WHERE {same})")).rowcount
    values = ", ".join(cols) if cols else "TRUE"
    put = conn.execute(text(
        f'INSERT INTO "{table}" AS t ({", ".join(key)}, k) SELECT {values}, k FROM staged_rel '
        f"ON CONFLICT ({', '.join(key)}) DO UPDATE SET k = excluded.k WHERE t.k <> excluded.k")
    ).rowcount
    return int(gone) + int(put)

"""Alembic, configured in code: the migrations live in top-level ``migrations/``."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic import command
from alembic.config import Config

from storage.terms import dictionary_row

MIGRATIONS = Path(__file__).resolve().parents[1] / "migrations"


def config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(url: str, revision: str = "head") -> None:
    command.upgrade(config(url), revision)


def downgrade(url: str, revision: str = "base") -> None:
    command.downgrade(config(url), revision)


def rewrite_terms(conn: sa.Connection, where: str, params: dict[str, object],
                  columns: dict[str, tuple[str, Callable[[sa.Row[Any]], object]]]) -> None:
    """Write the ``columns`` of every dictionary row matching ``where`` again,
    10,000 rows a statement: each column's Postgres type and its value from
    the row (``id``, ``kind``, ``lexical``, ``datatype``, ``lang``). The data
    migrations that revalue terms (0029, 0035–0038, 0040) run it."""
    names = list(columns)
    update = sa.text(
        f"UPDATE terms SET {', '.join(f'{c} = k.{c}' for c in names)} "
        f"FROM unnest(CAST(:ids AS bigint[]), "
        f"{', '.join(f'CAST(:{c} AS {columns[c][0]}[])' for c in names)}) "
        f"AS k (id, {', '.join(names)}) WHERE terms.id = k.id")
    after = 0
    while True:
        rows = conn.execute(sa.text(
            f"SELECT id, kind, lexical, datatype, lang FROM terms WHERE id > :after AND ({where}) "
            "ORDER BY id LIMIT 10000"), {**params, "after": after}).all()
        if not rows:
            return
        values = [[value(r) for _, value in columns.values()] for r in rows]  # row by row
        conn.execute(update, {"ids": [r.id for r in rows],
                              **{c: [v[i] for v in values] for i, c in enumerate(names)}})
        after = rows[-1].id


_DICTIONARY = {"num": (5, "float8"), "ts": (6, "timestamptz"), "sortkey": (7, "bytea")}


def dictionary_columns(*names: str) -> dict[str, tuple[str, Callable[[sa.Row[Any]], object]]]:
    """``rewrite_terms``'s columns for the dictionary's values ``names``
    (``num``, ``ts``, ``sortkey``) as ``storage.terms.dictionary_row``
    writes them, the row computed once for all of them (0037, 0038, 0040)."""
    @functools.lru_cache(maxsize=1)  # rewrite_terms asks for a row's columns in turn
    def row(kind: int, lexical: str, datatype: str | None, lang: str | None) -> tuple[object, ...]:
        return dictionary_row(b"", (kind, lexical, datatype, lang))

    def column(at: int) -> Callable[[sa.Row[Any]], object]:
        return lambda r: row(r.kind, r.lexical, r.datatype, r.lang)[at]

    return {n: (_DICTIONARY[n][1], column(_DICTIONARY[n][0])) for n in names}

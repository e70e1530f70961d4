"""Reads of views for their consumers, each one snapshot: a REPEATABLE READ,
read-only transaction (architecture decision 9), so a view's row, its
status, its jobs and its results are all as of one commit — never a mix of
two. Results come straight from the root node's K-relation tables
(``storage.krel``), decoded from the dictionary; the engine is not run."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Connection, Engine, Row

from storage import db, krel, terms, views_repo
from views.kset import KSet


@contextmanager
def snapshot(engine: Engine) -> Iterator[Connection]:
    """A read-only connection whose reads all see one snapshot (``db.reading``)."""
    with db.reading(engine, isolation_level="REPEATABLE READ") as conn:
        yield conn


def results(conn: Connection, view: Row) -> KSet:
    """The view's current K-set: its root node's rows, decoded."""
    found = krel.rows_of(conn, krel.tables(conn, int(view.id)).get(view.root_node or "", {}))
    names = terms.decode(conn, (x for variables, rows in found for r in rows
                                for x in r[:len(variables)]))
    out: KSet = {}
    for variables, rows in found:
        for r in rows:
            out[frozenset((v, names[r[i]]) for i, v in enumerate(variables))] = int(r[-1])
    return out


def row_count(conn: Connection, view: Row) -> int:
    """The view's solutions counted with their multiplicities."""
    return krel.count(conn, krel.tables(conn, int(view.id)).get(view.root_node or "", {}))


def view_results(conn: Connection, view: int) -> KSet:
    """``results`` of the view with this id."""
    row = views_repo.view_row(conn, view)
    assert row is not None, f"no view {view}"
    return results(conn, row)

"""Reads of views for their consumers, each one snapshot: a REPEATABLE READ,
read-only transaction (architecture decision 9), so a view's row, its
status, its jobs and its results are all as of one commit — never a mix of
two. Results come straight from the root node's K-relation tables
(``storage.krel``), decoded from the dictionary; the engine is not run."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rdflib.term import Identifier
from sqlalchemy import Connection, Engine, Row, text

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


def page(conn: Connection, view: Row, offset: int, size: int | None
         ) -> tuple[list[dict[str, Identifier]], int]:
    """Solutions ``offset`` to ``offset + size`` (all from ``offset`` when
    ``size`` is None) of the view's root node, each repeated by its
    multiplicity, in the order of their term ids (a table at a time, in the
    order of the tables' names), and how many there are in all. Postgres
    orders and counts the ids; only the page's rows come back and only
    their terms are decoded (design note 158)."""
    node = krel.tables(conn, int(view.id)).get(view.root_node or "", {})
    tables = sorted(node.values())
    if not tables:
        return [], 0
    names = sorted({v for _, variables in tables for v in variables})
    parts = []
    for i, (table, variables) in enumerate(tables):
        column = dict(zip(variables, krel.column_names(variables), strict=True))
        picked = [f"{column[v]} AS v{j}" if v in column else f"CAST(NULL AS bigint) AS v{j}"
                  for j, v in enumerate(names)]
        parts.append(f'SELECT {", ".join([f"{i} AS t", *picked, "k"])} FROM "{table}" '
                     "WHERE k > 0")
    order = ", ".join(["t", *(f"v{j}" for j in range(len(names)))])
    window = (f"SELECT r.*, sum(k) OVER (ORDER BY {order} ROWS UNBOUNDED PRECEDING) AS upto, "
              f"sum(k) OVER () AS total FROM ({' UNION ALL '.join(parts)}) AS r")
    end = None if size is None else offset + size
    found = conn.execute(text(
        f"SELECT * FROM ({window}) AS w WHERE upto > :offset"
        + ("" if end is None else " AND upto - k < :end") + f" ORDER BY {order}"),
        {"offset": offset, "end": end}).all()
    if not found:
        return [], krel.count(conn, node)
    decoded = terms.decode(conn, (x for r in found for x in r[1:1 + len(names)]
                                  if x is not None))
    rows: list[dict[str, Identifier]] = []
    for r in found:
        k, upto = int(r.k), int(r.upto)
        copies = min(upto, end if end is not None else upto) - max(upto - k, offset)
        mapping = {v: decoded[x] for v, x in zip(names, r[1:1 + len(names)], strict=True)
                   if x is not None}
        rows.extend(dict(mapping) for _ in range(copies))
    return rows, int(found[0].total)


def row_count(conn: Connection, view: Row) -> int:
    """The view's solutions counted with their multiplicities."""
    return krel.count(conn, krel.tables(conn, int(view.id)).get(view.root_node or "", {}))


def view_results(conn: Connection, view: int) -> KSet:
    """``results`` of the view with this id."""
    row = views_repo.view_row(conn, view)
    assert row is not None, f"no view {view}"
    return results(conn, row)

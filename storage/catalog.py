"""Reads of views for their consumers, each one snapshot: a REPEATABLE READ,
read-only transaction (architecture decision 9), so a view's row, its
status, its jobs and its results are all as of one commit — never a mix of
two. Results come straight from the root node's K-relation tables
(``storage.krel``), decoded from the dictionary; the engine is not run."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from sqlalchemy import Connection, Engine, Row

from storage import db, driver, krel, terms, views_repo
from views.kset import KSet
from views.sortkey import text_key
from views.terms import TermFields


@contextmanager
def snapshot(engine: Engine) -> Iterator[Connection]:
    """A read-only connection whose reads all see one snapshot (``db.reading``)."""
    with db.reading(engine, isolation_level="REPEATABLE READ") as conn:
        yield conn


def results(conn: Connection, view: Row) -> KSet:
    """The view's current K-set: its root node's rows, decoded."""
    found = krel.rows_of(conn, root_tables(view))
    names = terms.decode(conn, (x for variables, rows in found for r in rows
                                for x in r[:len(variables)]))
    out: KSet = {}
    for variables, rows in found:
        for r in rows:
            out[frozenset((v, names[r[i]]) for i, v in enumerate(variables))] = int(r[-1])
    return out


def page(conn: Connection, view: Row, offset: int, size: int | None,
         order: Sequence[tuple[str, bool]] = (), skip: int = 0, limit: int | None = None
         ) -> tuple[list[dict[str, TermFields]], int]:
    """Solutions ``offset`` to ``offset + size`` (all from ``offset`` when
    ``size`` is None) of the view's root node, each repeated by its
    multiplicity, and how many there are in all. Postgres orders and counts
    the ids; only the page's rows come back and only their terms are
    decoded (design note 158), to their dictionary fields (note 184).

    Without ``order``, in the order of their term ids (a table at a time,
    in the order of the tables' names). With it — variables, each
    descending or not — as ``views.results.solutions`` orders them: by
    those variables' sort keys (``pv_sort_key``, unbound first: ORDER BY's
    order, design note 160), ties by each solution's bound variables and
    their keys in the variables' order; then sliced as the query's OFFSET
    (``skip``) and LIMIT (``limit``) say, the page taken from that slice."""
    node = root_tables(view)
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
    rows_sql = " UNION ALL ".join(parts)
    keys = ["t", *(f"v{j}" for j in range(len(names)))]
    if order:
        rows_sql, keys = _ordered(rows_sql, names, order)
    window = (f"SELECT r.*, sum(k) OVER (ORDER BY {', '.join(keys)} ROWS UNBOUNDED PRECEDING) "
              f"AS upto, sum(k) OVER () AS total FROM ({rows_sql}) AS r")
    start = skip + offset
    ends = [e for e in (None if size is None else start + size,
                        None if limit is None else skip + limit) if e is not None]
    end = min(ends) if ends else None
    # the page's rows with their terms' dictionary fields, in one statement
    # prepared on the session (one text per view and bound), rows as tuples
    # (each a probe of the page's row: never a join of the whole dictionary)
    fields = [f"x{j}.{f}" for j in range(len(names)) for f in terms.FIELDS]
    joins = " ".join(f"LEFT JOIN LATERAL {terms.probe('id', f'w.v{j}', ', '.join(terms.FIELDS))} "
                     f"AS x{j} ON true" for j in range(len(names)))
    found = [] if end is not None and end <= start else driver.rows(
        conn, f"SELECT {', '.join(['w.k', 'w.upto', 'w.total', *fields])} FROM ({window}) AS w "
        f"{joins} WHERE w.upto > :start" + ("" if end is None else " AND w.upto - w.k < :end")
        + f" ORDER BY {', '.join(f'w.{key}' for key in keys)}",
        {"start": start, "end": end}, named=False)
    every = int(found[0][2]) if found else krel.count(conn, node)
    total = max(0, min(every - skip, every if limit is None else limit))
    width = len(terms.FIELDS)
    rows: list[dict[str, TermFields]] = []
    for r in found:
        k, upto = int(r[0]), int(r[1])
        copies = min(upto, end if end is not None else upto) - max(upto - k, start)
        mapping = {v: (r[at], r[at + 1], r[at + 2], r[at + 3])
                   for v, at in zip(names, range(3, 3 + width * len(names), width), strict=True)
                   if r[at] is not None}
        rows.extend([mapping] * copies)  # one solution repeated: read, never changed
    return rows, total


def _ordered(rows_sql: str, names: list[str], order: Sequence[tuple[str, bool]]
             ) -> tuple[str, list[str]]:
    """The view's rows (``rows_sql``: ``t``, ``v0``… for ``names``, ``k``)
    with their sort keys, and the columns that order them: each ORDER BY
    variable's key (NULL, first, where unbound; last descending), then the
    solution's own key — its bound variables in name order, each name
    (``views.sortkey``'s text: no NUL in a SPARQL name) and its term's key,
    which compares as ``views.results``' tie order does."""
    joins = " ".join(f"LEFT JOIN terms AS x{j} ON x{j}.id = r.v{j}" for j in range(len(names)))
    own = " || ".join(f"coalesce('\\x{text_key(v).hex()}'::bytea || pv_sort_key(x{j}), ''::bytea)"
                      for j, v in enumerate(names)) or "''::bytea"
    picked = [f"pv_sort_key(x{names.index(v)}) AS o{i}" if v in names else f"NULL::bytea AS o{i}"
              for i, (v, _) in enumerate(order)]
    keyed = f"SELECT r.*, {', '.join(picked)}, {own} AS own FROM ({rows_sql}) AS r {joins}"
    keys = [f"o{i} {'DESC NULLS LAST' if descending else 'ASC NULLS FIRST'}"
            for i, (_, descending) in enumerate(order)]
    return keyed, [*keys, "own"]


def row_count(conn: Connection, view: Row) -> int:
    """The view's solutions counted with their multiplicities."""
    return krel.count(conn, root_tables(view))


def root_tables(view: Row) -> krel.NodeTables:
    """The tables of the view's root node, from its row (``tables``:
    ``views_repo.view_row``'s and the claim's)."""
    return krel.by_node(view.tables).get(view.root_node or "", {})


def view_results(conn: Connection, view: int) -> KSet:
    """``results`` of the view with this id."""
    row = views_repo.view_row(conn, view)
    assert row is not None, f"no view {view}"
    return results(conn, row)

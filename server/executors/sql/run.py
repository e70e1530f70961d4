"""The SQL executor's rendered path: a view's batch maintained by one
statement (``render``) inside the job's transaction, for plans whose every
node renders; ``placement`` says where each node of a plan runs."""

from __future__ import annotations

import functools

from sqlalchemy import Connection, text

from server.executors.sql import render as R
from storage import changes, krel
from views.errors import ViewTooLarge
from views.plan import Plan

INTERPRETER = "interpreter"
SQL = "sql"


@functools.lru_cache(maxsize=1024)
def unrendered(plan: Plan) -> str | None:
    """Why the plan does not render to SQL (the first node that does not), or
    None when it does."""
    fake = {n: {s: (f"t{i}", sorted(s)) for i, s in enumerate(schemas)}
            for n, schemas in R.schemas_needed(plan).items()}
    try:
        R.render(plan, fake, 1)
    except R.NotRendered as e:
        return str(e)
    return None


def placement(plan: Plan) -> str:
    """Where the plan's nodes run: "sql", or "interpreter" and why."""
    why = unrendered(plan)
    return SQL if why is None else f"{INTERPRETER} ({why})"


def prepare(conn: Connection, view: int, plan: Plan, tables: dict[str, krel.NodeTables]
            ) -> None:
    """Every table the rendered statement writes, created and registered
    (``tables`` updated): one per possible schema of each stored node."""
    for node, schemas in R.schemas_needed(plan).items():
        have = tables.setdefault(node, {})
        for schema in schemas:
            if schema not in have:
                have[schema] = krel.create(conn, view, node, schema)


def maintain(conn: Connection, view: int, plan: Plan, tables: dict[str, krel.NodeTables],
             pods: list[int], after: int, upto: int, predicates: list[int] | None,
             max_rows: int | None = None) -> int:
    """Apply the changes of ``pods`` in (after, upto] to the view's state by
    the rendered statement; the change in stored rows."""
    if upto <= after or not pods:
        return 0
    prepare(conn, view, plan, tables)
    sql = R.render(plan, tables, len(pods))
    grown, largest = conn.execute(text(sql), changes.net_parameters(
        pods, after, upto, predicates)).one()
    if max_rows is not None and largest > max_rows:
        raise ViewTooLarge(f"one of its nodes changes by {largest:,} rows at once; "
                           f"the limit is {max_rows:,}")
    return int(grown)

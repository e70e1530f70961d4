"""``podviews check consistency``: every ready view's stored results against
its evaluation from scratch on the current data of the pods it reads."""

from __future__ import annotations

from sqlalchemy import Connection

from server.executors import sql
from server.maintenance.jobs import view_spec
from storage import catalog, consents, queue, views_repo
from storage.pods_graph import DEFAULT_BASE
from views.compile import compiled
from views.kset import KSet


def scratch(conn: Connection, view: int, base: str = DEFAULT_BASE) -> KSet:
    """The view evaluated from scratch on the current data of the pods it reads."""
    row = views_repo.view_row(conn, view)
    assert row is not None, f"no view {view}"
    return sql.scratch(conn, compiled(row.query).plan, consents.readable_pods(conn, view),
                       base, view_spec(compiled(row.query), row))


def consistency(conn: Connection, base: str = DEFAULT_BASE) -> list[tuple[int, str, int | None]]:
    """(view, name, annotated mappings that differ from scratch) for every
    ready view; 0 everywhere means no drift. A view with jobs queued or
    running is behind its pods' writes, not drifted from them: None, not
    compared (``behind``). ``conn`` should be one snapshot."""
    late = _pending(conn)
    out: list[tuple[int, str, int | None]] = []
    for v in views_repo.ready_views(conn):
        if v.id in late:
            out.append((v.id, v.name, None))
            continue
        got, want = catalog.results(conn, v), scratch(conn, v.id, base)
        out.append((v.id, v.name, len(set(got.items()) ^ set(want.items()))))
    return out


def behind(conn: Connection) -> set[int]:
    """The ready views with jobs queued or running: a write they have not
    caught up with yet, or a grant or revoke under way (a view still
    backfilling is not compared at all)."""
    pending = _pending(conn)
    return {int(v.id) for v in views_repo.ready_views(conn) if int(v.id) in pending}


def _pending(conn: Connection) -> set[int]:
    """The views with jobs queued or running."""
    return {int(j.view_id) for j in queue.pending(conn) if j.view_id is not None}

"""Views: register, describe, read (after catching up with a change), drop.
A consumer sees only its own views; anyone else is told there is no such
view."""

from __future__ import annotations

import functools
import time

from sqlalchemy import Connection, Engine

from server.api.auth import Principal, require
from server.api.views.notices import ViewNotices
from server.api.views.schemas import Progress, ViewIn, ViewOut
from server.errors import Conflict, NotFound, NotReady
from server.maintenance import jobs as pipeline
from storage import views_repo
from views.dataset import Dataset
from views.maintain import Maintainer
from views.results import ask, solutions


def create(engine: Engine, who: Principal, body: ViewIn) -> int:
    require(who, "consumer")
    with engine.begin() as c:  # a bad query raises before anything is stored
        return pipeline.register_view(c, who.agent, body.name, body.query)  # type: ignore[arg-type]


def row(conn: Connection, who: Principal, view_id: int):  # type: ignore[no-untyped-def]
    found = views_repo.view_row(conn, view_id)
    if found is None or not (who.is_admin() or found.consumer_id == who.agent):
        raise NotFound(f"no view {view_id}")
    return found


def describe(conn: Connection, who: Principal, view_id: int) -> ViewOut:
    v = row(conn, who, view_id)
    plan = _plan(v.query)
    rows = sum(k for k in pipeline.read_view(conn, v.id).values() if k > 0) \
        if v.status == "ready" else None
    pending = [Progress(job=j.kind, status=j.status, done=j.done, total=j.total, error=j.last_error)
               for j in views_repo.unfinished_jobs(conn, v.id)]
    return ViewOut(id=v.id, name=v.name, query=v.query, status=v.status, watermark=v.watermark,
                   rows=rows, plan=plan, pending=pending, created_at=v.created_at)


@functools.lru_cache(maxsize=1024)
def _plan(query: str) -> str:
    """The maintenance plan in words (the same for every read of a view)."""
    return Maintainer(pipeline.compiled(query).pattern, Dataset()).explain()


def listing(engine: Engine, who: Principal) -> list[ViewOut]:
    require(who, "consumer")
    with engine.connect() as c:
        return [describe(c, who, v.id) for v in views_repo.views_of(c, who.agent)]  # type: ignore[arg-type]


def wait_until_current(engine: Engine, who: Principal, view_id: int, min_seq: int,
                       wait: float, notices: ViewNotices | None = None) -> None:
    """Return once the view is ready and reflects every change up to
    ``min_seq`` (read-your-writes); 503 with Retry-After after ``wait`` s.
    Between checks it sleeps until a job of the view ends (``notices``), or
    polls."""
    deadline = time.monotonic() + wait
    while True:
        seen = notices.generation(view_id) if notices is not None else 0
        with engine.connect() as c:
            v = row(c, who, view_id)
            if min_seq > views_repo.last_seq(c):
                raise Conflict(f"there is no change {min_seq} yet "
                               f"(the last is {views_repo.last_seq(c)})")
            jobs = views_repo.unfinished_jobs(c, view_id)
            if v.status == "failed" or any(j.status == "dead" for j in jobs):
                errors = [j.last_error for j in jobs if j.last_error]
                raise Conflict(f"view {view_id} failed: {errors[0] if errors else 'see its jobs'}")
            # Changes, grants and revocations up to min_seq all have their
            # jobs enqueued by now (in the writer's transaction); once those
            # are done the view reflects them.
            if v.status == "ready" and not any(j.seq is None or j.seq <= min_seq for j in jobs):
                return
        left = deadline - time.monotonic()
        if left <= 0:
            raise NotReady(f"view {view_id} has not caught up with change {min_seq} yet",
                           {"Retry-After": "1"})
        if notices is not None:
            notices.wait(view_id, seen, left)
        else:
            time.sleep(min(left, 0.02))


def results(conn: Connection, who: Principal, view_id: int) -> tuple[tuple[str, ...] | None,
                                                                     list, int]:  # type: ignore[type-arg]
    """(variables, ordered solutions) of a SELECT, (None, [answer]) of an ASK,
    and the watermark they reflect."""
    v = row(conn, who, view_id)
    q = pipeline.compiled(v.query).query
    current = pipeline.read_view(conn, v.id)
    if q.form == "ASK":
        return None, [ask(current)], v.watermark
    return q.variables, solutions(q, current), v.watermark


def drop(engine: Engine, who: Principal, view_id: int) -> None:
    with engine.begin() as c:
        row(c, who, view_id)
        views_repo.drop_view(c, view_id)



"""Views: register, describe, read (after catching up with a change), drop.
A consumer sees only its own views; anyone else is told there is no such
view. Every read is one snapshot (``storage.catalog``): a view's row, its
jobs and its results are as of one commit."""

from __future__ import annotations

import time
from dataclasses import dataclass

from rdflib import URIRef
from rdflib.term import Identifier
from sqlalchemy import Connection, Engine, Row

from server.api.auth import Principal, require
from server.api.views.notices import ViewNotices
from server.api.views.schemas import Progress, ViewIn, ViewOut
from server.errors import Conflict, NotFound, NotReady
from storage import catalog, changes, queue, terms, views_repo
from views import algebra as A
from views import relevance
from views.compile import compile_query, compiled
from views.errors import UnsupportedFeature
from views.results import ask, solutions


def create(engine: Engine, who: Principal, body: ViewIn) -> int:
    """Register a consumer's view: a bad query is refused before anything
    is stored."""
    require(who, "consumer")
    assert who.agent is not None
    with engine.begin() as c:
        return register_view(c, who.agent, body.name, body.query)


def register_view(conn: Connection, consumer: int, name: str, query: str) -> int:
    """Check the query, store the view and queue its backfill, in the
    caller's transaction."""
    checked = compile_query(query)
    if _uses_named_graphs(checked.pattern):
        raise UnsupportedFeature("GRAPH in a view over pods (named graphs are not exposed yet)")
    wanted = relevance.predicates(checked.query)
    ids = None if wanted is None else sorted(terms.intern(conn, map(URIRef, wanted)).values())
    view = views_repo.create_view(conn, consumer, name, query, ids)
    queue.enqueue(conn, "backfill", view)
    return view


def _uses_named_graphs(p: A.Pattern) -> bool:
    if isinstance(p, A.GraphNames) or isinstance(p, A.BGP) and any(
            t.g is not None for t in p.triples):
        return True
    return any(_uses_named_graphs(c) for c in A.children(p))


def row(conn: Connection, who: Principal, view_id: int) -> Row:
    found = views_repo.view_row(conn, view_id)
    if found is None or not (who.is_admin() or found.consumer_id == who.agent):
        raise NotFound(f"no view {view_id}")
    return found


@dataclass(frozen=True)
class State:
    """Where a view stands for a reader: its status (as stored, or
    'rebuilding' when its state was computed with a plan the running code no
    longer builds) and why."""

    status: str
    note: str | None

    @property
    def current(self) -> bool:
        return self.status == "ready"


def state(v: Row) -> State:
    if v.status == "ready" and v.plan_fingerprint != compiled(v.query).plan.fingerprint:
        return State("rebuilding", "the engine's plan for this view changed; its state waits "
                                   "for a worker to rebuild it")
    return State(v.status, v.status_note)


def describe(engine: Engine, who: Principal, view_id: int) -> ViewOut:
    with catalog.snapshot(engine) as c:
        return _describe(c, row(c, who, view_id))


def _describe(conn: Connection, v: Row) -> ViewOut:
    s = state(v)
    pending = [Progress(job=j.kind, status=j.status, done=j.done, total=j.total, error=j.last_error)
               for j in views_repo.unfinished_jobs(conn, v.id)]
    return ViewOut(id=v.id, name=v.name, query=v.query, status=s.status, note=s.note,
                   watermark=v.watermark, rows=catalog.row_count(conn, v) if s.current else None,
                   plan=compiled(v.query).plan.explain(), pending=pending,
                   created_at=v.created_at)


def listing(engine: Engine, who: Principal) -> list[ViewOut]:
    require(who, "consumer")
    assert who.agent is not None
    with catalog.snapshot(engine) as c:
        return [_describe(c, v) for v in views_repo.views_of(c, who.agent)]


def wait_until_current(engine: Engine, who: Principal, view_id: int, min_seq: int,
                       wait: float, notices: ViewNotices | None = None) -> None:
    """Return once the view is ready and reflects every change up to
    ``min_seq`` (read-your-writes); 503 with Retry-After after ``wait`` s.
    Between checks it sleeps until a job of the view ends (``notices``), or
    polls."""
    deadline = time.monotonic() + wait
    while True:
        seen = notices.generation(view_id) if notices is not None else 0
        with catalog.snapshot(engine) as c:
            v = row(c, who, view_id)
            last = changes.last_seq(c)
            if min_seq > last:
                raise Conflict(f"there is no change {min_seq} yet (the last is {last})")
            jobs = views_repo.unfinished_jobs(c, view_id)
            if v.status == "failed" or any(j.status == "dead" for j in jobs):
                errors = [j.last_error for j in jobs if j.last_error] + [v.status_note]
                raise Conflict(f"view {view_id} failed: "
                               f"{next((e for e in errors if e), 'see its jobs')}")
            # Changes, grants and revocations up to min_seq all have their
            # jobs enqueued by now (in the writer's transaction); once those
            # are done the view reflects them.
            if state(v).current and not any(j.seq is None or j.seq <= min_seq for j in jobs):
                return
        left = deadline - time.monotonic()
        if left <= 0:
            raise NotReady(f"view {view_id} has not caught up with change {min_seq} yet",
                           {"Retry-After": "1"})
        if notices is not None:
            notices.wait(view_id, seen, left)
        else:
            time.sleep(min(left, 0.02))


@dataclass(frozen=True)
class Results:
    """A view's answer as of one commit: the variables and ordered solutions
    of a SELECT, or the answer of an ASK (``answer`` not None), and the
    watermark they reflect."""

    variables: tuple[str, ...]
    rows: list[dict[str, Identifier]]
    answer: bool | None
    watermark: int


def results(engine: Engine, who: Principal, view_id: int) -> Results:
    with catalog.snapshot(engine) as c:
        v = row(c, who, view_id)
        s = state(v)
        if not s.current:
            raise NotReady(f"view {view_id} is {s.status}" + (f": {s.note}" if s.note else ""),
                           {"Retry-After": "1"})
        current = catalog.results(c, v)
    q = compiled(v.query).query
    if q.form == "ASK":
        return Results((), [], ask(current), v.watermark)
    return Results(q.variables, solutions(q, current), None, v.watermark)


def drop(engine: Engine, who: Principal, view_id: int) -> None:
    with engine.begin() as c:
        row(c, who, view_id)
        views_repo.drop_view(c, view_id)

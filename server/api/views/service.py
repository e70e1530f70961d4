"""Views: register, describe, read (after catching up with a change), drop.
A consumer sees only its own views; anyone else is told there is no such
view. Every read is one snapshot (``storage.catalog``): a view's row, its
jobs and its results are as of one commit."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import unquote

from rdflib import URIRef
from rdflib.term import Identifier
from sqlalchemy import Connection, Engine, Row
from starlette.concurrency import run_in_threadpool

from server.api.auth import Principal, require
from server.api.ldp import access
from server.api.views import formats as fmt
from server.api.views.notices import ViewNotices
from server.api.views.schemas import Progress, ViewIn, ViewOut
from server.config import Settings
from server.errors import BadRequest, Conflict, NotFound, NotReady, OverLimit
from storage import catalog, consents, pods_graph, queue, terms, views_repo
from storage.codec import Codec
from views import algebra as A
from views import cost, limits, relevance
from views.compile import compile_query, compiled
from views.errors import UnsupportedFeature
from views.plan import Plan
from views.results import ask, graph, solutions
from views.terms import TermFields, fields_of


def create(engine: Engine, config: Settings, who: Principal, body: ViewIn) -> int:
    """Register a consumer's view within the limits (a quota of views per
    consumer, the query's nesting, the view's estimated size): a bad query
    is refused before anything is stored."""
    require(who, "consumer")
    assert who.agent is not None
    with engine.begin() as c:
        if views_repo.count_views(c, who.agent) >= config.max_views_per_consumer:
            raise OverLimit(f"{who.webid} has {config.max_views_per_consumer} views, the most "
                            "a consumer may register here; drop one first")
        target = _target(c, config, who, body) if body.target is not None else None
        return register_view(c, who.agent, body.name, body.query,
                             max_depth=config.max_query_depth, max_rows=config.max_view_rows,
                             pods_base=config.pods_base, target=target)


def _target(conn: Connection, config: Settings, who: Principal, body: ViewIn) -> tuple[int, str]:
    """The resource (pod, path) a CONSTRUCT view's graph is written into: a
    document of a pod here (not upstream: writes go there first) that the
    consumer may write (WAC)."""
    assert body.target is not None
    if compile_query(body.query).query.form != "CONSTRUCT":
        raise BadRequest("only a CONSTRUCT view's results are a graph to write into a resource")
    if config.upstream_url:
        raise UnsupportedFeature("a view's graph written into a pod that lives upstream")
    prefix = config.pods_base.rstrip("/") + "/"
    pod_name, _, path = body.target.removeprefix(prefix).partition("/")
    if not body.target.startswith(prefix) or not path or path.endswith("/"):
        raise BadRequest(f"{body.target} is not a document of a pod here (under {prefix})")
    pod = access.authorize(conn, who, unquote(pod_name), path, access.WRITE)
    return pod.id, path


def register_view(conn: Connection, consumer: int, name: str, query: str,
                  max_depth: int = limits.MAX_DEPTH, max_rows: int | None = None,
                  pods_base: str | None = None, target: tuple[int, str] | None = None) -> int:
    """Check the query, store the view and queue its backfill, in the
    caller's transaction; with ``max_rows``, refuse a view whose size is
    estimated beyond it over the pods the consumer may read now; with
    ``pods_base``, refuse FROM or FROM NAMED naming anything but a document
    of a pod (no other document is fetched: fail closed, decision 7)."""
    checked = compile_query(query, max_depth=max_depth)
    if pods_base is not None:
        for iri in (*checked.query.from_graphs, *checked.query.from_named):
            if not str(iri).startswith(pods_base.rstrip("/") + "/"):
                raise UnsupportedFeature(f"FROM <{iri}>: a view's dataset is made of documents "
                                         f"of pods here (under {pods_base}/)")
    if max_rows is not None:
        rows = estimated_rows(conn, consumer, checked.plan, max_rows)
        if rows > max_rows:
            raise OverLimit(f"the view's state is estimated at {rows:,} rows over the pods "
                            f"the consumer may read, beyond the limit of {max_rows:,}")
    wanted = relevance.predicates(checked.query)
    ids = None if wanted is None else sorted(terms.intern(conn, map(URIRef, wanted)).values())
    view = views_repo.create_view(conn, consumer, name, query, ids, target)
    queue.enqueue(conn, "backfill", view)
    return view


def estimated_rows(conn: Connection, consumer: int, plan: Plan, cap: int) -> int:
    """``views.cost.estimate`` of the plan from the triple counts of the
    consumer's pods (each count stops at ``cap``)."""
    pods = consents.consented_pods(conn, consumer)
    codec = Codec(conn)

    def triples(tp: A.TriplePattern) -> int:
        slots = [x if isinstance(x, Identifier) else None for x in (tp.s, tp.p, tp.o)]
        ids = codec.encode((t for t in slots if t is not None), add=False)
        if any(t is not None and t not in ids for t in slots):
            return 0  # a constant no pod holds matches nothing
        s, p, o = (None if t is None else ids[t] for t in slots)
        return pods_graph.count_matching(conn, pods, s, p, o, cap + 1) if pods else 0

    return cost.estimate(plan, triples)


def row(conn: Connection, who: Principal, view_id: int) -> Row:
    found = views_repo.view_row(conn, view_id)
    if found is None or not (who.is_admin() or found.consumer_id == who.agent):
        raise NotFound(f"no view {view_id}")
    return found


@dataclass(frozen=True)
class State:
    """Where a view stands for a reader: its status as stored, or
    'rebuilding' when its state was computed with a plan the running code no
    longer builds, or 'revoking' while it still holds data of a pod whose
    consent is revoked (decision 9: revocation is immediate for readers) —
    and why."""

    status: str
    note: str | None

    @property
    def current(self) -> bool:
        return self.status == "ready"


def state(v: Row) -> State:
    """The state of ``v`` (``views_repo.view_row``'s row)."""
    if v.status != "ready":
        return State(v.status, v.status_note)
    if v.plan_fingerprint != compiled(v.query).plan.fingerprint:
        return State("rebuilding", "the engine's plan for this view changed; its state waits "
                                   "for a worker to rebuild it")
    if v.revoked:
        return State("revoking", f"consent for {len(v.revoked)} pod(s) was revoked; the view is "
                                 "withheld until a worker has removed their data")
    return State(v.status, v.status_note)


def describe(engine: Engine, who: Principal, view_id: int) -> ViewOut:
    with catalog.snapshot(engine) as c:
        return _describe(c, row(c, who, view_id))


def _describe(conn: Connection, v: Row) -> ViewOut:
    s = state(v)
    pending = [Progress(job=j.kind, status=j.status, done=j.done, total=j.total, error=j.last_error)
               for j in views_repo.pending(v.unfinished)]
    return ViewOut(id=v.id, name=v.name, query=v.query, status=s.status, note=s.note,
                   watermark=v.watermark, rows=catalog.row_count(conn, v) if s.current else None,
                   plan=compiled(v.query).plan.explain(), placement=v.placement,
                   pending=pending,
                   created_at=v.created_at)


def listing(engine: Engine, who: Principal) -> list[ViewOut]:
    require(who, "consumer")
    assert who.agent is not None
    with catalog.snapshot(engine) as c:
        return [_describe(c, v) for v in views_repo.views_of(c, who.agent)]


async def read_when_current(engine: Engine, who: Principal, view_id: int, min_seq: int,
                            wait: float, notices: ViewNotices | None, offset: int = 0,
                            size: int | None = None) -> Results:
    """``read``'s page, once the view is ready and reflects every change up
    to ``min_seq`` (read-your-writes); 503 with Retry-After, naming why,
    after ``wait`` s. Each try is one snapshot read in the thread pool;
    between tries the request waits on the event loop, holding no thread,
    until a job of the view ends (``notices``) or a short poll interval
    passes."""
    deadline = time.monotonic() + wait
    while True:
        seen = notices.generation(view_id) if notices is not None else 0
        found = await run_in_threadpool(read, engine, who, view_id, min_seq, offset, size)
        if isinstance(found, Results):
            return found
        left = deadline - time.monotonic()
        if left <= 0:
            raise NotReady(f"view {view_id} does not reflect change {min_seq} yet: {found}",
                           {"Retry-After": "1"})
        if notices is not None:
            await notices.wait_async(view_id, seen, left)
        else:
            await asyncio.sleep(min(left, 0.02))


READS = threading.BoundedSemaphore(4)  # snapshot reads at once: a burst of readers
# takes neither every pooled connection nor the GIL from /healthz


def read(engine: Engine, who: Principal, view_id: int, min_seq: int = 0, offset: int = 0,
         size: int | None = None) -> Results | str:
    """The view's solutions ``offset`` to ``offset + size`` (from ``offset``
    on when ``size`` is None) if it reflects change ``min_seq``, else why
    not — checked and read in one snapshot, so the answer is as of the
    commit that was checked (a read took two before: one to check, one to
    read). 409 for a view that failed or a change that does not exist."""
    with READS, catalog.snapshot(engine) as c:
        v = row(c, who, view_id)
        why = _not_current(c, v, min_seq)
        if why is not None:
            return why
        found = _fetch(c, v, offset, size)
    return found if isinstance(found, Results) else found()


def _not_current(c: Connection, v: Row, min_seq: int) -> str | None:
    """Why the view ``v`` does not reflect change ``min_seq`` in ``c``'s
    snapshot (None: it does); 409 for a view that failed or a change that
    does not exist."""
    last = v.last_seq
    if min_seq > last:
        raise Conflict(f"there is no change {min_seq} yet (the last is {last})")
    jobs = views_repo.pending(v.unfinished)
    if v.status == "failed" or any(j.status == "dead" for j in jobs):
        errors = [j.last_error for j in jobs if j.last_error] + [v.status_note]
        raise Conflict(f"view {v.id} failed: {next((e for e in errors if e), 'see its jobs')}")
    s = state(v)
    if not s.current:
        return f"it is {s.status}" + (f" ({s.note})" if s.note else "")
    # Changes, grants and revocations up to min_seq all have their jobs
    # enqueued by now (in the writer's transaction); once those are done
    # the view reflects them.
    behind = [j for j in jobs if j.seq is None or j.seq <= min_seq]
    return f"{len(behind)} of its jobs are pending" if behind else None


@dataclass(frozen=True)
class Results:
    """A view's answer as of one commit: the variables and ordered solutions
    of a SELECT (a page of them: ``total`` counts them all), or the answer
    of an ASK (``answer`` not None), and the watermark they reflect."""

    variables: tuple[str, ...]
    rows: list[dict[str, TermFields]]  # each term as its dictionary fields (note 184)
    answer: bool | None
    watermark: int
    lines: list[str] | None = None  # a CONSTRUCT's graph: sorted N-Triples lines
    total: int = 0  # the solutions (a CONSTRUCT's lines) in all


def _fetch(c: Connection, v: Row, offset: int, size: int | None
           ) -> Results | Callable[[], Results]:
    """The page of the current view ``v`` in ``c``'s snapshot. A SELECT
    ordered by variables or not at all is paged by Postgres (ORDER BY's
    order by the terms' sort keys, else term ids; then its OFFSET and
    LIMIT) and only the page is decoded (``catalog.page``); the others are
    read whole and evaluated (ordered, sliced: ``views.results.solutions``)
    by the function returned, after the snapshot has ended."""
    q = compiled(v.query).query
    by = [(k.expr.name, k.descending) for k in q.order if isinstance(k.expr, A.Var)]
    if q.form == "SELECT" and len(by) == len(q.order):  # ordered by variables, or not
        rows, total = catalog.page(c, v, offset, size, by, q.offset, q.limit)
        return Results(q.variables, rows, None, v.watermark, total=total)
    current, watermark = catalog.results(c, v), int(v.watermark)

    def evaluated() -> Results:
        if q.form == "ASK":
            return Results((), [], ask(current), watermark)
        if q.form == "CONSTRUCT":
            lines = fmt.ntriples(list(graph(q, current)))
            return Results((), [], None, watermark, lines, len(lines))
        every = solutions(q, current)
        end = None if size is None else offset + size
        page = [{x: fields_of(t) for x, t in r.items()} for r in every[offset:end]]
        return Results(q.variables, page, None, watermark, total=len(every))
    return evaluated


def drop(engine: Engine, who: Principal, view_id: int) -> None:
    with engine.begin() as c:
        row(c, who, view_id)
        views_repo.drop_view(c, view_id)

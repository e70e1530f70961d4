"""The maintenance pipeline: view registration, and the jobs a worker runs.

Every job runs in one REPEATABLE READ transaction: the snapshot holds a prefix
of the change log (writers commit in sequence order) and the pods' graphs at
its last change, so ΔG for the view is the net of the changes after its
watermark, and the state, the watermark and the job's completion commit
together — a crash anywhere loses and double-counts nothing.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import sqlalchemy as sa
from rdflib import URIRef
from sqlalchemy import Connection

from server.executors.spark import job as spark_exec
from server.executors.spark.render import NotOnSpark
from storage import queue, terms, views_repo
from storage.db import transient
from storage.krel import Codec, PgRel, PodsGraph, tables_by_node, view_tables
from views import relevance
from views.compile import Compiled, compile_query
from views.dataset import Delta
from views.errors import UnsupportedFeature
from views.kset import KSet
from views.maintain import Maintainer
from views.reference import evaluate

log = logging.getLogger("podviews.pipeline")


class Busy(Exception):
    """Another worker holds the view; the job waits for its turn."""


def register_view(conn: Connection, consumer: int, name: str, query: str) -> int:
    """Check the query, store the view and enqueue its backfill, in the
    caller's transaction."""
    compiled = compile_query(query)
    if _uses_named_graphs(compiled.pattern):
        raise UnsupportedFeature("GRAPH in a view over pods (named graphs are not exposed yet)")
    wanted = relevance.predicates(compiled.query)
    ids = None if wanted is None else sorted(terms.intern(conn, map(URIRef, wanted)).values())
    view = views_repo.create_view(conn, consumer, name, query, ids)
    queue.enqueue(conn, "backfill", view)
    return view


def _uses_named_graphs(pattern: object) -> bool:
    from views import algebra as A

    def walk(p: A.Pattern) -> bool:
        if isinstance(p, A.GraphNames) or isinstance(p, A.BGP) and any(
                t.g is not None for t in p.triples):
            return True
        return any(walk(c) for c in A.children(p))

    return walk(pattern)  # type: ignore[arg-type]


def grant(conn: Connection, pod: int, consumer: int, view: int | None = None,
          actor: str = "admin") -> int:
    """Consent of ``pod`` for a consumer's views (or one): recorded now, applied
    to each view by a grant job."""
    cid, views = views_repo.grant(conn, pod, consumer, view, actor)
    at = views_repo.last_seq(conn)  # min_seq readers wait for the grant from here on
    queue.enqueue_many(conn, "grant", views, {"consent": cid, "seq": at})
    return cid


def revoke(conn: Connection, consent: int, actor: str = "admin") -> None:
    """Revocation: each view the consent reached loses the pod in a revoke job."""
    at = views_repo.last_seq(conn)
    queue.enqueue_many(conn, "revoke", views_repo.revoke(conn, consent, actor),
                       {"consent": consent, "seq": at})


def changed(conn: Connection, pod: int, seq: int) -> None:
    """After a write to ``pod`` (same transaction): wake the views reading it
    that the change can change (``views.relevance``). The others' watermarks
    stay where they are: they reflect the change already."""
    queue.enqueue_many(conn, "apply_changes", views_repo.views_reading(conn, pod, seq),
                       {"seq": seq})


@functools.lru_cache(maxsize=1024)
def compiled(query: str) -> Compiled:
    """Compiled view definitions, kept by the worker process (parsing costs
    ~0.2 s; a compiled query is immutable)."""
    return compile_query(query)


def _maintainer(conn: Connection, view_row, backfill: bool,  # type: ignore[no-untyped-def]
                progress=None, pods: list[int] | None = None,
                tables: dict | None = None) -> tuple[Maintainer, PodsGraph]:  # type: ignore[type-arg]
    """The view's delta program over its state; ``pods``: the pods it reads,
    ``tables``: its K-relation tables (``state.view_tables``; both looked up
    when not given)."""
    codec = Codec(conn)
    graph = PodsGraph(conn, codec, views_repo.readable_pods(conn, view_row.id)
                      if pods is None else pods)
    program = compiled(view_row.query)
    if tables is None:
        tables = view_tables(conn, view_row.id)
    m = Maintainer(program.query.pattern, graph,
                   relations=lambda i: PgRel(conn, codec, view_row.id, i,  # type: ignore[arg-type,return-value]
                                             tables.get(i, {})),
                   backfill=backfill, progress=progress)
    return m, graph


def _progress_reporter(conn: Connection, job_id: int):  # type: ignore[no-untyped-def]
    """Progress written on a connection of its own, visible while the job's
    transaction is still open."""
    engine = conn.engine

    def report(done: int, total: int) -> None:
        with engine.begin() as side:
            queue.report_progress(side, job_id, done, total, "view nodes backfilled")

    return report


def view_delta(conn: Connection, graph: PodsGraph, after: int, upto: int,
               predicates: list[int] | None = None) -> Delta:
    """ΔG of the view's input over (after, upto]: set-membership changes of the
    union of its pods (decision 5); only those with one of ``predicates``
    when given (the view's, note 24: no other triple can match its patterns)."""
    rows = views_repo.net_changes(conn, graph.pods, after, upto, predicates)
    names = graph.codec.decode(x for r in rows for x in (r.s, r.p, r.o))
    delta: Delta = {}
    for r in rows:
        now, before = r.holders > 0, r.holders - r.net > 0
        if now != before:
            delta[(None, names[r.s], names[r.p], names[r.o])] = 1 if now else -1
    return delta


@dataclass(frozen=True)
class Router:
    """Picks a job's executor (decision 4): Spark when the work — triples in
    the view's input, the pod entering or leaving, or the batch — reaches
    ``threshold`` and Spark is installed, else SQL. ``mode`` "sql" or "spark"
    forces one; forced Spark fails a job whose plan it cannot run, auto
    falls back to SQL."""

    mode: str = "auto"
    threshold: int = 100_000
    spark: spark_exec.SparkConfig = field(default_factory=spark_exec.SparkConfig)

    def pick(self, work: int | Callable[[], int]) -> str:
        """``work``: its size, or a function measuring it (called only when
        the size decides)."""
        if self.mode in ("sql", "spark"):
            return self.mode
        if self.mode != "auto":
            raise ValueError(f"unknown executor {self.mode!r} (sql, spark or auto)")
        if not spark_exec.available():
            return "sql"
        size = work() if callable(work) else work
        return "spark" if size >= self.threshold else "sql"


def run_one(engine: sa.Engine, worker: str, router: Router = Router()) -> bool:
    """Claim and run one due job; False when there was none."""
    with engine.connect().execution_options(isolation_level="REPEATABLE READ") as conn:
        try:
            job = queue.claim(conn, worker)
        except sa.exc.OperationalError as e:
            if not transient(e):
                raise
            conn.rollback()  # a job row changed under the claim's snapshot: claim again
            return True
        if job is None:
            conn.rollback()
            return False
        try:
            executor, triples = _run(conn, job, router)
            queue.finish(conn, job, executor, triples)
            conn.commit()
            return True
        except Busy:
            conn.rollback()
            return True
        except Exception as e:
            conn.rollback()
            log.exception("job %s (%s) failed", job.id, job.kind)
            with engine.begin() as side:
                queue.fail(side, job, e)
            return True


class Drift(Exception):
    """A view differs from its from-scratch evaluation."""


def _run(conn: Connection, job: queue.Job, router: Router) -> tuple[str, int | None]:
    """Run the job: the executor that did the work ("sql", "spark", or
    "none") and the job's work in triples (None when it did none): ΔG for
    changes, the pods' triples for a backfill, a verify or a pod moving in or
    out; measured at most once (``functools.cache``), since the router may
    weigh it first (``podviews_job_triples``)."""
    assert job.view_id is not None
    row = views_repo.lock_view(conn, job.view_id)
    if row is None:
        raise Busy()
    upto = row.upto
    if job.kind == "backfill":
        views_repo.adopt_consents(conn, row.id, upto)
        pods = views_repo.readable_pods(conn, row.id)
        progress = _progress_reporter(conn, job.id)
        size = functools.cache(lambda: views_repo.triple_count(conn, pods))
        on_spark = _on_spark(conn, router, row, pods, size, progress=progress) is not None
        if not on_spark:  # a view Spark refused has no tables from it
            _maintainer(conn, row, backfill=True, progress=progress, pods=pods,
                        tables=tables_by_node(row.tables))
        views_repo.set_state(conn, row.id, "ready", upto)
        return ("spark" if on_spark else "sql"), size()
    if row.status == "backfilling":
        return "none", None  # the backfill will see the data and consents as they are then
    if job.kind not in ("apply_changes", "grant", "revoke", "verify"):
        raise ValueError(f"unknown job kind {job.kind}")
    consent = int(job.payload["consent"]) if job.kind in ("grant", "revoke") else None
    move = _consent_move(conn, consent, row.id, job.kind, upto) if consent is not None else None
    # a consent move may have just marked its consent: read the pods again then
    before = list(row.pods) if consent is None else views_repo.readable_pods(conn, row.id)
    pods = before if move is None else \
        sorted(set(before) - {move[0]} | ({move[0]} if move[1] else set()))

    @functools.cache
    def work() -> int:
        if job.kind == "verify":
            return views_repo.triple_count(conn, pods)
        moved = views_repo.triple_count(conn, [move[0]]) if move is not None else 0
        return moved + views_repo.change_count(conn, before, row.watermark, upto,
                                               row.predicates)

    changed = _on_spark(conn, router, row, pods, work, dry_run=job.kind == "verify")
    if changed is None:
        _run_sql(conn, row, job.kind, move, upto, before)
    elif job.kind == "verify":
        if changed:
            raise Drift(f"view {row.id}: {changed} stored rows differ from scratch")
        return "spark", work()
    else:
        views_repo.advance(conn, row.id, row.status, upto)
    if move is not None:
        views_repo.mark_consent(conn, int(consent),  # type: ignore[arg-type]
                                row.id, "granted_seq" if move[1] else "revoked_seq", upto)
    return ("sql" if changed is None else "spark"), work()


def _on_spark(conn: Connection, router: Router, row, pods: list[int],  # type: ignore[no-untyped-def]
              work: Callable[[], int],
              dry_run: bool = False, progress=None) -> int | None:
    """Run the job on Spark when the router says so: the number of stored
    rows that changed, or None when the SQL executor is to run it."""
    if router.pick(work) != "spark":
        return None
    try:
        return spark_exec.refresh(conn, row.id, compiled(row.query).query.pattern, pods,
                                  router.spark, dry_run=dry_run, progress=progress)
    except NotOnSpark as e:
        if router.mode == "spark":
            raise
        log.info("view %s stays on the SQL executor: %s", row.id, e.feature)
        return None


def _run_sql(conn: Connection, row, kind: str,  # type: ignore[no-untyped-def]
             move: tuple[int, bool] | None, upto: int, pods: list[int]) -> None:
    m, graph = _catch_up(conn, row, upto, pods)
    if move is not None:
        _enter_or_leave(conn, m, graph, *move)
    elif kind == "verify":
        got, want = dict(m.root.out.rows), scratch(conn, row.id)
        if got != want:
            raise Drift(f"view {row.id}: {len(set(got.items()) ^ set(want.items()))} "
                        "annotated mappings differ from scratch")


def _catch_up(conn: Connection, row, upto: int,  # type: ignore[no-untyped-def]
              pods: list[int]) -> tuple[Maintainer, PodsGraph]:
    """Apply the changes after the view's watermark, up to ``upto``, to the
    view over ``pods`` (those it read until now)."""
    m, graph = _maintainer(conn, row, backfill=False, pods=pods,
                           tables=tables_by_node(row.tables))  # read with the lock
    if upto > row.watermark:
        m.apply(view_delta(conn, graph, row.watermark, upto, row.predicates))
        views_repo.advance(conn, row.id, row.status, upto)
    return m, graph


def _consent_move(conn: Connection, consent: int, view: int, kind: str,
                  upto: int) -> tuple[int, bool] | None:
    """(pod, entering) when the grant or revoke job has a pod to move into or
    out of the view; None when it was applied already (e.g. by the
    backfill), revoked meanwhile, or never applied."""
    state = views_repo.consent_view(conn, consent, view)
    if state is None:
        return None
    entering = kind == "grant"
    if entering and (state.granted_seq is not None or state.revoked_at is not None):
        return None
    if not entering and (state.granted_seq is None or state.revoked_seq is not None):
        views_repo.mark_consent(conn, consent, view, "revoked_seq", upto)
        return None
    return int(state.pod_id), entering


def _enter_or_leave(conn: Connection, m: Maintainer, graph: PodsGraph, pod: int,
                    entering: bool) -> None:
    """A pod enters (grant) or leaves (revoke) the view: ±ΔG of the triples
    no other readable pod holds (decision 6: consent is data)."""
    others = [p for p in graph.pods if p != pod]
    rows = views_repo.pod_entry(conn, pod, others)
    names = graph.codec.decode(x for r in rows for x in (r.s, r.p, r.o))
    sign = 1 if entering else -1
    delta: Delta = {(None, names[r.s], names[r.p], names[r.o]): sign for r in rows}
    after = PodsGraph(conn, graph.codec, sorted(set(others) | ({pod} if entering else set())))
    m.apply(delta, after)


def read_view(conn: Connection, view: int) -> KSet:
    """The view's current K-set (its root node's relation)."""
    row = conn.execute(sa.text("SELECT id, query FROM views WHERE id = :v"), {"v": view}).one()
    m, _ = _maintainer(conn, row, backfill=False)
    return dict(m.root.out.rows)


def scratch(conn: Connection, view: int) -> KSet:
    """The view evaluated from scratch on the current data of the pods it reads."""
    row = conn.execute(sa.text("SELECT id, query FROM views WHERE id = :v"), {"v": view}).one()
    graph = PodsGraph(conn, Codec(conn), views_repo.readable_pods(conn, view))
    return evaluate(compiled(row.query).query.pattern, graph)


def consistency(conn: Connection) -> list[tuple[int, str, int]]:
    """Every view recomputed from scratch: (view, name, annotated mappings that
    differ); 0 everywhere means no drift."""
    out = []
    for v in conn.execute(sa.text("SELECT id, name FROM views WHERE status = 'ready' ORDER BY id")):
        got, want = read_view(conn, v.id), scratch(conn, v.id)
        out.append((v.id, v.name, len(set(got.items()) ^ set(want.items()))))
    return out

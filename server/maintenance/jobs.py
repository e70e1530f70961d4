"""The jobs a worker runs, each in one REPEATABLE READ transaction: the
snapshot holds a prefix of the change log (writers commit in sequence order)
and the pods' graphs at its last change, so ΔG for the view is the net of
the changes after its watermark, and the state, the watermark and the job's
completion commit together — a crash anywhere loses and double-counts
nothing (design notes 7 and 8).

Every job first checks the view's plan: state computed with a plan whose
fingerprint differs from the one the running code builds is rebuilt, never
maintained (``backfill`` with a note in the view's status).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

import sqlalchemy as sa
from sqlalchemy import Connection, Row

from server.executors import sql
from server.executors.spark.config import NotOnSpark
from server.executors.sql import run as rendered
from server.maintenance import derived
from server.maintenance.limits import Limits
from server.maintenance.plans import ENGINE
from server.maintenance.router import Router
from storage import changes, consents, driver, feed, krel, pods_graph, queue, views_repo
from storage.db import transient
from storage.pods_graph import DEFAULT_BASE
from views.compile import Compiled, compiled
from views.dataset import Spec
from views.errors import ViewTooLarge
from views.plan import Plan

log = logging.getLogger("podviews.maintenance")


class JobKind(StrEnum):
    BACKFILL = "backfill"  # the view's state from scratch (registration, rebuild)
    APPLY_CHANGES = "apply_changes"  # the changes after its watermark
    GRANT = "grant"  # a consented pod enters the view
    REVOKE = "revoke"  # a pod whose consent was revoked leaves it
    VERIFY = "verify"  # the state checked against a from-scratch evaluation


class Busy(Exception):
    """Another worker holds the view; the job waits for its turn."""


class Drift(Exception):
    """A view differs from its from-scratch evaluation."""


Outcome = tuple[str, int | None]  # the executor that did the work, its size in triples


@dataclass(frozen=True)
class Run:
    """One job on one view, in the job's transaction: the view's row locked,
    with what the job reads next (``upto``, ``pods``, ``tables``)."""

    conn: Connection
    job: queue.Job
    view: Row
    plan: Plan
    router: Router
    limits: Limits
    base: str = DEFAULT_BASE  # resource IRIs: the names of the documents' graphs
    spec: Spec = field(default_factory=Spec)  # the dataset the view's query reads (FROM, FROM NAMED, GRAPH)
    moved: list[int] = field(default_factory=list)  # the view brought to upto: its state's growth
    captured: list[str] = field(default_factory=list)  # the roots the job turned capture on for
    closed: list[Row] = field(default_factory=list)  # its rendered statement ended the job: its row
    graph_rows: float | None = None  # the graph's triples by its statistics (-1: none)

    @property
    def documents(self) -> bool:
        """The view reads documents: only the interpreter can (the rendered
        SQL and Spark read the union default graph)."""
        return self.spec.documents

    @property
    def upto(self) -> int:
        return int(self.view.upto)

    def tables(self) -> dict[str, krel.NodeTables]:
        return krel.by_node(self.view.tables)

    def tallies(self) -> dict[str, str]:
        return krel.tallies(self.view.tables)

    @property
    def fed(self) -> bool:
        """The view has had a state: it has a change feed."""
        return self.view.captured is not None

    @property
    def capturing(self) -> bool:
        """ΔV is captured in this transaction (by the claim, or ``capture``)."""
        return bool(self.view.captured) or bool(self.captured)

    def capture(self, root: str | None = None) -> None:
        """ΔV captured from here on, for ``root`` (the state's root if not
        given), where the claim did not turn it on (a rendered change job,
        which records ΔV from its own statement, design note 170) or for
        another root; nothing for a view without a feed."""
        root = root or str(self.view.root_node)
        if self.fed and (root != self.view.root_node or not self.capturing):
            feed.capture(self.conn, self.view.id, root)
            self.captured.append(root)


def run_one(engine: sa.Engine, worker: str, router: Router | None = None,
            limits: Limits | None = None, base: str = DEFAULT_BASE) -> bool:
    """Claim and run one due job (on the executor ``router`` picks, within
    ``limits``; the defaults if not given; documents named under ``base``);
    False when there was none."""
    router, limits = router or Router(), limits or Limits()
    with engine.connect().execution_options(isolation_level="REPEATABLE READ") as conn:
        try:
            claimed = views_repo.claim_and_lock(conn, worker, router.weighs())
        except sa.exc.OperationalError as e:
            if not transient(e):
                raise
            conn.rollback()  # a job row changed under the claim's snapshot: claim again
            return True
        if claimed is None:
            # nothing changed: a commit, as a rollback would make psycopg deallocate
            # the session's prepared statements (the rendered ones too)
            conn.commit()
            return False
        job, row = claimed
        try:
            if job.view_id is None:
                raise ValueError(f"the {job.kind} job {job.id} names no view")
            if row is None:
                raise Busy()
            run(conn, job, row, router, limits, base)
            conn.commit()
            driver.tidied(conn)  # the session's tables vacuumed now and then (note 152)
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


def run(conn: Connection, job: queue.Job, row: Row, router: Router, limits: Limits,
        base: str = DEFAULT_BASE) -> Outcome:
    """Run the job on its view's row, locked with what the job reads next
    (``views_repo.claim_and_lock``), and end it (``views_repo.close``):
    done, with the executor that did the work ("sql", "spark", or "none")
    and its work in triples (None when it did none), which are returned.
    The view's ΔV is recorded in its change feed at the position the job
    brought it to (``storage.feed``), whichever executor computed it; a
    view's first backfill starts the feed instead."""
    c = compiled(row.query)
    # statistics far behind the graph analyzed first: plans are made from them (note 183)
    graph_rows = pods_graph.analyzed(conn) if row.graph_stale else row.graph_rows
    r = Run(conn, job, row, c.plan, router, limits, base, view_spec(c, row),
            graph_rows=graph_rows)
    kind = JobKind(job.kind)
    if r.plan.root.id != row.root_node:
        r.capture(r.plan.root.id)  # a new plan: its root's new tables watched
    built = kind is JobKind.BACKFILL
    if kind is not JobKind.BACKFILL and row.plan_fingerprint not in (None, r.plan.fingerprint):
        outcome, built = backfill(r), True  # the plan changed under the view: rebuilt, never maintained
    elif kind is not JobKind.BACKFILL and row.status in ("backfilling", "rebuilding"):
        outcome = "none", None  # the backfill will see the data and consents as they are then
    else:
        outcome = HANDLERS[kind](r)
    where = placement(r, outcome[0])
    if where is not None and where != row.placement:
        views_repo.place(conn, row.id, where)
    if row.target_pod is not None:  # a CONSTRUCT view's graph into the resource it names
        derived.write_back(conn, row.id)
    grown = sum(r.moved)
    if r.closed:  # the rendered statement ended the job: ΔV after the feed's last delta
        closed = r.closed[0]
        assert closed.last is None or closed.last < r.upto, "a delta at or past the job's"
    else:  # ΔV captured, if anything was (a rendered statement that did not run changed nothing)
        recording = (r.upto, limits.retention) if r.capturing else None
        closed = views_repo.close(conn, job, row.id, r.upto if r.moved else int(row.watermark),
                                  grown, outcome, recording, built)
        if recording is not None:
            feed.recorded(conn, row.id, *recording, closed)
    if grown > 0:
        _within_limits(r, int(closed.state_rows))
    return outcome


def view_spec(c: Compiled, row: Row) -> Spec:
    """The dataset the view reads: its query's, less the document it writes
    its graph into (it never reads its own output)."""
    if row.target_pod is None:
        return c.spec
    return dataclasses.replace(c.spec, exclude=(int(row.target_pod), str(row.target_path)))


# ------------------------------------------------------------ handlers


def backfill(r: Run) -> Outcome:
    """The view's state from scratch at ``upto``, over the pods it may read
    then; a view whose state was computed with another plan has its tables
    dropped first and says so in its status."""
    view, plan = r.view, r.plan
    if r.job.payload.get("rebuild") and view.status == "ready" and \
            view.plan_fingerprint == plan.fingerprint:
        return "none", None  # rebuilt already (by a job that found the plan changed)
    note = None
    if view.plan_fingerprint is not None and view.plan_fingerprint != plan.fingerprint:
        note = (f"rebuilt at change {r.upto}: the engine's plan for this view changed "
                f"(fingerprint {view.plan_fingerprint[:12]} → {plan.fingerprint[:12]})")
    elif view.status == "rebuilding":
        note = f"rebuilt at change {r.upto}: {view.status_note or 'its state was rebuilt'}"
    r.capture()
    if view.plan_fingerprint is not None:  # the old results leave the feed, the new enter
        feed.forget(r.conn, view.id, view.root_node)
    krel.drop_all(r.conn, view.id)
    consents.adopt_consents(r.conn, view.id, r.upto)
    pods = consents.readable_pods(r.conn, view.id)
    progress = _progress_reporter(r.conn, r.job.id)
    size = functools.cache(lambda: pods_graph.triple_count(r.conn, pods))
    on_spark = _on_spark(r, pods, size, progress=progress) is not None
    if on_spark:
        rows = krel.size(r.conn, view.id)
    else:
        m, _ = sql.program(r.conn, view.id, plan, pods, {}, backfill=True, progress=progress,
                           max_rows=r.limits.max_view_rows, base=r.base, spec=r.spec)
        rows = m.grown
    _within_limits(r, rows)
    if unrendered(r) is None:  # its groups' tallies, which its batches read (note 183)
        rendered.fill(r.conn, view.id, plan, pods, r.upto)
    views_repo.built(r.conn, view.id, r.upto, plan.fingerprint, plan.root.id, ENGINE, note,
                     rows)
    if view.plan_fingerprint is None:
        feed.start(r.conn, view.id, plan.root.id, r.upto)
    return ("spark" if on_spark else "sql"), size()


def _within_limits(r: Run, rows: int) -> None:
    if rows > r.limits.max_state_rows:
        raise ViewTooLarge(f"its state would hold {rows:,} rows; the limit is "
                           f"{r.limits.max_state_rows:,}")


def catch_up(r: Run, verify: bool = False) -> Outcome:
    """The view brought to ``upto``: the changes after its watermark over the
    pods it read until now, then every consent logged by then — pods
    entering or leaving (decision 6) — whichever job kind woke it. So a
    view at position U reflects exactly the log up to U, and two jobs never
    record a delta at the same position. ``verify`` then compares the
    state with a from-scratch evaluation."""
    if r.job.kind in (JobKind.GRANT, JobKind.REVOKE):
        consent = int(r.job.payload["consent"])
        if consents.consent_view(r.conn, consent, r.view.id) is None:
            raise ValueError(f"consent {consent} does not reach view {r.view.id}")
    before = list(r.view.pods)
    pods = [int(p) for p in r.view.consented]
    moves = [(p, True) for p in pods if p not in before] + \
        [(p, False) for p in before if p not in pods]
    if any(not entering for _, entering in moves):
        last = feed.last_seq(r.conn, r.view.id)  # earlier deltas hold the pod's rows
        if last is not None:
            feed.compact(r.conn, r.view.id, last)

    def work() -> int:
        if verify:
            return pods_graph.triple_count(r.conn, pods)
        moved = sum(pods_graph.triple_count(r.conn, [p]) for p, _ in moves)
        if r.view.batch is not None:  # counted with the lock
            return moved + int(r.view.batch)
        return moved + changes.change_count(r.conn, before, r.view.watermark, r.upto,
                                            r.view.predicates)

    outcome = _maintain(r, before, pods, work, moves, verify)
    if r.view.unsettled:  # read with the lock, in the job's snapshot
        consents.settle(r.conn, r.view.id, r.upto)
    return outcome


def verify(r: Run) -> Outcome:
    """The stored state compared with a from-scratch evaluation (after
    catching up); a difference fails the job."""
    return catch_up(r, verify=True)


HANDLERS: dict[JobKind, Callable[[Run], Outcome]] = {
    JobKind.BACKFILL: backfill, JobKind.APPLY_CHANGES: catch_up,
    JobKind.GRANT: catch_up, JobKind.REVOKE: catch_up, JobKind.VERIFY: verify}


def _maintain(r: Run, before: list[int], pods: list[int], work: Callable[[], int],
              moves: list[tuple[int, bool]], verify: bool = False) -> Outcome:
    """Bring the view to ``upto`` on the executor the router picks: on SQL,
    the changes over ``before`` (the pods it read until now), then each pod
    moving; on Spark, every node evaluated over ``pods`` and replaced."""
    size = functools.cache(work)
    renders = not moves and not verify and unrendered(r) is None  # one statement on SQL
    # ... which records ΔV and ends the job where the job stays on SQL (design note 170)
    ends = renders and r.fed and r.router.pick(size) != "spark"
    if not ends:
        r.capture()
    if not moves and not verify and (done := _delta_on_spark(r, before, size)) is not None:
        _moved(r, done[0])
        return "spark", done[1]  # the work: ΔG's triples
    changed = _on_spark(r, pods, size, dry_run=verify and not moves)
    if changed is not None:
        if verify and changed and not moves:
            raise Drift(f"view {r.view.id}: {changed} stored rows differ from scratch")
        _moved(r, krel.size(r.conn, r.view.id) - int(r.view.state_rows))
        return "spark", size()
    if renders:
        applied = rendered.maintain(r.conn, r.view.id, r.plan, r.tables(), r.tallies(), before,
                                    r.view.watermark, r.upto, r.view.predicates,
                                    r.limits.max_view_rows, r.view.staged, r.graph_rows,
                                    _ending(r) if ends else None)
        _moved(r, applied.grown)
        if applied.closed is not None:
            r.closed.append(applied.closed)
        return "sql", applied.triples  # the work: ΔG's triples
    m, graph, changed = sql.catch_up(r.conn, r.view.id, r.plan, r.tables(), before,
                                     r.view.watermark, r.upto, r.view.predicates,
                                     r.limits.max_view_rows, r.base, r.spec)
    for pod, entering in moves:
        sql.enter_or_leave(r.conn, m, graph, pod, entering)
        now = [p for p in graph.pods if p != pod] + ([pod] if entering else [])
        graph = graph.with_pods(sorted(now))
    _moved(r, m.grown)
    if verify:
        got, want = m.result, sql.scratch(r.conn, r.plan, pods, r.base, r.spec)
        if got != want:
            raise Drift(f"view {r.view.id}: {len(set(got.items()) ^ set(want.items()))} "
                        "annotated mappings differ from scratch")
    return "sql", (size() if moves or verify else changed)  # the work: ΔG's triples


def _ending(r: Run) -> rendered.Ending:
    """The parameters of the job's end for the rendered statement that ends
    it (``views_repo.close``'s), for a ΔG of the size given."""
    return lambda triples: views_repo.ending(r.job, r.view.id, r.upto, ("sql", triples),
                                             (r.upto, r.limits.retention))


def _moved(r: Run, grown: int) -> None:
    """The view brought to ``upto`` with ``grown`` more stored rows: written
    when the job ends (``views_repo.close``), its limits checked then."""
    r.moved.append(grown)


def unrendered(r: Run, spark: bool = False) -> str | None:
    """Why the view's batches on SQL go through the interpreter rather than
    one rendered statement (None: they do not); with ``spark``, why its
    batches on Spark, when its plan renders there, are evaluated rather
    than run through the delta program."""
    if not r.router.render and not r.router.render_from_rows:
        return "rendering is off (PODVIEWS_SQL_RENDER)"
    if r.documents:
        return "the view reads documents, which only the interpreter reads"
    why = rendered.unrendered(r.plan)
    if why is not None:
        return f"a node SQL does not render: {why}"
    # a view that groups renders whatever its size: each batch reads the members of
    # the groups it touches, which its stored state need not count (note 153)
    rows = r.router.render_from_rows
    if r.router.render or r.plan.grouped or \
            max(int(r.view.state_rows), int(r.view.solutions or 0)) >= rows:
        return None
    small = f"its state and its solutions hold fewer than {rows:,} rows " \
            "(PODVIEWS_SQL_RENDER_FROM_ROWS)"
    if spark:  # the program's Spark stages cost more than evaluating a small state (note
        # 137), unless it reads only the triples its batch's keys reach: one job (note 175)
        return None if rendered.reaches(r.plan) else small
    # on SQL, one whose statement is cheap to plan renders whatever its size (note 154)
    scans = rendered.scans(r.plan)
    if scans > rendered.PLANNED_SCANS:
        return (f"its statement joins {scans} triple scans (over {rendered.PLANNED_SCANS}: "
                f"planned per session and kind of batch) and {small}")
    tables = rendered.merged_tables(r.plan)
    if tables > rendered.MERGED_TABLES:
        return (f"its statement merges into {tables} tables (over {rendered.MERGED_TABLES}) "
                f"and {small}")
    return None


SPARK_PROGRAM = "spark: the delta program as Spark SQL"  # how ``placement`` says it runs there


def placement(r: Run, executor: str) -> str | None:
    """Where the view's batches run, in words (None when the job did no
    work): on Spark, every node evaluated and replaced; on SQL, as one
    rendered statement or through the interpreter, and why."""
    if executor == "spark":
        replaced = "every node evaluated and its state replaced by the difference"
        why = spark_unrendered(r)
        if why is not None:
            return f"spark: {replaced} (the delta program does not run on Spark: {why})"
        return (f"{SPARK_PROGRAM} ({rendered.spark_reads(r.plan)}) for batches under "
                f"{r.router.spark_delta_below:.0%} of the view's input, else {replaced}")
    if executor != "sql":
        return None
    why = unrendered(r)
    return views_repo.RENDERED if why is None else f"sql: interpreter, {why}"


def _delta_on_spark(r: Run, pods: list[int], work: Callable[[], int]) -> tuple[int, int] | None:
    """The batch maintained by the delta program on Spark when the router
    sends it to Spark, the program runs there (``spark_unrendered``) and the
    batch is small (``Router.spark_delta``): the change in stored
    rows and ΔG's size; None when it is not."""
    if r.router.pick(work) != "spark" or spark_unrendered(r) is not None:
        return None
    if not r.router.spark_delta(work(), lambda: pods_graph.triple_count(r.conn, pods)):
        return None
    from server.executors.spark import delta

    return delta.maintain(r.conn, r.view.id, r.plan, r.tables(), r.tallies(), pods,
                          r.view.watermark, r.upto, r.view.predicates, r.router.spark,
                          r.limits.max_view_rows, r.graph_rows)


def spark_unrendered(r: Run) -> str | None:
    """Why the view's batches on Spark never run the delta program (None:
    they do when small): it must render to Spark SQL, and the view be one
    whose state is not small, whatever its statement's scans — a small
    state's view evaluates in less than the program's Spark stages cost
    (note 137; ``unrendered``) — or one whose program reads only the
    triples its batch's keys reach (note 175)."""
    return rendered.unrendered(r.plan, spark=True) or unrendered(r, spark=True)


def _on_spark(r: Run, pods: list[int], work: Callable[[], int], dry_run: bool = False,
              progress: Callable[[int, int], None] | None = None) -> int | None:
    """Run the job on Spark when the router says so: the number of stored
    rows that changed, or None when the SQL executor is to run it."""
    if r.router.pick(work) != "spark":
        return None
    if r.documents:  # Spark reads the pods' union default graph only
        if r.router.mode == "spark":
            raise NotOnSpark("GRAPH, FROM or FROM NAMED over documents")
        return None
    from server.executors.spark.job import refresh

    try:
        return refresh(r.conn, r.view.id, r.plan, pods, r.router.spark, dry_run=dry_run,
                       progress=progress)
    except NotOnSpark as e:
        if r.router.mode == "spark":
            raise
        log.info("view %s stays on the SQL executor: %s", r.view.id, e.feature)
        return None


def _progress_reporter(conn: Connection, job_id: int) -> Callable[[int, int], None]:
    """Progress written on a connection of its own, visible while the job's
    transaction is still open."""
    engine = conn.engine

    def report(done: int, total: int) -> None:
        with engine.begin() as side:
            queue.report_progress(side, job_id, done, total, "view nodes backfilled")

    return report

"""Views as the API and the workers read and change them: registration,
the job's lock on a view with what the job reads next, its state (status,
watermark, the plan its state was computed with), and dropping it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from sqlalchemy import Connection, Row, text

from storage import driver, feed, krel, queue
from storage.consents import CONSENTED, READABLE, REVOKED_UNAPPLIED, UNSETTLED
from storage.pods_graph import GRAPH_ROWS


def create_view(conn: Connection, consumer: int, name: str, query: str,
                predicates: list[int] | None, target: tuple[int, str] | None = None) -> int:
    """``predicates``: the term ids of the predicates the view can match
    (None: any), which decide the writes that wake it; ``target``: the
    resource (pod, path) a CONSTRUCT view's graph is written into."""
    pod, path = target if target is not None else (None, None)
    return int(conn.execute(text(
        "INSERT INTO views (consumer_id, name, query, status, watermark, predicates, "
        "target_pod, target_path) VALUES (:c, :n, :q, 'backfilling', 0, :preds, :tp, :tpath) "
        "RETURNING id"), {"c": consumer, "n": name, "q": query, "preds": predicates,
                          "tp": pod, "tpath": path}).scalar_one())


_COLUMNS = ("v.id, v.consumer_id, v.name, v.query, v.status, v.watermark, v.created_at, "
            "v.predicates, v.plan_fingerprint, v.root_node, v.plan_engine, v.status_note, "
            "v.state_rows, v.target_pod, v.target_path, v.placement, v.solutions")


# The changed triples of the pods a ready view reads after its watermark,
# with its predicates: its next batch's size (``changes.change_count``).
_BATCH = ("CASE WHEN v.status = 'ready' THEN (SELECT count(*) FROM change_triples ct "
          "JOIN changes c ON c.seq = ct.seq WHERE c.pod_id IN ({pods}) "
          "AND c.seq > v.watermark AND c.seq <= (SELECT coalesce(max(seq), 0) FROM changes) "
          "AND (v.predicates IS NULL OR ct.p = ANY(v.predicates))) END")


# How a view whose batches run as one rendered statement is placed (``GET
# /views/{id}`` shows it; ``server.maintenance.jobs.placement`` writes it)
RENDERED = "sql: one rendered statement per batch"
# A change job of a ready view placed so: the claim stages its ΔG (and does
# not ready the table again after: a CASE, whose branches run in order)
_STAGES = f"j.kind = 'apply_changes' AND v.status = 'ready' AND v.placement = '{RENDERED}'"
# The graph's table holds over twice the pages its statistics counted, and
# over 8 (a graph no ANALYZE or VACUUM has counted yet counted none)
_STALE = "pg_relation_size(oid) > 8192 * (2 * relpages + 8)"
# The view's K-relation tables as rows of ``krel.by_node`` (a JSON array)
_TABLES = ("(SELECT coalesce(json_agg(json_build_array(k.node, k.table_name, k.variables)), "
           "'[]') FROM krel_tables k WHERE k.view_id = v.id)")
# ``claim_and_lock``'s statement: the same text for every job, built once
_READABLE = READABLE.format(view="v.id")
_CLAIM_AND_LOCK = (
    f"{queue.CLAIMED}SELECT j.id AS job_id, j.kind AS job_kind, j.view_id AS job_view, "
    "j.payload AS job_payload, j.attempts AS job_attempts, "
    "j.max_attempts AS job_max_attempts, v.* FROM j LEFT JOIN LATERAL ("
    f"SELECT {_COLUMNS}, (CASE WHEN v.plan_fingerprint IS NULL THEN NULL WHEN {_STAGES} THEN "
    f" {feed.root_call('v.id', 'v.root_node')} IS NULL "
    f" ELSE {feed.capture_call('v.id', 'v.root_node')} IS NOT NULL END) AS captured, "
    " (SELECT coalesce(max(seq), 0) FROM changes) AS upto, "
    f" {GRAPH_ROWS} AS graph_rows, "
    f" (SELECT {_STALE} FROM pg_class WHERE oid = CAST('pod_triples' AS regclass)) AS graph_stale, "
    f" ARRAY({_READABLE}) AS pods, ARRAY({CONSENTED.format(view='v.id')}) AS consented, "
    " EXISTS (SELECT 1 FROM consent_views cv JOIN consents c ON c.id = cv.consent_id "
    f"  WHERE cv.view_id = v.id AND {UNSETTLED}) AS unsettled, "
    f" {_TABLES} AS tables, "
    f" CASE WHEN j.kind = 'apply_changes' AND (SELECT CAST(:weigh AS boolean)) THEN "
    f"{_BATCH.format(pods=_READABLE)} END "
    f"  AS batch, CASE WHEN {_STAGES} THEN podviews_delta_staged(ARRAY({_READABLE}), "
    "  v.watermark, (SELECT coalesce(max(seq), 0) FROM changes), v.predicates) END AS staged, "
    f" CASE WHEN {_STAGES} THEN true WHEN j.kind <> 'backfill' THEN "
    "  podviews_delta_start() IS NOT NULL ELSE false END AS delta_ready "
    "FROM views v WHERE v.id = j.view_id FOR NO KEY UPDATE OF v SKIP LOCKED) v ON true")


def claim_and_lock(conn: Connection, worker: str, weigh: bool = False
                   ) -> tuple[queue.Job, Any | None] | None:
    """The oldest due job claimed (``queue.claim``) and its view's row locked
    for this transaction, in one statement: None when no job is due; the
    row None when another job holds the view. With the row, what a job
    reads next (one round trip, design notes 119, 122, 142): ``upto`` (the
    last change's seq), ``graph_rows`` (the graph's triples as Postgres's
    statistics last counted them; -1 before any: note 165), ``graph_stale``
    (the graph has grown past twice what they counted: ``_STALE``, note 183), ``pods`` (the
    pods it reads), ``consented`` (those whose consents in force reach it,
    applied or not), ``unsettled`` (a
    consent reaching it is not applied to it: ``consents.settle`` has
    work), ``tables`` (its K-relation tables: rows of ``krel.by_node``)
    and, for a change job with ``weigh`` and the view ready, ``batch``: the
    size of its batch up to ``upto`` (else NULL). For every job but a
    backfill, the session's ΔG table is made ready, empty, and the
    transaction set to run without JIT, with generic plans and to commit
    without waiting for the disk (``podviews_delta_start``, migrations
    0020, 0023, 0025; ``delta_ready`` says it was). For a change job of a
    ready view whose batches run as one rendered statement (``RENDERED``),
    the table is also filled with ΔG over ``pods`` after the watermark up
    to ``upto`` (``podviews_delta_staged``, migration 0028): ``staged``
    holds its triples counted by predicate and sign, and the job sends no
    statement of its own to stage it (design note 157). Otherwise
    ``staged`` is NULL and ``server.executors.sql.run.stage`` fills it.

    A view that has had a state has a change feed: the statement also turns
    on the capture of its ΔV for the transaction (``storage.feed.capture``,
    with the root its state was built with), a round trip a job less
    (design note 130) — unless its ΔG is staged here: its rendered
    statement records ΔV itself and ends the job (design note 170), and the
    statement only names the feed's root (``storage.feed.root_call``).
    ``captured`` is true when the capture is on, false when only the root
    is named, NULL for a view without a feed."""
    row = driver.first(conn, _CLAIM_AND_LOCK, {**queue.claiming(worker), "weigh": weigh})
    if row is None:
        return None
    job = queue.Job(row.job_id, row.job_kind, row.job_view, row.job_payload, row.job_attempts,
                    row.job_max_attempts)
    return job, (row if row.id is not None else None)


def built(conn: Connection, view: int, watermark: int, fingerprint: str, root: str,
          engine: str, note: str | None, rows: int) -> None:
    """The view's state is its plan's, complete at ``watermark``, ``rows``
    rows: ready; its solutions counted from its root's tables."""
    conn.execute(text(
        "UPDATE views SET status = 'ready', watermark = :w, plan_fingerprint = :f, "
        "root_node = :r, plan_engine = :e, status_note = :n, state_rows = :rows, "
        "solutions = :sol WHERE id = :v"),
        {"w": watermark, "f": fingerprint, "r": root, "e": engine, "n": note, "v": view,
         "rows": rows, "sol": krel.count(conn, krel.tables(conn, view).get(root, {}))})


def count_views(conn: Connection, consumer: int) -> int:
    return int(conn.execute(text("SELECT count(*) FROM views WHERE consumer_id = :c"),
                            {"c": consumer}).scalar_one())


def checked(conn: Connection, view: int, engine: str) -> None:
    """The engine ``engine`` builds the plan the view's state was computed with."""
    conn.execute(text("UPDATE views SET plan_engine = :e WHERE id = :v"),
                 {"e": engine, "v": view})


def rebuild(conn: Connection, view: int, note: str) -> bool:
    """Queue a rebuild of the view's state (its plan changed): status
    'rebuilding' with ``note``, and a backfill job — unless one is queued
    already. Whether a job was queued."""
    conn.execute(text("UPDATE views SET status = 'rebuilding', status_note = :n WHERE id = :v"),
                 {"n": note, "v": view})
    queued = conn.execute(text(
        "INSERT INTO jobs (kind, view_id, payload, status, attempts, max_attempts) "
        "SELECT 'backfill', :v, CAST('{\"rebuild\": true}' AS jsonb), 'queued', 0, 5 "
        "WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE view_id = :v AND kind = 'backfill' "
        "                  AND status IN ('queued', 'running', 'failed')) RETURNING id"),
        {"v": view}).first()
    return queued is not None


def fail(conn: Connection, view: int, note: str) -> None:
    """The view cannot be maintained any more: status 'failed' with ``note``."""
    conn.execute(text("UPDATE views SET status = 'failed', status_note = :n WHERE id = :v"),
                 {"n": note, "v": view})


def unchecked(conn: Connection, engine: str) -> list[Row]:
    """Ready views not yet checked against the engine ``engine`` (the others
    are being built by it, or failed)."""
    return list(conn.execute(text(
        "SELECT id, query, plan_fingerprint FROM views WHERE status = 'ready' "
        "AND plan_engine IS DISTINCT FROM :e ORDER BY id"), {"e": engine}).all())


# The view's queued change jobs its watermark now covers, done too
# ("coalesced"): gathered once (an array), then updated by id — as ``IN``
# they were a semi-join the planner, told the queue is small, re-scanned once
# per job row (design note 142).
_COVERED = ("covered AS (UPDATE jobs SET status = 'done', updated_at = now(), "
            "payload = payload || CAST('{{\"executor\": \"coalesced\"}}' AS jsonb) "
            "WHERE id = ANY(ARRAY(SELECT id FROM jobs WHERE view_id = :v "
            " AND kind = 'apply_changes' AND status = 'queued' "
            " AND CAST(payload->>'seq' AS bigint) <= :u FOR NO KEY UPDATE SKIP LOCKED)){gate})")


def closing(net: Sequence[str] | None, grown: str = ":n", gate: str = "",
            tallied: bool = False) -> tuple[str, str]:
    """A job's end (``close``) as CTEs, and the columns of its row: ΔV
    recorded in the feed from ``net`` (``feed.recorded_ctes``: the captured
    changes, ``feed.CAPTURED``, or a rendered statement's own, design note
    170; None: nothing to record), the state ``grown`` rows larger (an SQL
    expression), and each change gated by ``gate`` (a condition they all
    need, written ``AND …``). The view's group tallies move to a new epoch
    (none written before is read again, migration 0032) unless the job's
    only change was a rendered statement's, which keeps them (``tallied``)."""
    feed_ctes, counted, result = ((f"{feed.recorded_ctes(net, gate)}, ", f", {feed.COUNTED}",
                                   feed.RECORD_RESULT) if net is not None else
                                  ("", "", "NULL AS last, NULL AS added, NULL AS removed"))
    solutions = (", solutions = solutions + CASE WHEN :built THEN 0 ELSE "
                 "(SELECT coalesce(sum(k), 0) FROM net) END" if net is not None else "")
    epoch = "" if tallied else ", tally_epoch = tally_epoch + 1"
    moved = ("moved AS (UPDATE views SET watermark = greatest(watermark, :u), "
             f"state_rows = state_rows + {grown}{counted}{solutions}{epoch} WHERE id = :v{gate} "
             "RETURNING state_rows)")
    columns = (f"(SELECT state_rows FROM moved) AS state_rows, {result}, "
               f"({queue.NOTIFIED}) AS notified")
    return f"{feed_ctes}{queue.finished(gate)}, {_COVERED.format(gate=gate)}, {moved}", columns


_CLOSE = {fed: "WITH {} SELECT {}".format(*closing(feed.CAPTURED if fed else None))
          for fed in (False, True)}


def ending(job: queue.Job, view: int, upto: int, outcome: tuple[str | None, int | None],
           recording: tuple[int, feed.Retention] | None, grown: int | None = None,
           built: bool = False) -> dict[str, Any]:
    """``closing``'s parameters (``close``'s arguments; ``grown`` None: the
    statement counts it)."""
    params = {**queue.finishing(job, *outcome), "v": view, "u": upto, "built": built}
    if grown is not None:
        params["n"] = grown
    if recording is not None:
        params.update(feed.parameters(view, *recording))
    return params


def close(conn: Connection, job: queue.Job, view: int, upto: int, grown: int,
          outcome: tuple[str | None, int | None], recording: tuple[int, feed.Retention] | None,
          built: bool = False) -> Row:
    """A job's end in one statement (design note 146): the view's watermark
    moved to ``upto`` (never back) and its state ``grown`` rows larger,
    its queued change jobs this covers done ("coalesced"), the job done
    with ``outcome`` (the executor that did its work, its size in triples)
    and readers waiting on the view told; with ``recording`` (the position
    and retention of the view's feed), ΔV captured in the transaction
    recorded in the feed as ``feed.record`` does, and the view's solutions
    moved by it — unless the job ``built`` the state (``built`` counted
    them). The row: the rows the state holds now, and
    ``feed.RECORD_RESULT``'s columns for ``feed.recorded``. (A rendered
    statement ends its job itself with the same CTEs: ``closing``.)"""
    return driver.one(conn, _CLOSE[recording is not None],
                      ending(job, view, upto, outcome, recording, grown, built))


def place(conn: Connection, view: int, placement: str) -> None:
    """Where the view's batches run now (``GET /views/{id}`` shows it)."""
    conn.execute(text("UPDATE views SET placement = :p WHERE id = :v"),
                 {"p": placement, "v": view})


# A view's jobs not done yet, oldest first, as a JSON array of ``Pending``'s fields
_UNFINISHED = ("(SELECT coalesce(json_agg(json_build_array(j.kind, j.status, j.last_error, "
               "p.done, p.total, CAST(j.payload->>'seq' AS bigint)) ORDER BY j.id), '[]') "
               "FROM jobs j LEFT JOIN job_progress p ON p.job_id = j.id "
               "WHERE j.view_id = {view} AND j.status <> 'done')")
# A view's row with what reading it needs, in one statement (one round trip,
# one snapshot; a results read sent five: design note 192): ``unfinished``
# (``pending`` reads it), ``revoked`` (the pods whose revocation its state has
# not applied: it must not be read), ``tables`` (rows of ``krel.by_node``)
# and ``last_seq`` (the last change's)
_VIEW = (f"SELECT {_COLUMNS}, {_UNFINISHED.format(view='v.id')} AS unfinished, "
         f"ARRAY({REVOKED_UNAPPLIED.format(view='v.id')}) AS revoked, {_TABLES} AS tables, "
         "(SELECT coalesce(max(seq), 0) FROM changes) AS last_seq FROM views v ")


def view_row(conn: Connection, view: int) -> Row | None:
    """The view's row (``_VIEW``'s columns), or None."""
    return conn.execute(text(_VIEW + "WHERE v.id = :v"), {"v": view}).one_or_none()


def views_of(conn: Connection, consumer: int) -> list[Row]:
    """The consumer's views' rows (``_VIEW``'s columns)."""
    return list(conn.execute(text(_VIEW + "WHERE v.consumer_id = :c ORDER BY v.id"),
                             {"c": consumer}).all())


def ready_views(conn: Connection) -> list[Row]:
    """The ready views' rows (``_VIEW``'s columns)."""
    return list(conn.execute(text(_VIEW + "WHERE v.status = 'ready' ORDER BY v.id")).all())


class Pending(NamedTuple):
    """A job of a view not done yet."""

    kind: str
    status: str
    last_error: str | None
    done: int | None
    total: int | None
    seq: int | None  # the change-log position the job brings the view to, if any


def pending(unfinished: Sequence[Sequence[Any]]) -> list[Pending]:
    """A view row's ``unfinished`` jobs."""
    return [Pending(*j) for j in unfinished]


def drop_view(conn: Connection, view: int) -> None:
    """The view, its jobs, its consents' links, its feed and its K-relation tables.
    Waits for a job running on it (the view's row lock)."""
    conn.execute(text("SELECT id FROM views WHERE id = :v FOR UPDATE"), {"v": view})
    krel.drop_all(conn, view)
    conn.execute(text("DELETE FROM view_change_rows WHERE view_id = :v"), {"v": view})
    conn.execute(text("DELETE FROM views WHERE id = :v"), {"v": view})

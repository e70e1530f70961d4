"""The job queue in Postgres (after procrastinate).

- ``enqueue`` runs on the caller's connection, so a job commits (and its
  NOTIFY is delivered) with the data it concerns, or not at all.
- ``claim`` locks one due job ``FOR NO KEY UPDATE SKIP LOCKED`` inside the caller's
  transaction; the worker does the job's work in that same transaction and
  ``finish``es it there. A crash rolls everything back and the job is due
  again: nothing is lost, nothing applied twice.
- A failure is recorded by ``fail`` in a fresh transaction after the rollback:
  retries are data (``retry_decision``), with exponential backoff, and a job
  out of attempts goes to the dead-letter state with its error kept.
- Progress is written from another connection to ``job_progress``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import psycopg
from sqlalchemy import Connection, Row, text

from storage import driver
from views.errors import EngineError

CHANNEL = "podviews_jobs"  # a job may be due
VIEWS_CHANNEL = "podviews_views"  # a view's job ended (payload: the view's id)
BACKOFF_BASE = timedelta(seconds=2)
BACKOFF_CAP = timedelta(minutes=5)


@dataclass(frozen=True)
class Job:
    id: int
    kind: str
    view_id: int | None
    payload: dict[str, Any]
    attempts: int
    max_attempts: int


def enqueue(conn: Connection, kind: str, view_id: int | None = None,
            payload: dict[str, Any] | None = None, max_attempts: int = 5) -> int:
    job_id = conn.execute(text(
        "INSERT INTO jobs (kind, view_id, payload, status, attempts, max_attempts) "
        "VALUES (:kind, :view_id, CAST(:payload AS jsonb), 'queued', 0, :max_attempts) "
        "RETURNING id"),
        {"kind": kind, "view_id": view_id, "payload": json.dumps(payload or {}),
         "max_attempts": max_attempts}).scalar_one()
    conn.execute(text("SELECT pg_notify(:channel, :kind)"), {"channel": CHANNEL, "kind": kind})
    return int(job_id)


def insert_jobs(views: str, payload: str) -> str:
    """The INSERT of one queued job of kind ``:kind`` per row of ``views``
    (SQL rows with a view's ``v.id``), each with ``payload`` (a jsonb SQL
    expression), returning the jobs' ids: the one way jobs are made in bulk,
    alone (``enqueue_many``) or inside a writer's statement."""
    return ("INSERT INTO jobs (kind, view_id, payload, status, attempts, max_attempts) "
            f"SELECT :kind, v.id, {payload}, 'queued', 0, 5 FROM {views} RETURNING id")


def enqueue_many(conn: Connection, kind: str, view_ids: list[int],
                 payload: dict[str, Any] | None = None) -> None:
    """One job of ``kind`` per view, in one statement and one NOTIFY (a write
    wakes every view reading its pod)."""
    if not view_ids:
        return
    conn.execute(text(insert_jobs("unnest(CAST(:views AS bigint[])) AS v(id)",
                                  "CAST(:payload AS jsonb)")),
                 {"kind": kind, "views": view_ids, "payload": json.dumps(payload or {})})
    conn.execute(text("SELECT pg_notify(:channel, :kind)"), {"channel": CHANNEL, "kind": kind})


# The oldest due job (of the kinds :kinds; any when NULL) claimed by :worker,
# as the CTE ``j`` of a statement (``claim``, ``views_repo.claim_and_lock``);
# the kinds read through subqueries: no plan can use their value, so
# Postgres keeps one generic plan of a claim (design note 145)
CLAIMED = ("WITH j AS (UPDATE jobs SET status = 'running', attempts = attempts + 1, "
           "worker = :worker, updated_at = now() WHERE id = (SELECT id FROM jobs "
           "WHERE status = 'queued' AND run_after <= now() "
           "AND ((SELECT CAST(:kinds AS text[])) IS NULL "
           "     OR kind = ANY(CAST((SELECT CAST(:kinds AS text[])) AS text[]))) "
           "ORDER BY id FOR NO KEY UPDATE SKIP LOCKED LIMIT 1) "
           "RETURNING id, kind, view_id, payload, attempts, max_attempts) ")


def claim(conn: Connection, worker: str, kinds: tuple[str, ...] | None = None) -> Job | None:
    """Lock the oldest due job in this transaction and mark it running."""
    row = driver.first(conn, CLAIMED + "SELECT * FROM j", claiming(worker, kinds))
    return None if row is None else Job(*row)


def claiming(worker: str, kinds: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The parameters of ``CLAIMED``."""
    return {"kinds": list(kinds) if kinds else None, "worker": worker}


def finished(gate: str = "") -> str:
    """The job :id done, with the executor that did it and its work in
    triples, as the CTE ``done`` (``gate``: a condition it also needs);
    ``NOTIFIED`` tells readers waiting on its view (delivered at commit).
    Both go into a change job's closing statement too
    (``storage.views_repo.close``)."""
    return ("done AS (UPDATE jobs SET status = 'done', last_error = NULL, updated_at = now(), "
            "payload = payload || jsonb_build_object('executor', CAST(:executor AS text), "
            f"'triples', CAST(:triples AS bigint)) WHERE id = :id{gate} RETURNING view_id)")


NOTIFIED = "SELECT pg_notify(:channel, CAST(view_id AS text)) FROM done WHERE view_id IS NOT NULL"
_FINISH = f"WITH {finished()} {NOTIFIED}"


def finishing(job: Job, executor: str | None, triples: int | None) -> dict[str, Any]:
    """The parameters of ``finished`` and ``NOTIFIED``."""
    return {"id": job.id, "channel": VIEWS_CHANNEL, "executor": executor, "triples": triples}


def finish(conn: Connection, job: Job, executor: str | None = None,
           triples: int | None = None) -> None:
    """Mark the job done, in the transaction that did its work, with the
    executor that did it and its work in triples (kept in its payload)."""
    driver.rows(conn, _FINISH, finishing(job, executor, triples))


def _ended(conn: Connection, job: Job) -> None:
    """Tell readers waiting on the view (delivered when the transaction commits)."""
    if job.view_id is not None:
        conn.execute(text("SELECT pg_notify(:channel, :view)"),
                     {"channel": VIEWS_CHANNEL, "view": str(job.view_id)})


def retry_decision(error: BaseException, job: Job) -> timedelta | None:
    """How long until the next attempt, or None for the dead-letter state:
    at once for an error the engine raised about the view itself (it would
    raise it again), else after exponential backoff until out of attempts."""
    if job.attempts >= job.max_attempts or (isinstance(error, EngineError) and error.permanent):
        return None
    return min(BACKOFF_BASE * (2 ** (job.attempts - 1)), BACKOFF_CAP)


def fail(conn: Connection, job: Job, error: BaseException) -> str:
    """Record a failed attempt (in a fresh transaction); the job's new status."""
    delay = retry_decision(error, job)
    status = "dead" if delay is None else "queued"
    conn.execute(text(
        "UPDATE jobs SET status = :status, attempts = :attempts, last_error = :error, "
        "run_after = now() + CAST(:delay AS interval), updated_at = now() WHERE id = :id"),
        {"status": status, "attempts": job.attempts, "error": f"{type(error).__name__}: {error}",
         "delay": f"{(delay or timedelta()).total_seconds()} seconds", "id": job.id})
    if status == "dead" and job.view_id is not None:  # readers are told, not kept waiting
        conn.execute(text("UPDATE views SET status = 'failed', status_note = :n WHERE id = :v"),
                     {"v": job.view_id, "n": str(error)})
        _ended(conn, job)
    return status


def report_progress(conn: Connection, job_id: int, done: int, total: int | None = None,
                    note: str | None = None) -> None:
    """Upsert a running job's progress; call on a connection of its own."""
    conn.execute(text(
        "INSERT INTO job_progress (job_id, done, total, note) VALUES (:id, :done, :total, :note) "
        "ON CONFLICT (job_id) DO UPDATE SET done = excluded.done, total = excluded.total, "
        "note = excluded.note, updated_at = now()"),
        {"id": job_id, "done": done, "total": total, "note": note})


def pending(conn: Connection, view: int | None = None) -> list[Row]:
    """Jobs queued or running (of ``view`` when given), with their progress
    (id, kind, view_id, done, total, note): the most recently reporting first."""
    return list(conn.execute(text(
        "SELECT j.id, j.kind, j.view_id, p.done, p.total, p.note FROM jobs j "
        "LEFT JOIN job_progress p ON p.job_id = j.id WHERE j.status IN ('queued', 'running') "
        "AND (CAST(:view AS bigint) IS NULL OR j.view_id = :view) "
        "ORDER BY p.updated_at DESC NULLS LAST, j.id"), {"view": view}).all())


def dead_among(conn: Connection, ids: list[int]) -> int:
    """How many of the jobs ``ids`` are dead."""
    return int(conn.execute(text("SELECT count(*) FROM jobs WHERE id = ANY(:ids) "
                                 "AND status = 'dead'"), {"ids": ids}).scalar_one())


def depth(conn: Connection) -> int:
    return int(conn.execute(text("SELECT count(*) FROM jobs WHERE status = 'queued'")).scalar_one())


class Waker:
    """LISTENs on a channel of the queue: ``wait`` returns when a job may be
    due (``CHANNEL``), ``notices`` yields the views whose jobs ended
    (``VIEWS_CHANNEL``)."""

    def __init__(self, url: str, channel: str = CHANNEL) -> None:
        dsn = url.replace("postgresql+psycopg://", "postgresql://", 1)
        self.conn = psycopg.connect(dsn, autocommit=True)
        self.conn.execute(f"LISTEN {channel}")

    def wait(self, timeout: float) -> bool:
        """True when notified within ``timeout`` seconds."""
        for _ in self.conn.notifies(timeout=timeout, stop_after=1):
            return True
        return False

    def notices(self, timeout: float) -> Iterator[str]:
        """The payloads notified within ``timeout`` seconds, as they come."""
        for n in self.conn.notifies(timeout=timeout):
            yield n.payload

    def close(self) -> None:
        self.conn.close()

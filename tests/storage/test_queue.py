"""The job queue on a real Postgres."""

from __future__ import annotations

import threading
import time

import sqlalchemy as sa

from storage import db, queue


def _engine(url: str) -> sa.Engine:
    return sa.create_engine(url)


def test_enqueue_commits_with_the_callers_transaction(migrated: str) -> None:
    e = _engine(migrated)
    with e.connect() as c:
        queue.enqueue(c, "apply_changes")
        c.rollback()
    with e.begin() as c:
        assert queue.depth(c) == 0
        queue.enqueue(c, "apply_changes")
    with e.connect() as c:
        assert queue.depth(c) == 1


def test_two_workers_claim_different_jobs_without_waiting(migrated: str) -> None:
    e = _engine(migrated)
    with e.begin() as c:
        first = queue.enqueue(c, "backfill")
        second = queue.enqueue(c, "backfill")
    with e.connect() as a, e.connect() as b:
        ja = queue.claim(a, "a")
        jb = queue.claim(b, "b")  # SKIP LOCKED: not blocked by a's open transaction
        assert ja is not None and jb is not None
        assert {ja.id, jb.id} == {first, second}
        assert queue.claim(b, "b") is None
        a.rollback()
        b.rollback()


def test_a_crash_leaves_the_job_due_again(migrated: str) -> None:
    e = _engine(migrated)
    with e.begin() as c:
        jid = queue.enqueue(c, "verify")
    with e.connect() as c:
        assert queue.claim(c, "w").id == jid  # type: ignore[union-attr]
        c.rollback()  # the worker died before finishing
    with e.begin() as c:
        job = queue.claim(c, "w2")
        assert job is not None and job.id == jid
        queue.finish(c, job)
    with e.connect() as c:
        assert c.execute(sa.text("SELECT status FROM jobs")).scalar_one() == "done"


def test_failures_retry_with_backoff_then_go_dead_with_the_error(migrated: str) -> None:
    e = _engine(migrated)
    with e.begin() as c:
        queue.enqueue(c, "grant", max_attempts=2)
    statuses = []
    for _ in range(2):
        with e.begin() as c:
            c.execute(sa.text("UPDATE jobs SET run_after = now()"))
        with e.connect() as c:
            job = queue.claim(c, "w")
            assert job is not None
            c.rollback()
        with e.begin() as c:
            statuses.append(queue.fail(c, job, ValueError("bad input")))
    assert statuses == ["queued", "dead"]
    with e.connect() as c:
        row = c.execute(sa.text("SELECT status, attempts, last_error FROM jobs")).one()
    assert (row.status, row.attempts) == ("dead", 2) and "bad input" in row.last_error


def test_backoff_grows_and_is_capped() -> None:
    job = queue.Job(1, "grant", None, {}, attempts=1, max_attempts=50)
    delays = [queue.retry_decision(RuntimeError(), queue.Job(1, "grant", None, {}, a, 50))
              for a in (1, 2, 3, 20)]
    assert delays[0] < delays[1] < delays[2] and delays[3] == queue.BACKOFF_CAP
    assert queue.retry_decision(RuntimeError(), job) is not None


def test_progress_is_visible_while_the_job_runs(migrated: str) -> None:
    e = _engine(migrated)
    with e.begin() as c:
        queue.enqueue(c, "backfill")
    with e.connect() as worker:
        job = queue.claim(worker, "w")
        assert job is not None
        with e.begin() as side:
            queue.report_progress(side, job.id, 40, 100, "loading")
        with e.connect() as reader:
            done = reader.execute(sa.text("SELECT done FROM job_progress")).scalar_one()
        assert done == 40
        queue.finish(worker, job)
        worker.commit()


def test_notify_wakes_a_waiting_worker(migrated: str) -> None:
    e = _engine(migrated)
    waker = queue.Waker(migrated)
    woke: list[bool] = []
    t = threading.Thread(target=lambda: woke.append(waker.wait(timeout=10)))
    start = time.monotonic()
    t.start()
    time.sleep(0.2)
    with e.begin() as c:
        queue.enqueue(c, "apply_changes")
    t.join()
    waker.close()
    assert woke == [True] and time.monotonic() - start < 5


def test_a_workers_jobs_run_on_the_session_used_last(migrated: str) -> None:
    """``db.worker_engine`` hands out the connection returned last: after a
    second connection was opened beside the job's (a failed job's side
    transaction, a bench's writes), the next jobs run on one session, the
    one holding what the jobs before prepared — not on both in turn."""
    e = db.worker_engine(migrated)
    pid = sa.text("SELECT pg_backend_pid()")
    with e.connect() as job:
        with e.connect() as side:
            beside = side.execute(pid).scalar_one()
        first = job.execute(pid).scalar_one()
        job.commit()
    assert first != beside
    for _ in range(4):
        with e.connect() as job:
            assert job.execute(pid).scalar_one() == first
            job.commit()
    e.dispose()

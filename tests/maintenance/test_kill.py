"""Crash safety: workers killed with SIGKILL at random points while batches
of mixed inserts and deletes arrive, then restarted, leave every view equal to
its from-scratch evaluation (nothing lost, nothing applied twice); two workers
at once give the same views as one."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import sqlalchemy as sa

from server.api.views.service import register_view
from server.maintenance import verify
from storage import catalog, queue
from tests.maintenance.test_pipeline import QUERIES, random_write, setup

# batches of the kill test (CI; about 30% of them kill the worker): run 200+ locally
WRITES = int(os.environ.get("PODVIEWS_KILL_WRITES", "30"))


def _worker(url: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "server.cli.main", "worker", "--database-url", url],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})


def _settle(engine: sa.Engine, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with engine.connect() as c:
            busy = c.execute(sa.text("SELECT count(*) FROM jobs WHERE status IN "
                                     "('queued', 'running')")).scalar_one()
        if not busy:
            return
        time.sleep(0.2)
    raise AssertionError("jobs did not settle")


def _check(engine: sa.Engine, views: dict[str, int]) -> None:
    with engine.connect() as c:
        dead = c.execute(sa.text("SELECT last_error FROM jobs WHERE status = 'dead'")).all()
        assert dead == []
        for name, v in views.items():
            assert catalog.view_results(c, v) == verify.scratch(c, v), name
            watermark = c.execute(sa.text("SELECT watermark FROM views WHERE id = :v"),
                                  {"v": v}).scalar_one()
            # caught up with the last change that could change it (a change of
            # other predicates only does not wake the view)
            assert watermark >= c.execute(sa.text(
                "SELECT max(ct.seq) FROM change_triples ct JOIN views v ON v.id = :v "
                "WHERE v.predicates IS NULL OR ct.p = ANY(v.predicates)"), {"v": v}).scalar_one()


def _register(engine: sa.Engine, consumer: int) -> dict[str, int]:
    with engine.begin() as c:
        return {n: register_view(c, consumer, n, q) for n, q in QUERIES.items()}


def test_workers_killed_at_random_points_lose_and_duplicate_nothing(migrated: str) -> None:
    engine = sa.create_engine(migrated)
    pod, consumer = setup(engine)
    views = _register(engine, consumer)
    rng = random.Random(5)
    worker = _worker(migrated)
    working_kills = 0
    for _ in range(WRITES):
        random_write(engine, pod, rng)
        if rng.random() < 0.3:  # once it works, kill it at a random moment
            _until_working(engine, worker.pid)
            time.sleep(rng.uniform(0, 0.4))
            worker.send_signal(signal.SIGKILL)
            worker.wait()
            working_kills += _jobs_done_by(engine, worker.pid) > 0
            worker = _worker(migrated)
    _settle(engine)
    _until_connected(engine, worker.pid)
    worker.terminate()
    assert worker.wait(timeout=30) == 0  # SIGTERM: a clean stop
    assert working_kills >= WRITES // 5  # killed while in its loop, not only while starting
    _check(engine, views)


def _until_connected(engine: sa.Engine, pid: int, timeout: float = 20) -> None:
    """Until the worker's loop has its database connection."""
    deadline = time.monotonic() + timeout
    with engine.connect() as c:
        while time.monotonic() < deadline and not c.execute(sa.text(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = :a"),
                {"a": f"podviews-worker:{pid}"}).scalar_one():
            c.rollback()
            time.sleep(0.05)


def _until_working(engine: sa.Engine, pid: int, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while _jobs_done_by(engine, pid) == 0 and time.monotonic() < deadline:
        time.sleep(0.05)


def _jobs_done_by(engine: sa.Engine, pid: int) -> int:
    with engine.connect() as c:
        return int(c.execute(sa.text("SELECT count(*) FROM jobs WHERE worker LIKE :w"),
                             {"w": f"%:{pid}"}).scalar_one())


def test_two_workers_give_the_same_views_as_one(migrated: str) -> None:
    engine = sa.create_engine(migrated)
    pod, consumer = setup(engine)
    views = _register(engine, consumer)
    workers = [_worker(migrated), _worker(migrated)]
    rng = random.Random(9)
    for _ in range(30):
        random_write(engine, pod, rng)
    _settle(engine)
    for w in workers:
        w.terminate()
        w.wait(timeout=30)
    _check(engine, views)
    with engine.connect() as c:
        by = c.execute(sa.text("SELECT count(DISTINCT worker) FROM jobs WHERE status = 'done' "
                               "AND worker IS NOT NULL")).scalar_one()
        assert queue.depth(c) == 0
    assert by >= 1

"""``podviews worker``: checks the views' plans against the running engine
(``plans.reconcile``), then claims jobs, runs them, sleeps on LISTEN/NOTIFY
when the queue is empty, counts and prunes the old done jobs once a
minute, and stops cleanly on SIGTERM (the running job
finishes or rolls back as a whole)."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time

import sqlalchemy as sa

from server.maintenance import jobs, plans
from server.maintenance.limits import Limits
from server.maintenance.router import Router
from storage import db, ops
from storage.pods_graph import DEFAULT_BASE
from storage.queue import Waker

log = logging.getLogger("podviews.worker")
PRUNE_EVERY = 60.0  # seconds between two prunings of the done jobs, at most


def prune(engine: sa.Engine, kept: float) -> None:
    """The done jobs older than ``kept`` seconds counted and pruned; a
    failure is logged, not raised (the next idle moment tries again)."""
    try:
        with engine.begin() as c:
            n = ops.prune(c, kept)
        if n:
            log.info("%d done jobs counted and pruned", n)
    except sa.exc.SQLAlchemyError:
        log.exception("pruning the done jobs failed")


def run(url: str, name: str | None = None, stop: threading.Event | None = None,
        idle_wait: float = 1.0, router: Router | None = None,
        limits: Limits | None = None, base: str = DEFAULT_BASE) -> None:
    stop = stop or threading.Event()
    name = name or f"{socket.gethostname()}:{os.getpid()}"
    engine = db.worker_engine(url, connect_args={"application_name": f"podviews-worker:{os.getpid()}"})
    waker = Waker(url)
    log.info("worker %s started", name)
    if router is not None and router.mode == "spark":  # made and warmed before a job needs it
        from server.executors.spark.session import start

        start(router.spark)
    try:
        try:
            plans.reconcile(engine)
        except sa.exc.SQLAlchemyError:  # jobs still check their plan one by one
            log.exception("worker %s: checking the views' plans failed", name)
        next_prune = time.monotonic()
        while not stop.is_set():
            try:
                ran = jobs.run_one(engine, name, router, limits, base)
            except sa.exc.SQLAlchemyError:  # the database away for a moment: keep going
                log.exception("worker %s: claiming a job failed", name)
                ran = False
            if time.monotonic() >= next_prune:  # busy or idle: the done jobs counted and pruned
                next_prune = time.monotonic() + PRUNE_EVERY
                prune(engine, (limits or Limits()).done_jobs_kept)
            if not ran:
                waker.wait(idle_wait)  # a NOTIFY, or a delayed retry coming due
    finally:
        waker.close()
        engine.dispose()
        log.info("worker %s stopped", name)

"""`podviews watch`: follow the maintenance queue until it drains. A bar
counts the jobs done; its description names the job that last reported
progress (a backfill: its view's nodes done, ``job_progress``). A job's
claim commits with its work, so a running job looks queued from outside:
its progress rows, written on a connection of their own, are what shows."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from server.cli.common import DB_HELP, database
from server.cli.progress import progress
from storage import queue


def add(sub: Any) -> None:
    watch = sub.add_parser("watch", help="follow the maintenance queue until it drains: jobs "
                           "done, the running job, a backfill's nodes done (exit 1 if a job "
                           "died)")
    watch.add_argument("--database-url", default=None, help=DB_HELP)
    watch.add_argument("--view", type=int, default=None, help="only this view's jobs")
    watch.add_argument("--timeout", type=float, default=None,
                       help="give up after this many seconds (exit 124)")
    watch.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    with database(args) as url:
        try:
            done, dead = watch(url, args.view, args.timeout)
        except TimeoutError as e:
            print(f"watch: {e}", file=sys.stderr)
            return 124
    print(f"{done} jobs done, {dead} dead" + (" (see GET /views/{id})" if dead else ""))
    return 1 if dead else 0


def watch(url: str, view: int | None = None, timeout: float | None = None,
          poll: float = 0.5) -> tuple[int, int]:
    """Follow the jobs pending now and those queued meanwhile (of ``view``
    only, when given) until none is left: (jobs that ended done, jobs that
    ended dead). TimeoutError after ``timeout`` seconds."""
    engine = sa.create_engine(url)
    deadline = None if timeout is None else time.monotonic() + timeout
    seen: set[int] = set()
    ended: set[int] = set()
    try:
        with progress("maintenance jobs") as advance:
            while True:
                with engine.connect() as c:
                    rows = queue.pending(c, view)
                pending = {r.id for r in rows}
                now_ended = seen - pending - ended
                seen |= pending
                ended |= now_ended
                advance(len(now_ended), _describe(rows), total=len(seen))
                if not rows:
                    break
                if deadline is not None and time.monotonic() > deadline:
                    raise TimeoutError(f"{len(rows)} jobs still pending after {timeout} s")
                time.sleep(poll)
        with engine.connect() as c:
            dead = queue.dead_among(c, sorted(seen))
    finally:
        engine.dispose()
    return len(seen) - dead, dead


def _describe(rows: Sequence[Any]) -> str:
    """The bar's words: the job that last reported progress, or how many wait."""
    if not rows:
        return "queue drained"
    r = rows[0]
    if r.total is None:
        return f"{len(rows)} jobs queued"
    return (f"{r.kind} of view {r.view_id}: {r.done}/{r.total} {r.note or 'done'}"
            f" (+{len(rows) - 1} pending)")

"""`podviews watch`: follow the maintenance queue until it drains. A bar
counts the jobs done; its description names the job that last reported
progress (a backfill: its view's nodes done, ``job_progress``). A job's
claim commits with its work, so a running job looks queued from outside:
its progress rows, written on a connection of their own, are what shows."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from server.cli.progress import progress

_PENDING = sa.text(
    "SELECT j.id, j.kind, j.view_id, p.done, p.total, p.note FROM jobs j "
    "LEFT JOIN job_progress p ON p.job_id = j.id WHERE j.status IN ('queued', 'running') "
    "AND (CAST(:view AS bigint) IS NULL OR j.view_id = :view) "
    "ORDER BY p.updated_at DESC NULLS LAST, j.id")
_DEAD = sa.text("SELECT count(*) FROM jobs WHERE id = ANY(:ids) AND status = 'dead'")


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
                    rows = c.execute(_PENDING, {"view": view}).all()
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
            dead = int(c.execute(_DEAD, {"ids": sorted(seen)}).scalar_one())
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

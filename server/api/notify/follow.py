"""A channel's view followed through its change feed (design note 91): the
same reads as ``GET /views/{id}/changes`` and its event stream
(``changes.read``, with the subscriber as the caller, so every read is
access-checked like the results), whole deltas in seq order from a
position — exactly once, resumable by seq — and the reason when the
feed ends for the channel (the view failed or was dropped, the position
was compacted away, the subscriber lost access)."""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import NamedTuple

from sqlalchemy import Engine

from server.api.auth import Principal
from server.api.views import changes, live
from server.api.views.live import RESYNC, SharedReads
from server.api.views.notices import ViewNotices
from server.errors import NotReady, ServiceError


@dataclass(frozen=True)
class Ended:
    """The feed ends for the channel: a problem document's fields."""

    status: int
    title: str
    detail: str

    def problem(self) -> dict[str, object]:
        return {"type": "about:blank", "title": self.title, "status": self.status,
                "detail": self.detail}


@dataclass(frozen=True)
class Batch:
    """Whole deltas after a position, the position they bring a reader to
    (``since`` of the next read), and the end of the feed when it ends."""

    deltas: list[changes.Change]
    since: int
    ended: Ended | None = None
    bodies: dict[int, str] = field(default_factory=dict)  # by seq: a delta's JSON, when shared


class Delivery(NamedTuple):
    """A delta and its JSON text (encoded once for every channel that read it)."""

    change: changes.Change
    body: str


def ended(e: ServiceError) -> Ended:
    return Ended(e.status, (type(e).__doc__ or "").strip().splitlines()[0], e.detail or "")


class _Joined:
    """Pages of the feed joined into whole deltas (a delta cut by a page is
    held until its last part), from ``since`` on."""

    def __init__(self, since: int) -> None:
        self.out: list[changes.Change] = []
        self.held: changes.Change | None = None
        self.since, self.skip = since, 0
        self.bodies: dict[int, str] = {}

    def take(self, page: changes.Changes, bodies: dict[int, str] | None = None) -> Batch | None:
        """The batch once ``page`` completes one; None: read the next page."""
        for ch in page.changes:
            if ch.skip == 0 and ch.complete:
                self.out.append(ch)
                if bodies and ch.seq in bodies:
                    self.bodies[ch.seq] = bodies[ch.seq]
                continue
            self.held = ch if ch.skip == 0 else _joined(self.held, ch)
            if self.held.complete:
                self.out.append(self.held)
                self.held = None
        self.since, self.skip = page.since, page.skip
        if page.failed is not None and not page.more:
            return Batch(self.out, self.since, Ended(409, "The view failed", page.failed),
                         self.bodies)
        if self.held is None and (self.out or not page.more):
            return Batch(self.out, self.since, None, self.bodies)
        return None

    def refused(self, e: ServiceError) -> Batch:
        """A read refused: while a revocation is being applied (503) the
        deltas so far, its retraction follows; any other refusal ends the feed.
        (A delta held in part is read again, whole, from ``since``.)"""
        return Batch(self.out, self.since, None if isinstance(e, NotReady) else ended(e),
                     self.bodies)


def read(engine: Engine, who: Principal, view_id: int, since: int, budget: int) -> Batch:
    """The whole deltas after ``since`` (pages of about ``budget`` rows
    joined where a delta spans several), and where they bring the reader."""
    joined = _Joined(since)
    while True:
        try:
            page = changes.read(engine, who, view_id, joined.since, joined.skip, budget)
        except ServiceError as e:
            return joined.refused(e)
        batch = joined.take(page)
        if batch is not None:
            return batch


async def read_shared(shared: SharedReads, engine: Engine, who: Principal, view_id: int,
                      since: int, budget: int, generation: int, woken: bool) -> Batch:
    """``read`` with its pages shared with the SSE streams and channels of
    the same caller at the same position after the same job end (note 91)."""
    joined = _Joined(since)
    while True:
        # a read not woken by a notice is shared within its RESYNC period (as live.stream's)
        resync = None if woken else int(time.monotonic() // RESYNC)
        key = (view_id, who.agent, joined.since, joined.skip, generation, resync)
        try:
            done = await shared.read(key, engine, who, view_id, joined.since, joined.skip, budget)
        except ServiceError as e:
            return joined.refused(e)
        batch = joined.take(done.page, done.bodies)
        if batch is not None:
            return batch


def _joined(held: changes.Change | None, part: changes.Change) -> changes.Change:
    assert held is not None and held.seq == part.seq, "a delta's parts arrive in order"
    return changes.Change(part.seq, held.added + part.added, held.removed + part.removed, 0,
                          part.complete)


async def follow(engine: Engine, who: Principal, view_id: int, since: int, budget: int,
                 notices: ViewNotices, closing: threading.Event, shared: SharedReads,
                 writer: live.Writer | None = None
                 ) -> AsyncIterator[Delivery | Ended]:
    """The view's deltas after ``since`` as they are recorded, until the
    feed ends for ``who`` or the server shuts down (an ``Ended`` last).
    Reads run in the thread pool, woken by the view's job ends
    (LISTEN/NOTIFY) and every ``RESYNC`` seconds regardless. With
    ``writer``, a channel caught up with the view is written by the
    view's writer until handed back (design note 134)."""
    seen, read_at = -1, 0.0
    while not closing.is_set():
        generation = notices.generation(view_id)
        if generation != seen or time.monotonic() - read_at >= RESYNC:
            woken = generation != seen
            seen, read_at = generation, time.monotonic()
            batch = await read_shared(shared, engine, who, view_id, since, budget, generation,
                                      woken)
            for delta in batch.deltas:  # a delta joined from parts is encoded here (rare)
                body = batch.bodies.get(delta.seq) or live.change_body(delta)
                yield Delivery(delta, body)
            since = batch.since
            if batch.ended is not None:
                yield batch.ended
                return
            if batch.deltas:
                seen = -1  # more may have been recorded while these were read: read again
                continue
        if writer is not None and seen == generation:  # caught up: the writer's
            reached = await writer(since, seen)
            if reached is not None:  # handed back: read from there ourselves
                since, seen = reached, -1
                continue
        await notices.wait_async(view_id, generation, RESYNC, RESYNC)
    yield Ended(503, "The server is shutting down", "subscribe again with the state of the "
                                                    "last notification to resume")


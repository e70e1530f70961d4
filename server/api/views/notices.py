"""Readers waiting for a view (``results?min_seq=``) sleep until a job of
that view ends, instead of polling the database: one LISTEN connection per
API process counts the ends per view (a generation number), and a waiter
sleeps until its view's number moves — on the event loop, holding no
thread (``wait_async``), so any number of waiters leave the thread pool to
requests that need it. Missed notices (the listener reconnecting) cost only
latency: waiters re-check at least every ``RECHECK`` seconds.

A view's waiters on one event loop share one event (design note 111),
woken at most once every ``LINGER`` seconds: the job ends in between are
read by one read and sent as one write to each stream (design note 114)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import Counter, defaultdict

from storage.queue import VIEWS_CHANNEL, Waker

log = logging.getLogger("podviews.notices")
RECHECK = 0.5
LINGER = 0.025  # seconds between wakeups of a view's waiters (job ends between them coalesce)


class ViewNotices:
    def __init__(self, url: str) -> None:
        self.url = url
        self.ended: Counter[int] = Counter()
        self.changed = threading.Lock()
        # one event per view and loop, shared by its waiters: a job's end is one
        # wakeup per loop (call_soon_threadsafe), not one per waiter (design note 111)
        self.waiters: defaultdict[int, dict[asyncio.AbstractEventLoop, asyncio.Event]] = \
            defaultdict(dict)
        self.released: dict[tuple[int, asyncio.AbstractEventLoop], float] = {}  # on each loop
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._listen, name="view-notices", daemon=True)
        self.thread.start()

    def generation(self, view: int) -> int:
        with self.changed:
            return self.ended[view]

    async def wait_async(self, view: int, seen: int, timeout: float,
                         recheck: float = RECHECK) -> None:
        """Until a job of ``view`` ends after generation ``seen`` was read,
        ``wake_all`` is called, or ``min(timeout, recheck)`` seconds pass."""
        loop = asyncio.get_running_loop()
        with self.changed:
            if self.ended[view] != seen:
                return
            event = self.waiters[view].get(loop)
            if event is None:
                event = self.waiters[view][loop] = asyncio.Event()
        try:
            async with asyncio.timeout(min(timeout, recheck)):  # no task per wait (wait_for's)
                await event.wait()
        except TimeoutError:
            pass

    def _ended(self, view: int) -> None:
        with self.changed:
            self.ended[view] += 1
            woken = self.waiters.pop(view, {})
        for loop, event in woken.items():
            with contextlib.suppress(RuntimeError):  # the loop was closed while its waiters slept
                loop.call_soon_threadsafe(self._release, view, loop, event)

    def _release(self, view: int, loop: asyncio.AbstractEventLoop, event: asyncio.Event) -> None:
        """On ``loop``: the view's waiters woken now, or ``LINGER`` after its last wakeup."""
        now = loop.time()
        due = max(now, self.released.get((view, loop), now - LINGER) + LINGER)
        self.released[(view, loop)] = due
        if due <= now:
            event.set()
        else:
            loop.call_at(due, event.set)

    def wake_all(self) -> None:
        """Every waiter returns now (the server is shutting down)."""
        with self.changed:
            woken = [w for ws in self.waiters.values() for w in ws.items()]
            self.waiters.clear()
        for loop, event in woken:
            _wake(loop, event)

    def _listen(self) -> None:
        while not self.stop.is_set():
            try:
                waker = Waker(self.url, VIEWS_CHANNEL)
                try:
                    while not self.stop.is_set():
                        for view in waker.notices(timeout=RECHECK):
                            self._ended(int(view))
                finally:
                    waker.close()
            except Exception:
                log.warning("view notices: listening failed; retrying", exc_info=True)
                self.stop.wait(1.0)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)


def _wake(loop: asyncio.AbstractEventLoop, event: asyncio.Event) -> None:
    with contextlib.suppress(RuntimeError):  # the loop was closed while its waiters slept
        loop.call_soon_threadsafe(event.set)

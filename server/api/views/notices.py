"""Readers waiting for a view (``results?min_seq=``) sleep until a job of
that view ends, instead of polling the database: one LISTEN connection per
API process counts the ends per view (a generation number), and a waiter
sleeps until its view's number moves. Missed notices (the listener
reconnecting) cost only latency: waiters re-check at least every
``RECHECK`` seconds."""

from __future__ import annotations

import logging
import threading
from collections import Counter

from storage.queue import VIEWS_CHANNEL, Waker

log = logging.getLogger("podviews.notices")
RECHECK = 0.5


class ViewNotices:
    def __init__(self, url: str) -> None:
        self.url = url
        self.ended: Counter[int] = Counter()
        self.changed = threading.Condition()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._listen, name="view-notices", daemon=True)
        self.thread.start()

    def generation(self, view: int) -> int:
        with self.changed:
            return self.ended[view]

    def wait(self, view: int, seen: int, timeout: float) -> None:
        """Until a job of ``view`` ends after generation ``seen`` was read,
        or ``min(timeout, RECHECK)`` seconds pass."""
        with self.changed:
            self.changed.wait_for(lambda: self.ended[view] != seen, min(timeout, RECHECK))

    def _listen(self) -> None:
        while not self.stop.is_set():
            try:
                waker = Waker(self.url, VIEWS_CHANNEL)
                try:
                    while not self.stop.is_set():
                        for view in waker.notices(timeout=RECHECK):
                            with self.changed:
                                self.ended[int(view)] += 1
                                self.changed.notify_all()
                finally:
                    waker.close()
            except Exception:
                log.warning("view notices: listening failed; retrying", exc_info=True)
                self.stop.wait(1.0)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)

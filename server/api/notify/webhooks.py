"""WebhookChannel2023 delivery (design note 95): a thread in each API
process takes one due webhook at a time (``channels.due``: row-locked,
SKIP LOCKED, so processes share the channels without delivering one
twice at once), reads its view's deltas after the channel's position as
the subscriber (``follow.read``: access-checked like the results), POSTs
each as a notification to ``sendTo`` and advances the position in the
same transaction. A failed POST is retried after an exponentially growing
wait; ``attempts`` failures in a row leave the channel dead (``/metrics``:
``podviews_notification_channels{status="dead"}``). A view that fails or
a position compacted away ends the channel with the problem document."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import httpx
from sqlalchemy import Connection, Engine, Row

from server.api import fetch
from server.api.notify import activity, follow
from server.api.notify.policy import Policy
from server.api.notify.service import subscriber
from storage import channels

log = logging.getLogger("podviews.webhooks")
POLL = 0.25  # seconds between looks for due webhooks while none is


class Deliverer:
    """Delivers due webhooks until ``close``; ``counted(outcome)`` is called
    per POST ("delivered", "failed") and per channel that dies ("dead")."""

    def __init__(self, engine: Engine, base: str, budget: int, policy: Policy,
                 counted: Callable[[str], None]) -> None:
        self.engine, self.base, self.budget, self.policy = engine, base, budget, policy
        self.counted = counted
        self.stop = threading.Event()
        self.client = httpx.Client(timeout=policy.timeout, follow_redirects=False)
        self.thread = threading.Thread(target=self._run, name="webhooks", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                busy = self.once()
            except Exception:
                log.warning("webhooks: a round failed; retrying", exc_info=True)
                busy = False
            if not busy:
                self.stop.wait(POLL)

    def once(self) -> bool:
        """One due webhook served (in one transaction); False when none was
        due or nothing could be delivered."""
        with self.engine.begin() as c:
            due = channels.due(c, 1)
            return bool(due) and self._serve(c, due[0])

    def _serve(self, c: Connection, ch: Row) -> bool:
        batch = follow.read(self.engine, subscriber(ch), ch.view_id, ch.position, self.budget)
        topic = f"{self.base}/views/{ch.view_id}/results"
        at = ch.position
        try:
            for delta in batch.deltas:
                self._post(ch.send_to, activity.notification(topic, ch.view_id, delta))
                at = delta.seq
            if batch.ended is not None:
                self._post(ch.send_to, batch.ended.problem(), "application/problem+json")
                channels.end(c, ch.id, channels.ENDED, batch.ended.detail)
                return True
        except fetch.FetchError as e:
            if at > ch.position:
                channels.advance(c, ch.id, at)
            if channels.failed(c, ch.id, str(e), self.policy.attempts, self.policy.backoff):
                self.counted("dead")
                log.warning("webhook channel %s is dead: %s", ch.id, e)
            return at > ch.position
        channels.advance(c, ch.id, batch.since)
        return bool(batch.deltas)

    def _post(self, url: str, message: dict[str, object],
              media: str = "application/ld+json") -> None:
        try:
            fetch.post(self.client, url, activity.encoded(message).encode(), media,
                       self.policy.allow_private)
        except fetch.FetchError:
            self.counted("failed")
            raise
        self.counted("delivered")

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=10)
        self.client.close()

"""The view writer of event streams (design note 134), on one event loop
with a feed held in memory: followers at one position share one read and
each gets its chunk, in seq order, once; a follower whose write cannot
finish at once is handed back at its next delivery, at the position it
was last written, without holding up the others; anything but whole
deltas, and the server closing, hand every follower back.

The real path (uvicorn's send, Postgres's feed, a job's NOTIFY) is
``tests/e2e/test_live.py`` and ``tests/tools/test_bench.py``."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from rdflib import Literal

from server.api.auth import Principal
from server.api.views import changes, live
from server.api.views.fanout import Fanout, send_now

WHO = Principal("consumer", agent=7, webid="urn:consumer")


class Feed:
    """The view's deltas (seq → the value bound) and its generation, moved
    by ``write`` as a job's end would; ``reads`` counts the reads made."""

    def __init__(self) -> None:
        self.deltas: dict[int, int] = {}
        self.ended = 0
        self.moved = asyncio.Event()
        self.reads: list[tuple[int, ...]] = []
        self.broken = False  # the next reads hold a delta read in parts

    def write(self, seq: int) -> None:
        self.deltas[seq] = seq * 10
        self.ended += 1
        self.moved.set()
        self.moved = asyncio.Event()

    # ViewNotices
    def generation(self, view: int) -> int:
        return self.ended

    async def wait_async(self, view: int, seen: int, timeout: float, recheck: float) -> None:
        if self.ended != seen:
            return
        try:
            async with asyncio.timeout(min(timeout, recheck)):
                await self.moved.wait()
        except TimeoutError:
            pass

    # SharedReads
    async def read(self, key: tuple[Any, ...], engine: Any, who: Principal, view_id: int,
                   since: int, skip: int, budget: int) -> live.Read:
        self.reads.append(key)
        await asyncio.sleep(0)  # a read runs in the thread pool
        seqs = sorted(s for s in self.deltas if s > since)
        found = [changes.Change(s, [{"o": Literal(self.deltas[s])}], [], 0,
                                not self.broken) for s in seqs]
        page = changes.Changes(("o",), None, found, seqs[-1] if seqs else since, 0,
                               seqs[-1] if seqs else since, False, None)
        bodies = {ch.seq: live.change_body(ch) for ch in found if ch.complete}
        events = {s: live.sse_text("change", b, s) for s, b in bodies.items()}
        chunk = b"".join(events.values()) if events and len(events) == len(found) else None
        return live.Read(page, events, None, bodies, chunk)


class Client:
    """A response's body as the server's send receives it; ``stuck`` makes
    a send wait (a transport paused) until ``release``."""

    def __init__(self) -> None:
        self.body = bytearray()
        self.stuck: asyncio.Event | None = None

    async def send(self, message: dict[str, Any]) -> None:
        if self.stuck is not None:
            await self.stuck.wait()
        self.body += message["body"]

    def release(self) -> None:
        assert self.stuck is not None
        self.stuck.set()
        self.stuck = None

    def seqs(self) -> list[int]:
        return [int(line[4:]) for line in self.body.decode().splitlines()
                if line.startswith("id: ")]


def fanout(feed: Feed, closing: threading.Event | None = None,
           observe: Any = None) -> Fanout:
    return Fanout(None, feed, feed, 100, 60.0, closing or threading.Event(),  # type: ignore[arg-type]
                  observe)


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def test_a_send_that_finishes_at_once_needs_no_task_and_one_that_waits_keeps_its_order() -> None:
    async def go() -> None:
        c = Client()
        assert send_now(c.send({"body": b"a"})) is None
        c.stuck = asyncio.Event()
        pending = send_now(c.send({"body": b"b"}))
        assert pending is not None and c.body == b"a"
        c.release()
        await pending
        assert c.body == b"ab"

    asyncio.run(go())


def test_followers_at_one_position_share_a_read_and_get_every_seq_once_in_order() -> None:
    async def go() -> None:
        feed, clients = Feed(), [Client() for _ in range(5)]
        rounds: list[tuple[int, float]] = []
        out = fanout(feed, observe=lambda written, seconds: rounds.append((written, seconds)))
        follows = [asyncio.create_task(out.follow(1, WHO, 0, 0, c.send)) for c in clients]
        await settle()
        assert out.following == 5
        for seq in (1, 2, 3):
            feed.write(seq)
            await settle()
        assert [c.seqs() for c in clients] == [[1, 2, 3]] * 5
        assert len(feed.reads) == 3  # one per job end, not one per follower
        feed.write(4)
        feed.write(5)  # two job ends before the writer runs: one read, one chunk
        await settle()
        assert [c.seqs() for c in clients] == [[1, 2, 3, 4, 5]] * 5 and len(feed.reads) == 4
        # each delivery's time is told once, with the followers it wrote (for /metrics)
        assert [w for w, _ in rounds] == [5] * 4 and all(t >= 0 for _, t in rounds)
        for t in follows:
            t.cancel()
        await asyncio.gather(*follows, return_exceptions=True)
        assert out.following == 0

    asyncio.run(go())


def test_a_slow_client_is_handed_back_where_it_was_written_and_holds_up_no_one() -> None:
    async def go() -> None:
        feed, fast, slow = Feed(), Client(), Client()
        out = fanout(feed)
        quick = asyncio.create_task(out.follow(1, WHO, 0, 0, fast.send))
        lagging = asyncio.create_task(out.follow(1, WHO, 0, 0, slow.send))
        await settle()
        slow.stuck = asyncio.Event()
        feed.write(1)  # the slow client's write waits for its transport
        await settle()
        feed.write(2)  # its next delivery hands it back; the fast one goes on
        await settle()
        assert fast.seqs() == [1, 2] and slow.seqs() == [] and not lagging.done()
        slow.release()  # its stream goes on from seq 1 once that write is done
        assert await lagging == 1 and slow.seqs() == [1]
        feed.write(3)
        await settle()
        assert fast.seqs() == [1, 2, 3]
        fast.stuck = asyncio.Event()
        feed.write(4)  # the client goes away while its write waits: the write is dropped
        await settle()
        assert out.writers and fast.seqs() == [1, 2, 3]
        quick.cancel()
        await asyncio.gather(quick, return_exceptions=True)
        await settle()
        assert fast.stuck is not None and not fast.stuck._waiters  # nothing waits on it
        assert out.following == 0

    asyncio.run(go())


def test_anything_but_whole_deltas_and_closing_hand_every_follower_back() -> None:
    async def go() -> None:
        feed, closing = Feed(), threading.Event()
        out = fanout(feed, closing)
        follows = [asyncio.create_task(out.follow(1, WHO, 0, 0, Client().send))
                   for _ in range(3)]
        await settle()
        feed.broken = True
        feed.write(1)  # a delta read in parts: the streams read it themselves
        assert await asyncio.gather(*follows) == [0, 0, 0]
        assert out.following == 0
        feed.broken = False
        assert await out.follow(1, WHO, 0, 0, Client().send) is None  # the view moved
        follows = [asyncio.create_task(out.follow(1, WHO, 1, 1, Client().send))
                   for _ in range(2)]
        await settle()
        closing.set()
        feed.write(2)  # the writer wakes (as ViewNotices.wake_all makes it) and hands back
        assert await asyncio.gather(*follows) == [1, 1]
        assert await out.follow(1, WHO, 2, 2, Client().send) is None

    asyncio.run(go())

"""One writer per view for the event streams that are caught up with it
(design note 134).

A stream reads its own way until it is at the view's head: its snapshot,
a catch-up, a delta read in parts, a failure or a revocation are its own
(``live.stream``). Caught up, it *follows*: it hands its position and the
server's own ``send`` (captured outside every middleware, ``RAW_SEND``) to
the view's writer and sleeps until handed back. When a job of the view
ends, the writer reads once per (caller, position), shared as before, and
writes the encoded chunk to every follower in turn, on the event loop: one
task woken per view, not one per subscriber, and the body bypasses the
middlewares (they handle a response's start and end only, which stay on
the stream's own path).

A write that cannot finish at once (the client reads slowly, its
transport paused) is finished by a task of its own; the follower is handed
back at its next delivery, and its stream goes on from its position after
that write is done, so a slow client never holds up the others and sees
every seq once, in order. Anything other than whole deltas to write (an
error, a failed view, a page cut inside a delta or one of several) also
hands the followers back: their streams read it themselves."""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Protocol

from sqlalchemy import Engine

from server.api.auth import Principal
from server.api.views.direct import Direct, direct, frame
from server.api.views.live import HEARTBEAT, RESYNC, Read, SharedReads, Writer
from server.api.views.notices import ViewNotices

RAW_SEND = "podviews.send"  # the scope key of the server's own send (``capture_send``)

Message = dict[str, Any]  # an ASGI message
Send = Callable[[Message], Coroutine[Any, Any, None]]  # a server's own send


class Style(Protocol):
    """How a follower is written a read (hashable: a round encodes each
    read once per style), and its heartbeat (None: none)."""

    @property
    def heartbeat(self) -> Message | None: ...

    def messages(self, read: Read) -> list[Message]: ...


@dataclass(frozen=True)
class EventStream:
    """An SSE response's body: the read's changes as one chunk."""

    heartbeat: Message | None = field(default_factory=lambda: _body(HEARTBEAT), compare=False,
                                      hash=False)

    def messages(self, read: Read) -> list[Message]:
        return [] if read.chunk is None else [_body(read.chunk)]


def _body(chunk: bytes) -> Message:
    return {"type": "http.response.body", "body": chunk, "more_body": True}


EVENT_STREAM = EventStream()


def capture_send(app: Any) -> Callable[..., Awaitable[None]]:
    """``app`` with the server's ``send`` kept in the scope as ``RAW_SEND``
    (the outermost layer: no middleware between it and the server)."""

    async def captured(scope: dict[str, Any], receive: Any, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            scope[RAW_SEND] = send
        await app(scope, receive, send)

    return captured


@dataclass(eq=False)
class Follower:
    who: Principal
    since: int
    seen: int  # the view's generation its position was read at
    send: Send
    back: asyncio.Future[None]
    style: Style
    moved: Callable[[int], None] | None  # told each position once written there
    direct: Direct | None  # its body's chunks written straight to its transport (note 140)
    pending: asyncio.Task[None] | None = field(default=None)


class Fanout:
    """The followers and writers of each view, per event loop."""

    def __init__(self, engine: Engine, notices: ViewNotices, shared: SharedReads,
                 budget: int, heartbeat: float, closing: threading.Event,
                 observe: Callable[[int, float], None] | None = None) -> None:
        self.engine, self.notices, self.shared = engine, notices, shared
        self.budget, self.heartbeat, self.closing = budget, heartbeat, closing
        self.observe = observe  # told each delivery's followers written and its seconds
        self.followers: dict[tuple[asyncio.AbstractEventLoop, int], dict[Follower, None]] = {}
        self.writers: dict[tuple[asyncio.AbstractEventLoop, int], asyncio.Task[None]] = {}
        self.following = 0  # streams following now, on every loop (read by /metrics)

    def writer(self, view_id: int, who: Principal, send: Send, style: Style = EVENT_STREAM,
               moved: Callable[[int], None] | None = None) -> Writer:
        """The hook by which ``who``'s stream or channel of ``view_id``
        (written through ``send`` in ``style``) follows: ``follow``."""
        return functools.partial(self.follow, view_id, who, send=send, style=style, moved=moved)

    async def follow(self, view_id: int, who: Principal, since: int, seen: int,
                     send: Send, style: Style = EVENT_STREAM,
                     moved: Callable[[int], None] | None = None) -> int | None:
        """Follow ``view_id`` from ``since`` (read at generation ``seen``),
        written in ``style``, until handed back; the position reached, or
        None at once when the view moved since ``seen`` (the stream reads
        that itself)."""
        if self.closing.is_set() or self.notices.generation(view_id) != seen:
            return None
        loop = asyncio.get_running_loop()
        key = (loop, view_id)
        f = Follower(who, since, seen, send, loop.create_future(), style, moved, direct(send))
        self.followers.setdefault(key, {})[f] = None
        writer = self.writers.get(key)
        if writer is None or writer.done():
            self.writers[key] = loop.create_task(self._write(key))
        self.following += 1
        try:
            await f.back
        except asyncio.CancelledError:
            if f.pending is not None:
                f.pending.cancel()
            raise
        finally:
            self.following -= 1
            self.followers.get(key, {}).pop(f, None)
        if f.pending is not None:  # a write still finishing: the stream goes on after it
            await f.pending
        return f.since

    async def _write(self, key: tuple[asyncio.AbstractEventLoop, int]) -> None:
        view_id = key[1]
        followers = self.followers[key]
        read_at = beat = time.monotonic()
        try:
            while followers and not self.closing.is_set():
                generation = self.notices.generation(view_id)
                stale = time.monotonic() - read_at >= RESYNC
                due = [f for f in followers if f.seen != generation or stale]
                if due:
                    read_at = time.monotonic()
                    await self._deliver(view_id, followers, due, generation, stale)
                if time.monotonic() - beat >= self.heartbeat:
                    beat = time.monotonic()
                    for f in list(followers):
                        if f.style.heartbeat is not None:
                            heartbeat = [f.style.heartbeat]
                            _send(followers, f, heartbeat, None, framed(heartbeat))
                await self.notices.wait_async(
                    view_id, generation,
                    max(0.05, self.heartbeat - (time.monotonic() - beat)), RESYNC)
        finally:
            for f in list(followers):  # the server is closing (or the writer failed)
                _hand_back(followers, f)
            if self.writers.get(key) is asyncio.current_task():
                del self.writers[key]
            if not followers:
                self.followers.pop(key, None)

    async def _deliver(self, view_id: int, followers: dict[Follower, None],
                       due: list[Follower], generation: int, stale: bool) -> None:
        """One shared read per (caller, position) of the followers due, its
        chunk written to each; anything but whole deltas hands them back."""
        by_position: dict[tuple[Any, int], list[Follower]] = {}
        for f in due:
            by_position.setdefault((f.who.agent, f.since), []).append(f)
        resync = int(time.monotonic() // RESYNC) if stale else None
        reads = await asyncio.gather(*(
            self.shared.read((view_id, agent, since, 0, generation, resync), self.engine,
                             fs[0].who, view_id, since, 0, self.budget)
            for (agent, since), fs in by_position.items()), return_exceptions=True)
        encoded: dict[Style, tuple[list[Message], bytes | None]] = {}
        started, written = time.perf_counter(), 0
        for fs, done in zip(by_position.values(), reads, strict=True):
            encoded.clear()
            for f in fs:
                if f not in followers:
                    continue  # left while the read ran
                if isinstance(done, BaseException) or not _whole(done):
                    _hand_back(followers, f)
                    continue
                found = encoded.get(f.style)
                if found is None:
                    messages = f.style.messages(done)
                    found = encoded[f.style] = (messages, framed(messages))
                messages, chunk = found
                if not messages or _send(followers, f, messages, done.page.since, chunk):
                    f.since, f.seen = done.page.since, generation
                    written += bool(messages)
        if written and self.observe is not None:
            self.observe(written, time.perf_counter() - started)



def _whole(done: Read) -> bool:
    """The read holds only whole deltas, all encoded in one chunk (or none),
    and nothing after them to read or to end with."""
    page = done.page
    return (page.failed is None and not page.more and page.skip == 0
            and done.snapshot is None and (done.chunk is not None or not page.changes))


def framed(messages: list[Message]) -> bytes | None:
    """Body messages that go on (``more_body``) as the one chunk they make
    (``direct.frame``); None for any other message."""
    if not all(m["type"] == "http.response.body" and m.get("more_body") for m in messages):
        return None
    return frame(b"".join(m.get("body", b"") for m in messages))


def _send(followers: dict[Follower, None], f: Follower, messages: list[Message],
          reached: int | None, chunk: bytes | None = None) -> bool:
    """``messages`` written to ``f`` now (as ``chunk``, their ``framed``
    bytes, straight to its transport where it takes them: ``f.direct``), or
    finished by a task of its own when the server cannot take them at once
    (``f.moved`` told ``reached`` once they are); False (and ``f`` handed
    back) when an earlier write is still finishing or failed: the stream
    waits for it, then goes on (or ends with its error) on its own path."""
    if f.pending is not None:
        if not f.pending.done() or f.pending.cancelled() or f.pending.exception() is not None:
            _hand_back(followers, f)
            return False
        f.pending = None
    try:
        if chunk is None or f.direct is None or not f.direct(chunk):
            f.pending = send_all(f.send, messages)
    except Exception:  # noqa: BLE001 - servers raise their own; the stream's next
        # write meets the same error on the stream's own path, as without a writer
        _hand_back(followers, f)
        return False
    if reached is not None and f.moved is not None:
        if f.pending is None:
            f.moved(reached)
        else:
            f.pending.add_done_callback(functools.partial(_written, f.moved, reached))
    return True


def _written(moved: Callable[[int], None], reached: int, task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is None:
        moved(reached)


def send_all(send: Send, messages: list[Message]) -> asyncio.Task[None] | None:
    """``messages`` sent in order, each run until it first suspends
    (``send_now``): None when all finished, else a task that finishes the
    one that waits and sends the rest after it."""
    for i, m in enumerate(messages):
        pending = send_now(send(m))
        if pending is not None:
            rest = messages[i + 1:]
            return pending if not rest else asyncio.ensure_future(_then(pending, send, rest))
    return None


async def _then(first: asyncio.Task[None], send: Send, rest: list[Message]) -> None:
    try:
        await first
    except asyncio.CancelledError:
        first.cancel()
        raise
    for m in rest:
        await send(m)


def _hand_back(followers: dict[Follower, None], f: Follower) -> None:
    followers.pop(f, None)
    if not f.back.done():
        f.back.set_result(None)


def send_now(coro: Coroutine[Any, Any, None]) -> asyncio.Task[None] | None:
    """Run ``coro`` (a server's ``send``) until it first suspends: None when
    it finished there, else a task that finishes it (a paused transport
    draining). A server's send suspends only to wait for its transport, so
    on the common path no task is made. Errors raised before it suspends
    are raised here."""
    try:
        waiting = coro.send(None)
    except StopIteration:
        return None
    except BaseException:
        coro.close()
        raise
    return asyncio.ensure_future(_finish(coro, waiting))


async def _finish(coro: Coroutine[Any, Any, None], waiting: Any) -> None:
    """Drive ``coro`` on from the future it suspended on (a task's step)."""
    try:
        while True:
            try:
                if waiting is None:  # a bare yield: the loop runs once
                    await asyncio.sleep(0)
                else:  # taken as a task's step takes a future it was yielded, then awaited
                    waiting._asyncio_future_blocking = False
                    await waiting
            except BaseException as e:  # noqa: BLE001 - into the send, as a task would
                try:
                    waiting = coro.throw(e)
                except StopIteration:
                    return
                continue
            try:
                waiting = coro.send(None)
            except StopIteration:
                return
    finally:
        coro.close()

"""A view's changes as JSON pages and as Server-Sent Events (architecture
decision 10): one event per seq (``id:`` the seq, so a client resumes with
``Last-Event-ID``), a snapshot event first when the client has no position,
heartbeats while nothing changes, and a clean end when the server shuts
down, the view fails or the position is compacted away.

Postgres is the source of truth: a stream reads the feed from its position
whenever a job of its view ends (``ViewNotices``: LISTEN/NOTIFY, so every API
process behind one database wakes) and every ``RESYNC`` seconds regardless.
Reads run in the thread pool; streams that are at the same position when
woken by the same notice share one read (``SharedReads``), so a thousand
subscribers of a view cost one query per change, not a thousand."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool

from server.api.auth import Principal
from server.api.views import changes
from server.api.views import formats as fmt
from server.api.views.notices import ViewNotices
from server.errors import NotReady, ServiceError
from views.terms import fields_of

HEARTBEAT = b": heartbeat\n"
RESYNC = 5.0  # seconds between reads of an idle stream's feed (a missed notice costs this)


def change_json(ch: changes.Change) -> dict[str, Any]:
    out: dict[str, Any] = {"seq": ch.seq,
                           "added": [_binding(b) for b in ch.added],
                           "removed": [_binding(b) for b in ch.removed]}
    if ch.skip or not ch.complete:
        out["part"] = {"skip": ch.skip, "complete": ch.complete}
    return out


def page_json(view_id: int, page: changes.Changes) -> dict[str, Any]:
    """A page of the feed as JSON: the snapshot (when asked for), the
    changes, the position reached (``seq``: null inside a delta) and the
    next request's parameters."""
    out: dict[str, Any] = {"head": {"vars": list(page.variables)}}
    if page.snapshot is not None:
        out["snapshot"] = {"seq": page.at, "bindings": [_binding(b) for b in page.snapshot]}
    out["changes"] = [change_json(ch) for ch in page.changes]
    out["seq"] = page.at
    out["next"] = next_url(view_id, page)
    if page.failed is not None:
        out["end"] = problem(409, "The view failed", page.failed)
    return out


def next_url(view_id: int, page: changes.Changes) -> str:
    skip = f"&skip={page.skip}" if page.skip else ""
    return f"/views/{view_id}/changes?since={page.since}{skip}"


def problem(status: int, title: str, detail: str) -> dict[str, Any]:
    return {"type": "about:blank", "title": title, "status": status, "detail": detail}


def _binding(b: changes.Binding) -> dict[str, dict[str, str]]:
    return {v: fmt.term_json(fields_of(t)) for v, t in b.items()}


# ------------------------------------------------------------------ SSE


def sse(kind: str, data: Any, seq: int | None = None) -> bytes:
    return sse_text(kind, json.dumps(data, separators=(",", ":")), seq)


@dataclass(frozen=True)
class Read:
    """A page and its whole changes encoded once (in the thread pool) for
    every stream and channel that shares the read (design note 112): each
    delta's JSON (``bodies``), its SSE event, and the page's events as one
    chunk (``chunk``: all of them, when the page holds whole changes only)."""

    page: changes.Changes
    events: dict[int, bytes]  # by seq: the changes the page holds whole
    snapshot: bytes | None = None
    bodies: dict[int, str] = field(default_factory=dict)
    chunk: bytes | None = None


def read_encoded(engine: Engine, who: Principal, view_id: int, since: int | None, skip: int,
                 budget: int) -> Read:
    """``changes.read`` and its events (the snapshot's too, without ``since``)."""
    page = changes.read(engine, who, view_id, since, skip, budget)
    snapshot = None if page.snapshot is None else sse("snapshot", {
        "seq": page.at, "head": {"vars": list(page.variables)},
        "bindings": [_binding(b) for b in page.snapshot]}, page.at)
    bodies = {ch.seq: change_body(ch) for ch in page.changes if ch.skip == 0 and ch.complete}
    events = {seq: sse_text("change", body, seq) for seq, body in bodies.items()}
    whole = len(events) == len(page.changes)
    return Read(page, events, snapshot, bodies,
                b"".join(events[ch.seq] for ch in page.changes) if whole and events else None)


def change_body(ch: changes.Change) -> str:
    """A delta as JSON text, the same in an SSE event and a notification."""
    return json.dumps(change_json(ch), separators=(",", ":"))


def sse_text(kind: str, data: str, seq: int | None = None) -> bytes:
    head = f"id: {seq}\n" if seq is not None else ""
    return f"{head}event: {kind}\ndata: {data}\n\n".encode()


def change_event(ch: changes.Change) -> bytes:
    return sse_text("change", change_body(ch), ch.seq)


class SharedReads:
    """Reads of a feed page shared by the streams that ask for the same one
    (view, caller, position) after the same job end."""

    def __init__(self, size: int = 256) -> None:
        self.pages: OrderedDict[tuple, asyncio.Future[Read]] = OrderedDict()
        self.size = size

    async def read(self, key: tuple, engine: Engine, who: Principal, view_id: int,
                   since: int, skip: int, budget: int) -> Read:
        found = self.pages.get(key)
        if found is None or (found.done() and found.exception() is not None):
            found = asyncio.ensure_future(run_in_threadpool(
                read_encoded, engine, who, view_id, since, skip, budget))
            self.pages[key] = found
            while len(self.pages) > self.size:
                self.pages.popitem(last=False)
        return await asyncio.shield(found)


# The view's writer for one stream or channel (``fanout.Fanout.writer``): from a
# position and the generation it was read at, the position it is handed back at
# (None: the view moved meanwhile, read it yourself)
Writer = Callable[[int, int], Awaitable[int | None]]


async def stream(engine: Engine, who: Principal, view_id: int, first: Read,
                 budget: int, notices: ViewNotices, closing: threading.Event,
                 shared: SharedReads, heartbeat: float,
                 writer: Writer | None = None) -> AsyncIterator[bytes]:
    """The view's events from the page ``first`` on (read before the
    response began, so a refusal is an HTTP status): its snapshot as the
    first event when it holds one, then a change event per seq. With
    ``writer``, a stream caught up with the view leaves its changes to the
    view's writer until handed back (design note 134)."""
    if first.snapshot is not None:
        yield first.snapshot
    page: changes.Changes | None = first.page
    encoded, chunk = first.events, first.chunk
    held: changes.Change | None = None  # a delta read in parts is sent whole
    # seen = -1: one more read right away (a job may have ended since ``first`` was read)
    read_at, beat, seen = time.monotonic(), time.monotonic(), -1
    since, skip = first.page.since, first.page.skip
    while not closing.is_set():
        generation, ready = notices.generation(view_id), True
        try:
            while page is not None or generation != seen or time.monotonic() - read_at >= RESYNC:
                if page is None:
                    # a read not woken by a notice is shared within its RESYNC period: a
                    # page read earlier in it may be stale, the next period's is not
                    resync = int(time.monotonic() // RESYNC) if generation == seen else None
                    seen, read_at = generation, time.monotonic()
                    done = await shared.read((view_id, who.agent, since, skip, generation, resync),
                                             engine, who, view_id, since, skip, budget)
                    page, encoded, chunk = done.page, done.events, done.chunk
                if chunk is not None:  # the page's whole changes, one write (note 112)
                    yield chunk
                for ch in page.changes if chunk is None else ():
                    if ch.seq in encoded:
                        yield encoded[ch.seq]
                        continue
                    held = ch if ch.skip == 0 else _joined(held, ch)
                    if held.complete:  # a delta read in parts: encoded here, off the loop
                        yield await run_in_threadpool(change_event, held)
                        held = None
                since, skip = page.since, page.skip
                if page.failed is not None:
                    yield sse("end", problem(409, "The view failed", page.failed))
                    return
                more, page, encoded, chunk = page.more, None, {}, None
                if not more:
                    break
        except NotReady:  # a revocation being applied: its retraction follows
            page, ready = None, False
        except ServiceError as e:  # gone, or no such view any more (dropped): the end
            yield sse("end", problem(e.status, (type(e).__doc__ or "").strip(), e.detail or ""))
            return
        if writer is not None and ready and held is None and skip == 0:  # caught up: the writer's
            reached = await writer(since, seen)
            if reached is not None:  # handed back: read from there ourselves
                since, seen, beat = reached, -1, time.monotonic()
                continue
        if time.monotonic() - beat >= heartbeat:
            beat = time.monotonic()
            yield HEARTBEAT  # a comment; no blank line, which lenient clients
            # (httpx-sse) dispatch as an empty "message" event with the last id
        await notices.wait_async(view_id, generation,
                                 max(0.05, heartbeat - (time.monotonic() - beat)), RESYNC)
    yield sse("end", problem(503, "The server is shutting down",
                             "reconnect with Last-Event-ID to resume"))


def _joined(held: changes.Change | None, part: changes.Change) -> changes.Change:
    assert held is not None and held.seq == part.seq, "a delta's parts arrive in order"
    return changes.Change(part.seq, held.added + part.added, held.removed + part.removed, 0,
                          part.complete)

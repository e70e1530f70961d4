"""``podviews bench live``: notification latency of a view's changes through a
real ``podviews serve`` (one API process, a ``podviews worker`` beside it):
N subscribers follow one view by Server-Sent Events (or each by a Solid
Notifications WebSocketChannel2023 channel: ``channel="websocket"``), in
client processes of their own, while an owner PATCHes its pod at a steady
rate (open loop). Latency is from a PATCH's answer (its commit) to each
subscriber's receipt of the first event at or after that PATCH's seq (a job
may cover several writes: its delta is at the last one's seq) — maintenance
included — p50 and p99 over every (write, subscriber) pair, on the
machine's monotonic clock; the fan-out's spread is a seq's last receipt
less its first; memory per subscriber is the API process's resident memory
with the subscribers connected, less before, divided by their number; CPU
per write is the API process's over the writes (design note 113); the
server's share of the spread is its mean time to write a delivery to every
subscriber (``podviews_fanout_seconds``, design note 139). Every
subscriber must get events in strictly increasing seq order, up to the last
write's. One subscriber of each client process parses every event's data as
JSON, as a client would; the others read the events' ids and kinds only
(design note 138: parsing a thousand copies of each delta cost the client
processes half their CPU, on the cores the server runs on)."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import queue
import statistics
import time
from dataclasses import dataclass

import httpx
import websockets

from server.tools.bench.pipeline import fresh_database
from server.tools.bench.throughput import _patch
from server.tools.process import cpu_seconds, rss_bytes, serving, working

ADMIN = "bench-admin-token"
RESOURCES = 8  # resources written in turn (_patch deletes the triples of 8 writes ago)
VIEW = "PREFIX : <http://ex/>\nSELECT ?s ?o WHERE { ?s :p ?o }"


@dataclass
class LiveRow:
    subscribers: int
    writes: int
    rate_per_s: float
    achieved_per_s: float
    latency_p50_ms: float
    latency_p99_ms: float
    kib_per_subscriber: float
    events_per_subscriber: float  # deliveries (a job covers one write or more)
    fanout_p50_ms: float  # a seq's last receipt less its first, over the subscribers:
    fanout_p99_ms: float  # the fan-out's own cost, maintenance and the write excluded
    server_fanout_ms: float  # the API's mean time to write one delivery to the subscribers
    # it wrote (``podviews_fanout_seconds``): the spread's share that is the server's
    server_deliveries: int  # the deliveries the view's writer made (that histogram's count);
    # a stream behind its view reads each change itself (design note 134), so a starved
    # API may make none
    api_cpu_ms_per_write: float  # the API process's CPU time over the writes (their
    # answers and their deliveries to every subscriber)
    client_cpu_ms_per_write: float  # the subscribers' processes', likewise: what the
    # machine's cores spent receiving, beside the server
    load_average: float  # the machine's (1 min) when the run ended: it is shared
    complete: bool  # every subscriber got every write's event once, in order


def run(server_url: str, subscribers: list[int], writes: int = 250, rate: float = 50.0,
        channel: str = "sse", client_processes: int = 2) -> list[LiveRow]:
    rows = []
    for n in subscribers:
        url = fresh_database(server_url, "live")
        env = {"PODVIEWS_DATABASE_URL": url, "PODVIEWS_ADMIN_TOKEN": ADMIN,
               "PODVIEWS_EXECUTOR": "sql", "PODVIEWS_WORKERS": "0"}
        started: list = []  # type: ignore[type-arg]
        server_log = os.environ.get("PODVIEWS_BENCH_LOG", os.devnull)
        with open(server_log, "wb") as log, serving(env, log, started=started) as base, \
                working(env, 1, log):
            rows.append(asyncio.run(_session(base, started[-1].pid, n, writes, rate, channel,
                                             max(1, min(client_processes, n)))))
    return rows


async def _session(base: str, pid: int, n: int, writes: int, rate: float, channel: str,
                   groups: int) -> LiveRow:
    """The subscribers follow the view in ``groups`` processes of their own
    (design note 113: parsing a thousand streams in the writer's process
    delayed its writes and their receipt), timed on the machine's monotonic
    clock, which every process shares."""
    async with httpx.AsyncClient(base_url=base, timeout=120) as c:
        owner, consumer, view = await _setup(c)
        before = rss_bytes(pid)
        mp = multiprocessing.get_context("spawn")
        ready, results = mp.Queue(), mp.Queue()
        controls = [mp.Queue() for _ in range(groups)]
        sizes = [n // groups + (i < n % groups) for i in range(groups)]
        procs = [mp.Process(target=_group, args=(base, view, consumer, k, channel, ready,
                                                 control, results), daemon=True)
                 for k, control in zip(sizes, controls, strict=True)]
        for p in procs:
            p.start()
        for _ in procs:
            await asyncio.to_thread(ready.get, True, 600)
        during = rss_bytes(pid)
        committed: dict[int, float] = {}
        cpu, clients = _cpu(pid), sum(_cpu(p.pid or 0) for p in procs)
        fanned = await _fanout_seconds(c)
        start = time.monotonic()
        slots: list[asyncio.Task[None] | None] = [None] * RESOURCES
        for i in range(writes):
            await asyncio.sleep(max(0.0, start + i / rate - time.monotonic()))
            slots[i % RESOURCES] = asyncio.create_task(
                _write(c, owner, i, slots[i % RESOURCES], committed))
        await asyncio.gather(*(t for t in slots if t is not None))
        sent = time.monotonic() - start
        last = max(committed)
        for control in controls:
            control.put(last)
        received: list[dict[int, float]] = []
        orders: list[list[int]] = []
        for _ in procs:
            got, order = await asyncio.to_thread(results.get, True, 600)
            received += got
            orders += order
        cpu = _cpu(pid) - cpu
        (spent, rounds), (spent0, rounds0) = await _fanout_seconds(c), fanned
        fanned = (spent - spent0, rounds - rounds0)
        clients = sum(_cpu(p.pid or 0) for p in procs) - clients
        for p in procs:
            p.join(10)
    # a job may cover several writes: a write is delivered by the first event at or after it
    latencies = [(got[first] - at) * 1000 for got in received for seq, at in committed.items()
                 if (first := next((s for s in sorted(got) if s >= seq), None)) is not None]
    complete = len(orders) == n and all(order == sorted(set(order)) and order and
                                        order[-1] == last for order in orders)
    q = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [0.0] * 99
    spread = _spreads(received)
    return LiveRow(n, writes, rate, round(writes / sent, 1),
                   round(statistics.median(latencies), 1) if latencies else float("nan"),
                   round(q[98], 1), round((during - before) / 1024 / max(n, 1), 1),
                   round(sum(len(got) for got in received) / max(n, 1), 1),
                   round(statistics.median(spread), 1) if spread else float("nan"),
                   round(statistics.quantiles(spread, n=100)[98] if len(spread) > 1 else 0.0, 1),
                   round(fanned[0] / fanned[1] * 1e3, 2) if fanned[1] else 0.0, int(fanned[1]),
                   round(cpu / writes * 1e3, 2), round(clients / writes * 1e3, 2),
                   round(os.getloadavg()[0], 1),
                   complete)


async def _write(c: httpx.AsyncClient, owner: dict[str, str], i: int,
                 before: asyncio.Task[None] | None, committed: dict[int, float]) -> None:
    """PATCH number ``i`` at its time, whatever the earlier ones' answers
    (open loop: a slow answer does not lower the rate), to one of
    ``RESOURCES`` resources, after the previous PATCH of that resource (it
    deletes what the write ``RESOURCES`` before inserted)."""
    if before is not None:
        await before
    r = await c.patch(f"/pods/stream/data{i % RESOURCES}", content=_patch(i), headers={
        **owner, "content-type": "application/sparql-update"})
    r.raise_for_status()
    committed[int(r.headers["podviews-seq"])] = time.monotonic()


async def _fanout_seconds(c: httpx.AsyncClient) -> tuple[float, float]:
    """(seconds, deliveries) of the server's ``podviews_fanout_seconds`` so far."""
    found = {"podviews_fanout_seconds_sum": 0.0, "podviews_fanout_seconds_count": 0.0}
    for line in (await c.get("/metrics")).text.splitlines():
        name, _, value = line.partition(" ")
        if name in found:
            found[name] = float(value)
    return found["podviews_fanout_seconds_sum"], found["podviews_fanout_seconds_count"]


def _spreads(received: list[dict[int, float]]) -> list[float]:
    """For each seq every subscriber received: its last receipt less its first (ms)."""
    seqs = set.intersection(*(set(got) for got in received)) if received else set()
    return [(max(got[s] for got in received) - min(got[s] for got in received)) * 1000
            for s in seqs]


def _cpu(pid: int) -> float:
    return cpu_seconds(pid) or 0.0  # a process gone has no more to count


def _group(base: str, view: str, who: dict[str, str], n: int, channel: str,
           ready: multiprocessing.Queue, control: multiprocessing.Queue,  # type: ignore[type-arg]
           results: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    """A client process: ``n`` subscribers; once all follow, ``ready``; told
    the last write's seq, its receipts when each has it (or after 120 s)."""
    results.put(asyncio.run(_follow_all(base, view, who, n, channel, ready, control)))


async def _follow_all(base: str, view: str, who: dict[str, str], n: int, channel: str,
                      ready: multiprocessing.Queue, control: multiprocessing.Queue  # type: ignore[type-arg]
                      ) -> tuple[list[dict[int, float]], list[list[int]]]:
    limits = httpx.Limits(max_connections=n + 10, max_keepalive_connections=n + 10)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as c:
        joined = asyncio.Semaphore(0)
        received: list[dict[int, float]] = [{} for _ in range(n)]
        orders: list[list[int]] = [[] for _ in range(n)]
        follow = _subscribe if channel == "sse" else _subscribe_websocket
        tasks = [asyncio.create_task(follow(c, view, who, received[i], orders[i], joined,
                                            i == 0)) for i in range(n)]
        for _ in range(n):
            await joined.acquire()
        ready.put(n)
        while True:
            try:
                last = control.get_nowait()
                break
            except queue.Empty:
                await asyncio.sleep(0.05)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and any(last not in got for got in received):
            await asyncio.sleep(0.05)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return received, orders


async def _setup(c: httpx.AsyncClient) -> tuple[dict[str, str], dict[str, str], str]:
    admin = {"authorization": f"Bearer {ADMIN}"}
    tokens = {}
    for who in ("owner", "consumer"):
        r = await c.post("/admin/agents", json={"webid": f"urn:bench:{who}", "role": who},
                         headers=admin)
        r.raise_for_status()
        tokens[who] = {"authorization": f"Bearer {r.json()['token']}"}
    (await c.post("/admin/pods", json={"name": "stream", "owner": "urn:bench:owner"},
                  headers=admin)).raise_for_status()
    r = await c.post("/views", json={"name": "live", "query": VIEW}, headers=tokens["consumer"])
    r.raise_for_status()
    view = r.headers["location"]
    r = await c.post("/admin/consents", json={"pod": "stream", "consumer": "urn:bench:consumer"},
                     headers=tokens["owner"])
    r.raise_for_status()
    seq = r.headers["podviews-seq"]
    (await c.get(f"{view}/results", params={"min_seq": seq, "wait": 60},
                 headers=tokens["consumer"])).raise_for_status()
    return tokens["owner"], tokens["consumer"], view


async def _subscribe(c: httpx.AsyncClient, view: str, who: dict[str, str],
                     got: dict[int, float], order: list[int], ready: asyncio.Semaphore,
                     parse: bool) -> None:
    """Follow the view over a connection of its own; the receipt time of
    each change event by seq. The stream is read by ``_Events``, a plain
    protocol: at a thousand subscribers httpx's line iterator cost the
    client processes as much CPU as the server's whole fan-out, on the
    same two cores (design note 134)."""
    url = c.base_url.join(f"{view}/changes")
    loop = asyncio.get_running_loop()
    ended = loop.create_future()
    head = "".join(f"{k}: {v}\r\n" for k, v in {
        **who, "host": url.netloc.decode(), "accept": "text/event-stream"}.items())
    transport, _ = await loop.create_connection(
        lambda: _Events(got, order, ready, ended, parse), url.host, url.port or 80)
    try:
        transport.write(f"GET {url.raw_path.decode()} HTTP/1.1\r\n{head}\r\n".encode())
        await ended
    finally:
        transport.close()


class _Events(asyncio.Protocol):
    """An event stream's response: the status line and headers, then the
    chunked body cut into events (``id``, ``event``, ``data`` lines; comment
    lines skipped), each change's data parsed as JSON as a client would when
    ``parse``."""

    def __init__(self, got: dict[int, float], order: list[int], ready: asyncio.Semaphore,
                 ended: asyncio.Future[None], parse: bool = True) -> None:
        self.got, self.order, self.ready, self.ended = got, order, ready, ended
        self.parse = parse
        self.raw, self.body, self.head = bytearray(), bytearray(), True

    def data_received(self, data: bytes) -> None:
        now = time.monotonic()
        self.raw += data
        if self.head:
            end = self.raw.find(b"\r\n\r\n")
            if end < 0:
                return
            status = bytes(self.raw[:self.raw.find(b"\r\n")])
            if b" 200 " not in status:
                self._end(RuntimeError(f"the stream answered {status!r}"))
                return
            del self.raw[:end + 4]
            self.head = False
        while (eol := self.raw.find(b"\r\n")) >= 0:  # chunked transfer coding
            size = int(bytes(self.raw[:eol]).split(b";")[0], 16)
            if len(self.raw) < eol + 2 + size + 2:
                break
            self.body += self.raw[eol + 2:eol + 2 + size]
            del self.raw[:eol + 2 + size + 2]
            if size == 0:
                self._end(None)
        while (blank := self.body.find(b"\n\n")) >= 0:
            self._event(bytes(self.body[:blank]), now)
            del self.body[:blank + 2]

    def _event(self, text: bytes, now: float) -> None:
        fields = dict(line.split(b": ", 1) for line in text.split(b"\n")
                      if line and not line.startswith(b":"))
        if fields.get(b"event") == b"snapshot":
            self.ready.release()
        elif fields.get(b"event") == b"change":
            seq = int(fields[b"id"])
            self.got[seq] = now
            self.order.append(seq)
            if self.parse:
                json.loads(fields[b"data"])  # a client parses what it receives
            elif not fields.get(b"data"):
                raise ValueError(f"change {seq} came without data")

    def connection_lost(self, exc: Exception | None) -> None:
        self._end(exc)

    def _end(self, exc: BaseException | None) -> None:
        if not self.ended.done():
            if exc is None:
                self.ended.set_result(None)
            else:
                self.ended.set_exception(exc)


async def _subscribe_websocket(c: httpx.AsyncClient, view: str, who: dict[str, str],
                               got: dict[int, float], order: list[int],
                               ready: asyncio.Semaphore, parse: bool) -> None:
    """Subscribe a WebSocketChannel2023 channel to the view's results and
    follow it; the receipt time of each notification by its state (seq).
    Every channel parses (``parse`` is moot): the seq is in the JSON."""
    r = await c.post("/notifications/WebSocketChannel2023/", headers={
        **who, "content-type": "application/ld+json"}, json={
        "type": "WebSocketChannel2023", "topic": str(c.base_url).rstrip("/") + f"{view}/results"})
    r.raise_for_status()
    async with websockets.connect(r.json()["receiveFrom"], max_size=None) as ws:
        ready.release()
        async for message in ws:
            note = json.loads(message)  # a client parses what it receives
            seq = int(note["state"])
            got[seq] = time.monotonic()
            order.append(seq)

"""``podviews bench live``: notification latency of a view's changes through a
real ``podviews serve`` (one API process, a ``podviews worker`` beside it):
N subscribers follow one view by Server-Sent Events (or each by a Solid
Notifications WebSocketChannel2023 channel: ``channel="websocket"``) while
an owner PATCHes its pod at a steady rate. Latency is from a PATCH's answer (its commit) to
each subscriber's receipt of the first event at or after that PATCH's seq
(a job may cover several writes: its delta is at the last one's seq) —
maintenance included — p50 and p99 over every (write, subscriber) pair; memory per
subscriber is the API process's resident memory with the subscribers
connected, less before, divided by their number. Every subscriber must get
events in strictly increasing seq order, up to the last write's."""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time
from dataclasses import dataclass

import httpx
import websockets

from server.tools.bench.pipeline import fresh_database
from server.tools.bench.throughput import _patch
from server.tools.process import rss_bytes, serving, working

ADMIN = "bench-admin-token"
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
    complete: bool  # every subscriber got every write's event once, in order


def run(server_url: str, subscribers: list[int], writes: int = 250, rate: float = 50.0,
        channel: str = "sse") -> list[LiveRow]:
    rows = []
    for n in subscribers:
        url = fresh_database(server_url, "live")
        env = {"PODVIEWS_DATABASE_URL": url, "PODVIEWS_ADMIN_TOKEN": ADMIN,
               "PODVIEWS_EXECUTOR": "sql", "PODVIEWS_WORKERS": "0"}
        started: list = []  # type: ignore[type-arg]
        server_log = os.environ.get("PODVIEWS_BENCH_LOG", os.devnull)
        with open(server_log, "wb") as log, serving(env, log, started=started) as base, \
                working(env, 1, log):
            rows.append(asyncio.run(_session(base, started[-1].pid, n, writes, rate, channel)))
    return rows


async def _session(base: str, pid: int, n: int, writes: int, rate: float,
                   channel: str) -> LiveRow:
    limits = httpx.Limits(max_connections=n + 10, max_keepalive_connections=n + 10)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as c:
        owner, consumer, view = await _setup(c)
        before = rss_bytes(pid)
        ready = asyncio.Semaphore(0)
        received: list[dict[int, float]] = [{} for _ in range(n)]
        orders: list[list[int]] = [[] for _ in range(n)]
        follow = _subscribe if channel == "sse" else _subscribe_websocket
        tasks = [asyncio.create_task(follow(c, view, consumer, received[i], orders[i], ready))
                 for i in range(n)]
        for _ in range(n):
            await ready.acquire()
        during = rss_bytes(pid)
        committed: dict[int, float] = {}
        start = time.perf_counter()
        for i in range(writes):
            await asyncio.sleep(max(0.0, start + i / rate - time.perf_counter()))
            r = await c.patch("/pods/stream/data", content=_patch(i), headers={
                **owner, "content-type": "application/sparql-update"})
            r.raise_for_status()
            committed[int(r.headers["podviews-seq"])] = time.perf_counter()
        sent = time.perf_counter() - start
        last = max(committed)
        deadline = time.perf_counter() + 120
        while time.perf_counter() < deadline and any(last not in got for got in received):
            await asyncio.sleep(0.05)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    # a job may cover several writes: a write is delivered by the first event at or after it
    latencies = [(got[first] - at) * 1000 for got in received for seq, at in committed.items()
                 if (first := next((s for s in sorted(got) if s >= seq), None)) is not None]
    complete = all(order == sorted(set(order)) and order and order[-1] == last
                   for order in orders)
    q = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [0.0] * 99
    return LiveRow(n, writes, rate, round(writes / sent, 1),
                   round(statistics.median(latencies), 1) if latencies else float("nan"),
                   round(q[98], 1), round((during - before) / 1024 / max(n, 1), 1), complete)


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
                     got: dict[int, float], order: list[int], ready: asyncio.Semaphore) -> None:
    """Follow the view; the receipt time of each change event by seq."""
    async with c.stream("GET", f"{view}/changes", headers={
            **who, "accept": "text/event-stream"}) as r:
        kind = seq = None
        async for line in r.aiter_lines():
            if line.startswith("id: "):
                seq = int(line[4:])
            elif line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: ") and kind is not None:
                if kind == "snapshot":
                    ready.release()
                elif kind == "change" and seq is not None:
                    got[seq] = time.perf_counter()
                    order.append(seq)
                    json.loads(line[6:])  # a client parses what it receives
                kind = seq = None


async def _subscribe_websocket(c: httpx.AsyncClient, view: str, who: dict[str, str],
                               got: dict[int, float], order: list[int],
                               ready: asyncio.Semaphore) -> None:
    """Subscribe a WebSocketChannel2023 channel to the view's results and
    follow it; the receipt time of each notification by its state (seq)."""
    r = await c.post("/notifications/WebSocketChannel2023/", headers={
        **who, "content-type": "application/ld+json"}, json={
        "type": "WebSocketChannel2023", "topic": str(c.base_url).rstrip("/") + f"{view}/results"})
    r.raise_for_status()
    async with websockets.connect(r.json()["receiveFrom"], max_size=None) as ws:
        ready.release()
        async for message in ws:
            note = json.loads(message)  # a client parses what it receives
            seq = int(note["state"])
            got[seq] = time.perf_counter()
            order.append(seq)

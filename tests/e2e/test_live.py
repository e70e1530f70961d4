"""Live changes end to end (issue 18): two `podviews serve` processes behind
one Postgres and a `podviews worker`; writes go to one API process, an SSE
client (httpx-sse) follows the view on the other — each write's delta
arrives as one event whose id is the write's seq. The process it listens to
shuts down (the stream ends with an ``end`` event, cleanly); writes go on;
the client resumes with ``Last-Event-ID`` on a restarted process and gets
exactly the deltas it missed: its snapshot with every delta applied equals
the view's results. A WebSocketChannel2023 channel subscribed on one
process is received on the other the same way, ends with the problem
document when that process shuts down, and its ``receiveFrom`` opened on
the restarted process goes on from where the socket was (design note 93)."""

from __future__ import annotations

import json
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator

import httpx
import pytest
from httpx_sse import ServerSentEvent, connect_sse
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect as websocket

from server.tools.process import serving, working
from tests.conftest import scratch_database
from tests.e2e.conftest import consenting_consumer, owned_pod

ADMIN = "e2e-live-admin-token"
EX = "@prefix : <http://ex/> .\n"


@pytest.fixture(scope="module")
def env(pg_server: str, migrated_template: str) -> Iterator[dict[str, str]]:
    with scratch_database(pg_server, "pv_live", template=migrated_template) as url:
        yield {"PODVIEWS_DATABASE_URL": url, "PODVIEWS_EXECUTOR": "sql",
               "PODVIEWS_ADMIN_TOKEN": ADMIN, "PODVIEWS_WORKERS": "0",
               "PODVIEWS_SSE_HEARTBEAT": "1"}


def _row(b: dict) -> tuple:  # type: ignore[type-arg]
    return tuple(sorted((v, t["value"]) for v, t in b.items()))


def _apply(rows: Counter, event: ServerSentEvent) -> int:  # type: ignore[type-arg]
    change = json.loads(event.data)
    rows.update(_row(b) for b in change["added"])
    rows.subtract(_row(b) for b in change["removed"])
    assert int(event.id) == change["seq"]
    return int(change["seq"])


def _notified(rows: Counter, message: str | bytes) -> int:  # type: ignore[type-arg]
    note = json.loads(message)
    rows.update(_row(b) for b in note["delta"]["added"])
    rows.subtract(_row(b) for b in note["delta"]["removed"])
    return int(note["state"])


def _on(base: str, receive_from: str) -> str:
    """``receive_from`` (named by the process that made the channel) on ``base``'s process."""
    return base.replace("http://", "ws://") + receive_from[receive_from.index("/notifications/"):]


def _followers(base: str, expected: int) -> float:
    """``podviews_sse_followers`` of the process at ``base`` once it is
    ``expected`` (a stream or channel follows once its own reads are caught
    up), or after 10 s."""
    deadline = time.monotonic() + 10
    while True:
        text = httpx.get(f"{base}/metrics").text
        value = float(next(line.split()[1] for line in text.splitlines()
                           if line.startswith("podviews_sse_followers ")))
        if value == expected or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


def _until(take: Callable[[], int], last: int) -> list[int]:
    """The seqs ``take`` gives up to ``last``."""
    got = [take()]
    while got[-1] < last:
        got.append(take())
    return got


def _changes(events: Iterator[ServerSentEvent]) -> Iterator[ServerSentEvent]:
    return (e for e in events if e.data)  # not the heartbeats (comments)


def test_sse_follows_a_view_across_api_processes_and_a_restart(env: dict[str, str]) -> None:
    started: list[subprocess.Popen] = []  # type: ignore[type-arg]
    with serving(env, inherit=False) as a, working(env, 1):
        owner = owned_pod(a, "alice", ADMIN)
        made, view = consenting_consumer(a, owner, "alice", "https://lab.test/#it",
                                         "SELECT ?s ?o WHERE { ?s <http://ex/p> ?o }", ADMIN)
        consumer = {"authorization": f"Bearer {made['token']}"}

        def write(n: int) -> int:
            r = owner.client.put("/pods/alice/data", content=EX + f":a :p {n} . :b :p {n * 10} .",
                                 headers={"content-type": "text/turtle"})
            assert r.status_code in (201, 204), r.text
            return int(r.headers["podviews-seq"])

        seqs = [write(1)]
        r = httpx.get(f"{a}{view}/results", params={"min_seq": seqs[0], "wait": 60},
                      headers=consumer, timeout=90)
        notified = Counter(_row(x) for x in r.json()["results"]["bindings"])
        r = httpx.post(f"{a}/notifications/WebSocketChannel2023/", headers={
            **consumer, "content-type": "application/ld+json"}, json={
            "type": "WebSocketChannel2023", "topic": f"{a}{view}/results"})
        assert r.status_code == 200 and r.json()["state"] == str(seqs[0]), r.text
        receive_from = r.json()["receiveFrom"]
        rows: Counter = Counter()  # type: ignore[type-arg]
        with serving(env, inherit=False, started=started) as b, \
                httpx.Client(base_url=b, headers=consumer, timeout=60) as c, \
                connect_sse(c, "GET", f"{view}/changes") as source, \
                websocket(_on(b, receive_from)) as ws:
            events = _changes(source.iter_sse())
            snapshot = next(events)
            assert snapshot.event == "snapshot"
            rows.update(_row(x) for x in json.loads(snapshot.data)["bindings"])
            last = int(snapshot.id)
            for n in (2, 3):
                seqs.append(write(n))
                event = next(events)
                assert event.event == "change"
                last = _apply(rows, event)
                assert last == seqs[-1]  # written on A, delivered by B, at the write's seq
                assert _notified(notified, ws.recv(timeout=60)) == seqs[-1]
            # caught up, the SSE stream and the WebSocket channel are the view's writer's
            assert _followers(b, 2) == 2
            started[-1].terminate()  # B shuts down: the stream ends with an end event
            end = next(events)
            assert end.event == "end" and json.loads(end.data)["status"] == 503
            assert next(events, None) is None
            with pytest.raises(ConnectionClosed) as closed:  # the socket closes too: by
                # uvicorn (1012, service restart) or, after its problem document, by us (1001)
                assert json.loads(ws.recv(timeout=60))["status"] == 503
                ws.recv(timeout=60)
            assert closed.value.rcvd is not None and closed.value.rcvd.code in (1001, 1012)
        seqs += [write(4), write(5)]  # while no one listens
        with serving(env, inherit=False) as b2, \
                httpx.Client(base_url=b2, headers=consumer, timeout=60) as c, \
                connect_sse(c, "GET", f"{view}/changes",
                            headers={"last-event-id": str(last)}) as source, \
                websocket(_on(b2, receive_from)) as ws:
            events = _changes(source.iter_sse())
            # a job may cover both writes (the worker behind them): one delta at the last
            got = _until(lambda: _apply(rows, next(events)), seqs[-1])
            assert got in (seqs[3:], seqs[4:])  # no gap, no duplicate, in order
            assert _until(lambda: _notified(notified, ws.recv(timeout=60)), seqs[-1]) == got
        r = httpx.get(f"{a}{view}/results", params={"min_seq": seqs[-1], "wait": 60},
                      headers=consumer, timeout=90)
        assert +rows == Counter(_row(x) for x in r.json()["results"]["bindings"]) == +notified

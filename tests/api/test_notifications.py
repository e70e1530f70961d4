"""Solid Notifications on views' results in process (design notes 90–96):
the storage description the results link to (read with rdflib) names the
subscription services; a WebSocketChannel2023 channel delivers each delta
as an Activity Streams ``Update`` at its seq — a consumer that applies them
to the results it started from holds the view's results read afresh — then
a revocation's retraction, then nothing from that pod; a channel with a
``state`` resumes after that seq; a WebhookChannel2023 channel POSTs them
to a local receiver through failures (retried) and dies into ``/metrics``
when its receiver is gone; a failed view ends both kinds with its problem
document; bad subscriptions are problem documents."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest
from rdflib import Graph, Namespace, URIRef
from rdflib.compare import isomorphic
from starlette.websockets import WebSocketDisconnect

from server.api.notify import service
from server.errors import Unprocessable
from tests.api.api_helpers import TURTLE, World, world
from tests.api.test_api import EX, _grant, _view

NOTIFY = Namespace("http://www.w3.org/ns/solid/notifications#")
BASE = "http://pods.test"
LD = {"content-type": "application/ld+json"}


@pytest.fixture
def w(migrated: str) -> Iterator[World]:
    with world(migrated, page_rows=3, webhook_private=True, webhook_backoff=0.01,
               webhook_attempts=3) as w:
        yield w


def _put(w: World, body: str, pod: str = "alice", who: str = "owner", path: str = "data") -> int:
    r = w.client.put(f"/pods/{pod}/{path}", content=EX + body, headers={**TURTLE, **w.as_(who)})
    assert r.status_code in (201, 204), r.text
    return int(r.headers["podviews-seq"])


def _results(w: World, view: str, seq: int) -> Counter[tuple]:  # type: ignore[type-arg]
    r = w.client.get(f"{view}/results", params={"min_seq": seq}, headers=w.as_("consumer"))
    assert r.status_code == 200, r.text
    return Counter(_row(b) for b in r.json()["results"]["bindings"])


def _row(b: dict) -> tuple:  # type: ignore[type-arg]
    return tuple(sorted((v, t["type"], t["value"], t.get("datatype")) for v, t in b.items()))


def _apply(rows: Counter, message: dict) -> int:  # type: ignore[type-arg]
    rows.update(_row(b) for b in message["delta"]["added"])
    rows.subtract(_row(b) for b in message["delta"]["removed"])
    return int(message["state"])


def _services(w: World) -> dict[URIRef, URIRef]:
    """The subscription services of the storage description the view's
    results link to, by channel type (rdflib reads it: an independent parser)."""
    r = w.client.get("/.well-known/solid")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/turtle")
    g = Graph().parse(data=r.text, format="turtle", publicID=f"{BASE}/.well-known/solid")
    ld = w.client.get("/.well-known/solid", headers={
        "accept": "application/ld+json, text/turtle;q=0.5"})
    assert ld.headers["content-type"] == "application/ld+json"
    assert isomorphic(g, Graph().parse(data=ld.text, format="json-ld"))  # one description
    me = URIRef(f"{BASE}/.well-known/solid")
    return {g.value(s, NOTIFY.channelType): s for s in g.objects(me, NOTIFY.subscription)}


def test_a_websocket_channel_found_from_the_results_delivers_each_delta_then_a_revocation(
        w: World) -> None:
    """... then nothing of the revoked pod."""
    view = _view(w, "SELECT ?s ?o WHERE { ?s :p ?o }")
    alice = _grant(w)
    _grant(w, "bob")
    start = _put(w, ":a :p 1 .")
    r = w.client.get(f"{view}/results", params={"min_seq": start}, headers=w.as_("consumer"))
    assert r.links["http://www.w3.org/ns/solid/terms#storageDescription"]["url"] == \
        f"{BASE}/.well-known/solid"
    rows = Counter(_row(b) for b in r.json()["results"]["bindings"])  # where it starts
    services = _services(w)
    assert set(services) == {NOTIFY.WebSocketChannel2023, NOTIFY.WebhookChannel2023}
    topic = f"{BASE}{view}/results"
    service_url = services[NOTIFY.WebSocketChannel2023]
    r = w.client.post(service_url, headers={**LD, **w.as_("consumer")}, json={
        "@context": ["https://www.w3.org/ns/solid/notification/v1"],
        "type": "WebSocketChannel2023", "topic": topic})
    assert r.status_code == 200, r.text
    channel = r.json()
    assert channel["type"] == str(NOTIFY.WebSocketChannel2023) and channel["topic"] == topic
    assert channel["receiveFrom"].startswith("ws://pods.test/notifications/ws/")
    with w.client.websocket_connect(channel["receiveFrom"].removeprefix("ws://pods.test")) as ws:
        for write in (lambda: _put(w, ":a :p 2 . :b :p 3 ."),
                      lambda: _put(w, ":c :p 4 .", "bob", "other_owner")):
            seq = write()  # (one at a time: a worker may join writes made together)
            message = ws.receive_json()
            assert message["type"] == "Update" and message["object"] == topic
            assert message["id"] == f"urn:podviews:view:{view.rsplit('/', 1)[1]}:seq:{seq}"
            assert _apply(rows, message) == seq == message["delta"]["seq"]
            assert +rows == _results(w, view, seq)
        r = w.client.delete(f"/admin/consents/{alice}", headers=w.as_("owner"))
        revoked = int(r.headers["podviews-seq"])
        message = ws.receive_json()  # the retraction of alice's rows
        assert _apply(rows, message) == revoked and message["delta"]["added"] == []
        assert +rows == _results(w, view, revoked)
        _put(w, ":d :p 5 .")  # alice's pod: no longer in the view
        last = _put(w, ":e :p 6 .", "bob", "other_owner")
        message = ws.receive_json()
        assert _apply(rows, message) == last  # the next delta is bob's, none of alice's between
        assert +rows == _results(w, view, last)
        assert {{v: x for v, _, x, _ in row}["s"] for row in +rows} == \
            {"http://ex/e"}  # bob's data replaced; alice's gone
    token = channel["id"].rsplit("/", 1)[1]
    assert w.client.delete(f"/notifications/channels/{token}",
                           headers=w.as_("other_consumer")).status_code == 404
    assert w.client.delete(f"/notifications/channels/{token}",
                           headers=w.as_("consumer")).status_code == 204
    with pytest.raises(WebSocketDisconnect), \
            w.client.websocket_connect(f"/notifications/ws/{token}") as ws:
        ws.receive_json()


class _Receiver(BaseHTTPRequestHandler):
    """A webhook receiver: refuses the first ``refuse`` POSTs (500), keeps the others."""

    got: ClassVar[list[tuple[str, dict]]] = []  # type: ignore[type-arg]
    refuse: ClassVar[int] = 0
    arrived: ClassVar[threading.Condition] = threading.Condition()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        with _Receiver.arrived:
            if _Receiver.refuse > 0:
                _Receiver.refuse -= 1
                self.send_response(500)
            else:
                _Receiver.got.append((self.headers["content-type"], body))
                self.send_response(202)
                _Receiver.arrived.notify_all()
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    _Receiver.got, _Receiver.refuse = [], 2
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/inbox"
    server.shutdown()


def _received(n: int) -> list[dict]:  # type: ignore[type-arg]
    with _Receiver.arrived:
        assert _Receiver.arrived.wait_for(lambda: len(_Receiver.got) >= n, timeout=60)
        return [body for _, body in _Receiver.got]


def _metrics_once(w: World, *lines: str) -> str:
    """``/metrics`` once it shows all ``lines`` (or after a minute: the caller
    asserts). One scrape reads this process's counters before the database,
    so a counter moved and committed between the two shows next time."""
    for _ in range(1200):
        metrics = w.client.get("/metrics").text
        if all(line in metrics for line in lines):
            break
        threading.Event().wait(0.05)
    return metrics


def test_a_webhook_receives_every_delta_through_failures_and_dies_without_receiver(
        w: World, receiver: str) -> None:
    view = _view(w, "SELECT ?s WHERE { ?s :p ?o }")
    _grant(w)
    rows = _results(w, view, _put(w, ":a :p 1 ."))
    topic = f"{BASE}{view}/results"
    r = w.client.post(_services(w)[NOTIFY.WebhookChannel2023],
                      headers={**LD, **w.as_("consumer")},
                      json={"type": str(NOTIFY.WebhookChannel2023), "topic": topic,
                            "sendTo": receiver})
    assert r.status_code == 200 and r.json()["sendTo"] == receiver and \
        "receiveFrom" not in r.json()
    seqs = [_put(w, ":b :p 1 .")]
    _received(1)  # the first two POSTs were refused: retried
    seqs.append(_put(w, ":a :p 2 . :c :p 1 ."))
    got = _received(2)
    assert [_apply(rows, m) for m in got] == seqs and all(m["object"] == topic for m in got)
    assert +rows == _results(w, view, seqs[-1])
    assert {t for t, _ in _Receiver.got} == {"application/ld+json"}
    dead = w.client.post(_services(w)[NOTIFY.WebhookChannel2023],
                         headers={**LD, **w.as_("consumer")},
                         json={"type": "WebhookChannel2023", "topic": topic,
                               "sendTo": "http://127.0.0.1:9/nobody"})  # discard: refused
    assert dead.status_code == 200
    _put(w, ":z :p 1 .")
    dead = ('podviews_notification_channels{kind="webhook",status="dead"} 1.0',
            'podviews_webhook_posts_total{outcome="dead"} 1.0')
    metrics = _metrics_once(w, *dead)
    assert all(line in metrics for line in dead), metrics
    assert len(_received(3)) == 3  # the live webhook went on


def test_a_state_resumes_after_its_seq_and_bad_subscriptions_are_problem_documents(
        w: World) -> None:
    view = _view(w, "SELECT ?s WHERE { ?s :p ?o }")
    consent = _grant(w)
    first = _put(w, ":a :p 1 .")
    _results(w, view, first)  # (a delta of its own: a worker may join writes made together)
    second = _put(w, ":b :p 1, 2, 3, 4 .", path="other")  # more rows than a page holds
    _results(w, view, second)
    topic = f"{BASE}{view}/results"
    r = w.client.post("/notifications/gateway", headers=w.as_("consumer"),
                      json={"protocols": ["ws"], "features": []})
    assert r.status_code == 200 and r.json()["protocol"] == "ws"
    r = w.client.post(r.json()["endpoint"], headers={**LD, **w.as_("consumer")},
                      json={"topic": topic, "state": str(first)})
    assert r.status_code == 200 and r.json()["endpoint"] == r.json()["receiveFrom"]
    with w.client.websocket_connect(r.json()["receiveFrom"].removeprefix("ws://pods.test")) as sock:
        message = sock.receive_json()  # what was recorded after ``first`` already, whole
        assert message["state"] == str(second)
        assert [b["s"]["value"] for b in message["delta"]["added"]] == ["http://ex/b"] * 4
    ws, hook = "/notifications/WebSocketChannel2023/", "/notifications/WebhookChannel2023/"
    ask = _view(w, "ASK { ?s :p ?o }")
    cases = [  # (service, who, headers, body, status, a word of the detail)
        (ws, None, LD, {"type": "WebSocketChannel2023", "topic": topic}, 401, "token"),
        (ws, "other_consumer", LD, {"type": "WebSocketChannel2023", "topic": topic}, 404, "view"),
        (ws, "consumer", {"content-type": "text/turtle"}, "<> a <x> .", 415, "JSON-LD"),
        (ws, "consumer", LD, "{not json", 422, "not JSON"),
        (ws, "consumer", LD, ["a list"], 422, "object"),
        (ws, "consumer", LD, {"type": "WebSocketChannel2023"}, 422, "topic"),
        (ws, "consumer", LD, {"type": "WebSocketChannel2023", "topic": "http://elsewhere/x"},
         422, "results"),
        (ws, "consumer", LD, {"type": "WebhookChannel2023", "topic": topic,
                              "sendTo": "http://127.0.0.1/"}, 422, "WebSocketChannel2023"),
        (ws, "consumer", LD, {"type": "LDNChannel2023", "topic": topic}, 422, "unsupported"),
        (ws, "consumer", LD, {"type": "WebSocketChannel2023", "topic": topic, "rate": "PT1S"},
         422, "rate"),
        (ws, "consumer", LD, {"type": "WebSocketChannel2023", "topic": topic, "state": "x"},
         422, "state"),
        (ws, "consumer", LD, {"type": "WebSocketChannel2023", "topic": f"{BASE}{ask}/results"},
         409, "boolean"),
        (hook, "consumer", LD, {"type": "WebhookChannel2023", "topic": topic}, 422, "sendTo"),
        (hook, "consumer", LD, {"topic": topic, "x": "y" * (65 << 10)}, 413, "at most"),
        (hook, "consumer", LD, {"type": "WebhookChannel2023", "topic": topic,
                                "sendTo": "ftp://x/"}, 422, "http"),
    ]
    for url, who, headers, body, status, word in cases:
        content = body if isinstance(body, str) else json.dumps(body)
        r = w.client.post(url, content=content, headers={**headers, **w.as_(who)})
        assert (r.status_code, r.headers["content-type"]) == \
            (status, "application/problem+json"), (body, r.text)
        assert word in r.json()["detail"], (body, r.json())
    w.client.delete(f"/admin/consents/{consent}", headers=w.as_("owner"))  # compacts the feed
    _results(w, view, _put(w, ":b :p 1 .", "bob", "other_owner"))
    r = w.client.post(ws, headers={**LD, **w.as_("consumer")}, json={
        "type": "WebSocketChannel2023", "topic": topic, "state": str(first - 1)})
    assert r.status_code == 410 and "subscribe without state" in r.json()["detail"]
    with pytest.raises(Unprocessable, match="no public address"):  # webhook_private off
        service.parse(json.dumps({"type": "WebhookChannel2023", "topic": topic,
                                  "sendTo": "http://127.0.0.1/"}).encode(), "application/ld+json",
                      service.activity.WEBHOOK, BASE)


def test_a_failed_view_ends_its_channels_with_the_problem(w: World, receiver: str,
                                                          migrated: str) -> None:
    import sqlalchemy as sa

    from storage import queue

    view = _view(w, "SELECT ?s WHERE { ?s :p ?o }")
    _grant(w)
    _results(w, view, _put(w, ":a :p 1 ."))
    topic = f"{BASE}{view}/results"
    hook = w.client.post("/notifications/WebhookChannel2023/", headers={**LD, **w.as_("consumer")},
                         json={"type": "WebhookChannel2023", "topic": topic, "sendTo": receiver})
    socket = w.client.post("/notifications/WebSocketChannel2023/",
                           headers={**LD, **w.as_("consumer")},
                           json={"type": "WebSocketChannel2023", "topic": topic})
    assert hook.status_code == socket.status_code == 200
    with w.client.websocket_connect(socket.json()["receiveFrom"].removeprefix("ws://pods.test")) \
            as ws:
        engine = sa.create_engine(migrated)
        with engine.begin() as c:  # a job the worker cannot run, with no retries left
            queue.enqueue(c, "grant", int(view.rsplit("/", 1)[1]), {"consent": "none"},
                          max_attempts=1)
        engine.dispose()
        end = ws.receive_json()  # the problem document, then the socket closes
        assert end["status"] == 409 and end["title"] == "The view failed"
        with pytest.raises(WebSocketDisconnect):
            ws.receive_json()
    assert _received(1) == [end]  # the webhook's last POST: the same problem document
    assert _Receiver.got[0][0] == "application/problem+json"
    assert 'podviews_notification_channels{kind="webhook",status="ended"} 1.0' in \
        _metrics_once(w, 'podviews_notification_channels{kind="webhook",status="ended"} 1.0')

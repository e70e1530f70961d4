"""A chunk framed once and written straight to uvicorn's transport (design
note 140): the bytes are those h11 itself writes for the chunk, and a real
uvicorn server hands its h11 cycle's transport over only while a response
of an HTTP/1.1 request other than HEAD is started and not complete."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import h11
import httpx
import pytest
import uvicorn

from server.api.views.direct import direct, frame


@pytest.mark.parametrize("body", [b"x", b"data: 1\n\n", bytes(range(256)) * 300])
def test_a_frame_is_the_chunk_h11_writes_for_the_body(body: bytes) -> None:
    conn = h11.Connection(h11.SERVER)
    conn.receive_data(b"GET /changes HTTP/1.1\r\nHost: x\r\n\r\n")
    assert isinstance(conn.next_event(), h11.Request)
    conn.send(h11.Response(status_code=200, headers=[("content-type", "text/event-stream")]))
    assert conn.send(h11.Data(data=body)) == frame(body)


def test_an_empty_body_frames_to_nothing_as_h11_writes_it() -> None:
    conn = h11.Connection(h11.SERVER)
    conn.receive_data(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    conn.next_event()
    conn.send(h11.Response(status_code=200, headers=[]))
    assert conn.send(h11.Data(data=b"")) == frame(b"") == b""


class App:
    """Writes ``a`` and ``b`` through ``direct`` where it is offered, then
    ``c`` through ``send``; records what ``direct`` answered."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, bool | None, bool | None]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        write = direct(send)
        early = None if write is None else write(frame(b"too early"))
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/plain")]})
        wrote = None
        if write is not None:
            wrote = write(frame(b"a")) and write(frame(b"b"))
        await send({"type": "http.response.body", "body": b"c", "more_body": False})
        after = None if write is None else write(frame(b"late"))
        self.seen.append((scope["method"], early, wrote))
        self.seen.append(("after", after, None))


def settled(app: App, entries: int) -> None:
    """Wait for the app's records (it writes them after the response ends)."""
    deadline = time.monotonic() + 10
    while len(app.seen) < entries:
        assert time.monotonic() < deadline, app.seen
        time.sleep(0.01)


@pytest.fixture()
def served() -> Iterator[tuple[str, App]]:
    app = App()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, http="h11",
                                           lifespan="off", log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}", app
    server.should_exit = True
    thread.join(10)


def test_an_http11_response_takes_framed_chunks_only_while_it_is_open(served: tuple[str, App]
                                                                      ) -> None:
    url, app = served
    r = httpx.get(url)
    assert r.status_code == 200 and r.content == b"abc"
    settled(app, 2)
    assert app.seen == [("GET", False, True), ("after", False, None)]


def test_head_and_http10_go_through_send(served: tuple[str, App]) -> None:
    url, app = served
    assert httpx.head(url).status_code == 200
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as s:
        s.sendall(b"GET / HTTP/1.0\r\n\r\n")
        raw = b""
        while chunk := s.recv(65536):
            raw += chunk
    assert raw.endswith(b"\r\n\r\nc")  # HTTP/1.0: the body as is, up to the close
    settled(app, 4)
    assert [m for m, *_ in app.seen if m != "after"] == ["HEAD", "GET"]
    assert all(early is None and wrote is None for m, early, wrote in app.seen)


def test_a_send_of_another_kind_is_not_taken_over() -> None:
    async def send(message: dict[str, Any]) -> None: ...

    assert direct(send) is None and direct(print) is None

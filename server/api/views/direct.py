"""A streamed body's chunk written straight to uvicorn's transport, framed
once for every follower of a view (design note 140).

A delivery writes the same bytes to a thousand event streams. Through the
ASGI ``send`` of uvicorn's h11 protocol each write builds an h11 event,
frames it as an HTTP/1.1 chunk and hands it to the transport; framed once
(RFC 9112 §7.1: the size in hex, CRLF, the data, CRLF), the chunk goes to
each follower's transport as it is, which is all that ``send`` does with
it. Only where that holds: uvicorn's h11 cycle of an HTTP/1.1 request
other than HEAD whose response has started, is not complete, is still
connected and whose transport takes writes (not paused). Anything else — a
paused transport, another server or protocol (httptools frames its own
way) — goes through ``send``, which waits and frames as it must."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from uvicorn.protocols.http.h11_impl import RequestResponseCycle as H11Cycle

Direct = Callable[[bytes], bool]  # a framed chunk written now (True), or not at all


def frame(body: bytes) -> bytes:
    """``body`` as one chunk of a chunked HTTP/1.1 body (empty: nothing,
    as an empty chunk would end the body)."""
    return b"%x\r\n%s\r\n" % (len(body), body) if body else b""


def direct(send: Any) -> Direct | None:
    """A writer of framed chunks for the response ``send`` belongs to, or
    None where its framing is not ``frame``'s (another server, HTTP/1.0,
    HEAD)."""
    cycle = getattr(send, "__self__", None)
    if type(cycle) is not H11Cycle:
        return None
    if cycle.scope.get("method") == "HEAD" or cycle.conn.their_http_version != b"1.1":
        return None

    def write(chunk: bytes) -> bool:
        if (not cycle.response_started or cycle.response_complete or cycle.disconnected
                or cycle.flow.write_paused):
            return False
        cycle.transport.write(chunk)
        return True

    return write

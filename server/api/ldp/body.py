"""A request's body, read only once the caller may write there, and only up
to the size this server accepts (413 as soon as it is exceeded, whatever
Content-Length claims: the rest is never buffered)."""

from __future__ import annotations

from fastapi import Request

from server.errors import BadRequest, PayloadTooLarge


async def read(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise BadRequest(f"Content-Length {declared!r} is not a number")
        if int(declared) > limit:
            raise PayloadTooLarge(f"the body is {declared} bytes; this server accepts "
                                  f"at most {limit}")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"the body is over {limit} bytes, the most this server "
                                  "accepts")
        chunks.append(chunk)
    return b"".join(chunks)

"""CORS, so that browser Solid apps on any origin can use the pods (as CSS
does with the ``cors`` package): Starlette's middleware, credentials allowed
(the caller's origin echoed, never '*'), every method, any request header,
and the Solid headers exposed to scripts; a preflight answers 204."""

from __future__ import annotations

from fastapi import FastAPI
from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import Response

METHODS = ("GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE")
EXPOSED = ("Accept-Patch", "Accept-Post", "Accept-Put", "Allow", "Content-Range", "ETag",
           "Last-Modified", "Link", "Location", "Updates-Via", "WAC-Allow", "WWW-Authenticate",
           "Podviews-Seq", "Podviews-Total", "Retry-After")


class SolidCors(CORSMiddleware):
    def preflight_response(self, request_headers: Headers) -> Response:
        answer = super().preflight_response(request_headers)
        if answer.status_code != 200:
            return answer
        kept = {k: v for k, v in answer.headers.items()
                if k not in ("content-length", "content-type")}
        return Response(status_code=204, headers=kept)


def install(app: FastAPI) -> None:
    app.add_middleware(SolidCors, allow_origins=["*"], allow_credentials=True,  # type: ignore[arg-type]
                       allow_methods=METHODS, allow_headers=["*"], expose_headers=EXPOSED)

"""HTTP for views: POST /views, GET /views, GET /views/{id},
GET /views/{id}/results (JSON, CSV or TSV; a CONSTRUCT view's graph as
Turtle, N-Triples or JSON-LD; ``min_seq`` for read-your-writes; ETag and 304), GET /views/{id}/changes (JSON pages, or Server-Sent Events),
DELETE /views/{id}."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Header, Query, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.concurrency import run_in_threadpool

from server.api.deps import Config, Db, Who
from server.api.ldp.headers import storage_link
from server.api.params import Id
from server.api.views import changes, fanout, live, service
from server.api.views import formats as fmt
from server.api.views.schemas import ViewIn, ViewOut
from server.errors import BadRequest

router = APIRouter(tags=["views"])
JSON, CSV, TSV = "application/sparql-results+json", "text/csv", "text/tab-separated-values"


@router.post("/views", status_code=201, response_model=ViewOut)
def create_view(body: ViewIn, who: Who, db: Db, config: Config, response: Response) -> ViewOut:
    view = service.create(db, config, who, body)
    response.headers["Location"] = f"/views/{view}"
    return service.describe(db, who, view)


@router.get("/views", response_model=list[ViewOut])
def list_views(who: Who, db: Db) -> list[ViewOut]:
    return service.listing(db, who)


@router.get("/views/{view_id}", response_model=ViewOut)
def get_view(view_id: Id, who: Who, db: Db) -> ViewOut:
    return service.describe(db, who, view_id)


@router.get("/views/{view_id}/results",
            responses={200: {"content": {JSON: {}, CSV: {}, TSV: {}, fmt.TURTLE: {},
                                         fmt.NTRIPLES: {}, fmt.JSONLD: {}}},
                       304: {}, 409: {}, 503: {}})
async def view_results(view_id: Id, who: Who, db: Db, config: Config, request: Request,
                       min_seq: Annotated[int, Query(ge=0, le=2**62, description=
                                                     "wait until the view reflects this change")] = 0,
                       wait: Annotated[float, Query(ge=0, le=60, description=
                                                    "seconds to wait for min_seq")] = 10,
                       offset: Annotated[int, Query(ge=0, le=2**62, description=
                                                    "solutions to skip (paging)")] = 0,
                       limit: Annotated[int | None, Query(ge=1, le=2**62, description=
                                                          "solutions in this page (at most the "
                                                          "server's page size)")] = None,
                       if_none_match: Annotated[str | None, Header()] = None) -> Response:
    """The view's solutions (a CONSTRUCT view's triples), a page at a time:
    ``Link: rel="next"`` names the next page and ``Podviews-Total`` counts
    them all. Reading and rendering
    run in the thread pool, not on the event loop."""
    size = min(limit or config.page_rows, config.page_rows)
    found = await service.read_when_current(db, who, view_id, min_seq, wait,
                                            request.app.state.notices, offset, size)
    page = await run_in_threadpool(_page, found, request.headers.get("accept", ""), offset, size)
    links = [storage_link(config.public_base + "/")]  # its subscription services (note 90)
    if offset + size < page.total:
        following = request.url.include_query_params(offset=offset + size, limit=size)
        links.append(f'<{following.path}?{following.query}>; rel="next"')
    headers = {"ETag": f'"{page.etag}"', "Podviews-Seq": str(page.watermark), "Vary": "Accept",
               "Podviews-Total": str(page.total), "Link": ", ".join(links)}
    if if_none_match is not None and page.etag in if_none_match:
        return Response(status_code=304, headers=headers)
    return Response(page.body, media_type=page.media, headers=headers)


@dataclass(frozen=True)
class _Page:
    body: bytes
    media: str
    etag: str
    watermark: int
    total: int


def _page(found: service.Results, accept: str, offset: int, size: int) -> _Page:
    """The page read, in the media type asked for."""
    if found.lines is not None:
        return _graph_page(found, accept, offset, size)
    media = _negotiate(accept)
    rows = found.rows
    if found.answer is not None:
        body, media = json.dumps(fmt.ask_json(found.answer)), JSON
    elif media == CSV:
        body = fmt.select_csv(found.variables, rows)
    elif media == TSV:
        body = fmt.select_tsv(found.variables, rows)
    else:
        body = json.dumps(fmt.select_json(found.variables, rows))
    data = body.encode()
    return _Page(data, media, hashlib.sha1(data).hexdigest(), found.watermark, found.total)


def _graph_page(found: service.Results, accept: str, offset: int, size: int) -> _Page:
    """A page of a CONSTRUCT view's graph: its triples in N-Triples order,
    in the media type asked for (Turtle unless another is); the ETag is the
    page's triples' and the media type's, whatever the serialiser's order."""
    assert found.lines is not None
    lines = found.lines[offset:offset + size]
    media = _negotiate_graph(accept)
    body = fmt.graph_body(lines, media).encode()
    etag = hashlib.sha1("\n".join([media, *lines]).encode()).hexdigest()
    return _Page(body, media, etag, found.watermark, len(found.lines))


def _negotiate_graph(accept: str) -> str:
    for part in accept.split(","):
        name = part.split(";")[0].strip().lower()
        if name in fmt.GRAPH_MEDIA:
            return name
        if name == "application/json":
            return fmt.JSONLD
    return fmt.TURTLE


def _negotiate(accept: str) -> str:
    for part in accept.split(","):
        name = part.split(";")[0].strip().lower()
        if name in (JSON, "application/json"):
            return JSON
        if name in (CSV, TSV):
            return name
    return JSON


SSE = "text/event-stream"


@router.get("/views/{view_id}/changes",
            responses={200: {"content": {"application/json": {}, SSE: {}}}, 409: {}, 410: {},
                       503: {}})
async def view_changes(view_id: Id, who: Who, db: Db, config: Config, request: Request,
                       since: Annotated[int | None, Query(ge=0, le=2**62, description=
                                                          "the changes after this seq; without "
                                                          "it, the results first")] = None,
                       skip: Annotated[int, Query(ge=0, le=2**62, description=
                                                  "rows of the first delta already read "
                                                  "(paging inside a delta)")] = 0,
                       last_event_id: Annotated[str | None, Header()] = None) -> Response:
    """The view's changes after ``since`` in seq order, each ``{"seq",
    "added", "removed"}`` (SPARQL JSON bindings, repeated by their count),
    a page at a time (``next``, ``Link: rel="next"``); without ``since``,
    the view's results first (``snapshot``, at its ``seq``). With ``Accept:
    text/event-stream``: Server-Sent Events, one per seq (``id:`` the seq;
    ``Last-Event-ID`` resumes), heartbeats, an ``end`` event when the view
    fails, the position is no longer kept or the server shuts down. Access
    as for the results; 410 when ``since`` was compacted away."""
    streaming = SSE in request.headers.get("accept", "")
    if streaming and last_event_id is not None:
        if not last_event_id.strip().isdigit():
            raise BadRequest(f"Last-Event-ID {last_event_id!r} is not a seq")
        since, skip = int(last_event_id), 0
    if streaming:
        begun = await run_in_threadpool(live.read_encoded, db, who, view_id, since, skip,
                                        config.page_rows)
        state = request.app.state
        raw = request.scope.get(fanout.RAW_SEND)
        return StreamingResponse(
            live.stream(db, who, view_id, begun, config.page_rows, state.notices,
                        state.closing, state.shared_reads, config.sse_heartbeat,
                        None if raw is None or state.fanout is None
                        else state.fanout.writer(view_id, who, raw)),
            media_type=SSE, headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})
    first = await run_in_threadpool(changes.read, db, who, view_id, since, skip,
                                    config.page_rows)
    headers = {"Link": f'<{live.next_url(view_id, first)}>; rel="next"'}
    if first.at is not None:
        headers["Podviews-Seq"] = str(first.at)
    return JSONResponse(live.page_json(view_id, first), headers=headers)


@router.delete("/views/{view_id}", status_code=204)
def delete_view(view_id: Id, who: Who, db: Db) -> Response:
    service.drop(db, who, view_id)
    return Response(status_code=204)

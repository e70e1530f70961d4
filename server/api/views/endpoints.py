"""HTTP for views: POST /views, GET /views, GET /views/{id},
GET /views/{id}/results (JSON, CSV or TSV; ``min_seq`` for read-your-writes;
ETag and 304), DELETE /views/{id}."""

from __future__ import annotations

import hashlib
import json
from typing import Annotated

from fastapi import APIRouter, Header, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from server.api.deps import Db, Who
from server.api.params import Id
from server.api.views import formats as fmt
from server.api.views import service
from server.api.views.schemas import ViewIn, ViewOut

router = APIRouter(tags=["views"])
JSON, CSV, TSV = "application/sparql-results+json", "text/csv", "text/tab-separated-values"


@router.post("/views", status_code=201, response_model=ViewOut)
def create_view(body: ViewIn, who: Who, db: Db, response: Response) -> ViewOut:
    view = service.create(db, who, body)
    response.headers["Location"] = f"/views/{view}"
    return service.describe(db, who, view)


@router.get("/views", response_model=list[ViewOut])
def list_views(who: Who, db: Db) -> list[ViewOut]:
    return service.listing(db, who)


@router.get("/views/{view_id}", response_model=ViewOut)
def get_view(view_id: Id, who: Who, db: Db) -> ViewOut:
    return service.describe(db, who, view_id)


@router.get("/views/{view_id}/results",
            responses={200: {"content": {JSON: {}, CSV: {}, TSV: {}}}, 304: {}, 409: {}, 503: {}})
async def view_results(view_id: Id, who: Who, db: Db, request: Request,
                       min_seq: Annotated[int, Query(ge=0, le=2**62, description=
                                                     "wait until the view reflects this change")] = 0,
                       wait: Annotated[float, Query(ge=0, le=60, description=
                                                    "seconds to wait for min_seq")] = 10,
                       if_none_match: Annotated[str | None, Header()] = None) -> Response:
    await run_in_threadpool(service.wait_until_current, db, who, view_id, min_seq, wait,
                            request.app.state.notices)
    found = await run_in_threadpool(service.results, db, who, view_id)
    media = _negotiate(request.headers.get("accept", ""))
    if found.answer is not None:
        body = json.dumps(fmt.ask_json(found.answer))
        media = JSON
    elif media == CSV:
        body = fmt.select_csv(found.variables, found.rows)
    elif media == TSV:
        body = fmt.select_tsv(found.variables, found.rows)
    else:
        body = json.dumps(fmt.select_json(found.variables, found.rows))
    etag = hashlib.sha1(body.encode()).hexdigest()
    headers = {"ETag": f'"{etag}"', "Podviews-Seq": str(found.watermark), "Vary": "Accept"}
    if if_none_match is not None and etag in if_none_match:
        return Response(status_code=304, headers=headers)
    return Response(body, media_type=media, headers=headers)


def _negotiate(accept: str) -> str:
    for part in accept.split(","):
        name = part.split(";")[0].strip().lower()
        if name in (JSON, "application/json"):
            return JSON
        if name in (CSV, TSV):
            return name
    return JSON


@router.delete("/views/{view_id}", status_code=204)
def delete_view(view_id: Id, who: Who, db: Db) -> Response:
    service.drop(db, who, view_id)
    return Response(status_code=204)

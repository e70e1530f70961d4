"""HTTP for views: POST /views, GET /views/{id}, GET /views/{id}/results, DELETE."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from server.views import service
from server.views.schemas import ViewIn, ViewOut

router = APIRouter(tags=["views"])
RESULTS_JSON = "application/sparql-results+json"


@router.post("/views", status_code=201, response_model=ViewOut)
def create_view(body: ViewIn, request: Request, response: Response) -> ViewOut:
    view = service.create(request.app.state.hub, body)
    response.headers["Location"] = f"/views/{view.id}"
    return service.describe(view)


@router.get("/views/{view_id}", response_model=ViewOut)
def get_view(view_id: int, request: Request) -> ViewOut:
    return service.describe(service.get(request.app.state.hub, view_id))


@router.get("/views/{view_id}/results", responses={200: {"content": {RESULTS_JSON: {}}}})
def view_results(view_id: int, request: Request) -> Response:
    import json

    view = service.get(request.app.state.hub, view_id)
    body = json.dumps(service.results(view))
    return Response(body, media_type=RESULTS_JSON, headers={"Podviews-Seq": str(view.watermark)})


@router.delete("/views/{view_id}", status_code=204)
def delete_view(view_id: int, request: Request) -> Response:
    service.drop(request.app.state.hub, view_id)
    return Response(status_code=204)

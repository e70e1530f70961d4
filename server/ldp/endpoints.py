"""LDP on /pods/{pod}/…: GET, PUT and DELETE of RDF resources (preview)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from server.ldp import service

router = APIRouter(tags=["ldp"])


def _iri(request: Request, pod: str, path: str) -> str:
    return f"{request.app.state.settings.public_base}/pods/{pod}/{path}"


@router.get("/pods/{pod}/{path:path}")
def get_resource(pod: str, path: str, request: Request) -> Response:
    body = service.serialize(request.app.state.hub, _iri(request, pod, path))
    return Response(body, media_type="text/turtle")


@router.put("/pods/{pod}/{path:path}", status_code=201)
async def put_resource(pod: str, path: str, request: Request) -> Response:
    iri = _iri(request, pod, path)
    new = service.parse(await request.body(), request.headers.get("content-type", ""), iri)
    seq = service.put(request.app.state.hub, iri, new)
    return Response(status_code=201, headers={"Location": iri, "Podviews-Seq": str(seq)})


@router.delete("/pods/{pod}/{path:path}", status_code=204)
def delete_resource(pod: str, path: str, request: Request) -> Response:
    seq = service.delete(request.app.state.hub, _iri(request, pod, path))
    return Response(status_code=204, headers={"Podviews-Seq": str(seq)})

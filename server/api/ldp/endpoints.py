"""LDP on /pods/{pod}/…: GET, HEAD, PUT, PATCH (N3 Patch, SPARQL Update),
POST to containers, DELETE; ETags, conditional requests, and the
``Podviews-Seq`` of every write."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, TypeVar
from urllib.parse import quote, unquote_to_bytes

from fastapi import APIRouter, Depends, Header, Request, Response
from starlette.concurrency import run_in_threadpool

from server.api.auth import Principal, principal
from server.api.ldp import body, patch, rdf, service
from server.config import Settings
from server.errors import BadRequest, UnsupportedMediaType


def _valid_path(request: Request) -> None:
    """400 for a path whose percent-encoding is not UTF-8 (the router would
    read it with replacement characters: a lone surrogate becomes U+FFFD)."""
    try:
        unquote_to_bytes(request.scope["raw_path"]).decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadRequest(f"the path is not UTF-8 once percent-decoded: {e.reason}") from None


router = APIRouter(tags=["ldp"], dependencies=[Depends(_valid_path)])
Who = Annotated[Principal, Depends(principal)]
PATCH_TYPES = {"text/n3": patch.n3_patch, "application/sparql-update": patch.sparql_update}
RDF_BODY = {"content": {m: {"schema": {"type": "string"}} for m in rdf.FORMATS}, "required": True}


def _base(request: Request) -> str:
    """Where pods live, so their resources' IRIs: the upstream Solid server's
    root, or ours."""
    upstream = request.app.state.upstream
    if upstream is not None:
        return upstream.base.rstrip("/")  # type: ignore[no-any-return]
    return f"{request.app.state.settings.public_base}/pods"


def _headers(container: bool, etag: str | None = None) -> dict[str, str]:
    kinds = ['<http://www.w3.org/ns/ldp#Resource>; rel="type"']
    if container:
        kinds += ['<http://www.w3.org/ns/ldp#BasicContainer>; rel="type"']
    out = {"Link": ", ".join(kinds), "Vary": "Accept, Authorization",
           "Allow": service.CONTAINER_ALLOW if container else service.RESOURCE_ALLOW}
    if container:
        out["Accept-Post"] = ", ".join(rdf.FORMATS)
    else:
        out["Accept-Patch"] = ", ".join(PATCH_TYPES)
        out["Accept-Put"] = ", ".join(rdf.FORMATS)
    if etag:
        out["ETag"] = f'"{etag}"'
    return out


T = TypeVar("T")


def _once(send: Callable[[], T]) -> Callable[[], T]:
    """An upstream side effect made at most once: a retry of the local
    transaction (``storage.db.retrying``) reuses its answer instead of sending
    it again (a second POST upstream would create a second resource)."""
    return functools.cache(send)


def _forward(request: Request, method: str, pod: str, path: str, content: bytes = b"",
             content_type: str | None = None) -> Callable[[], object] | None:
    """The write, as sent upstream (when the pods live on a Solid server)."""
    upstream = request.app.state.upstream
    if upstream is None:
        return None
    headers = {"content-type": content_type} if content_type else {}
    return _once(lambda: upstream.send(method, pod, path, content, headers))


def _settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def _body(request: Request, who: Principal, pod: str, path: str, limit: int) -> bytes:
    """The body, read once the caller is known to reach the resource (a
    consumer's PUT to a pod it cannot write is refused before a byte is read)."""
    await run_in_threadpool(service.authorize, request.app.state.engine, who, pod, path)
    return await body.read(request, limit)


async def _parse(request: Request, content: bytes, content_type: str, iri: str) -> set[rdf.Triple]:
    """The body's triples, parsed off the event loop."""
    return await run_in_threadpool(rdf.parse, content, content_type, iri,
                                   _settings(request).rdf_limits())


def _written(request: Request, pod: str, w: service.Written) -> Response:
    request.app.state.metrics.batch.observe(w.triples)
    headers = {**_headers(False, w.etag), "Podviews-Seq": str(w.seq)}
    if w.created:
        headers["Location"] = (f"{request.app.state.settings.public_base}/pods/{quote(pod)}/"
                               f"{quote(w.path)}")
    return Response(status_code=201 if w.created else 204, headers=headers)


@router.get("/pods/{pod}/{path:path}",
            responses={200: {"content": {m: {} for m in rdf.FORMATS}}, 304: {}})
def get_resource(pod: str, path: str, request: Request, who: Who,
                 if_none_match: Annotated[str | None, Header()] = None) -> Response:
    with request.app.state.engine.connect() as c:
        found = service.read(c, service.target(c, who, _base(request), pod, path))
    media = rdf.negotiate(request.headers.get("accept", ""))
    etag = f"{found.etag}-{media.split('/')[1]}"
    headers = _headers(found.container, etag)
    if if_none_match is not None and service.matches(etag, if_none_match):
        return Response(status_code=304, headers=headers)
    content = rdf.serialize(found.triples, media, service.iri(_base(request), pod, path))
    return Response(b"" if request.method == "HEAD" else content, media_type=media,
                    headers=headers)


router.add_api_route("/pods/{pod}/{path:path}", get_resource, methods=["HEAD"],
                     operation_id="head_resource", responses={304: {}})


@router.put("/pods/{pod}/{path:path}", status_code=201,
            openapi_extra={"requestBody": RDF_BODY}, responses={204: {}, 412: {}})
async def put_resource(pod: str, path: str, request: Request, who: Who,
                       content_type: Annotated[str, Header()] = "",
                       if_match: Annotated[str | None, Header()] = None,
                       if_none_match: Annotated[str | None, Header()] = None) -> Response:
    """Create or replace; the change is the diff against the current resource."""
    content = await _body(request, who, pod, path, _settings(request).max_body_bytes)
    new = await _parse(request, content, content_type, service.iri(_base(request), pod, path))
    return _written(request, pod, await run_in_threadpool(
        service.write, request.app.state.engine, who, _base(request), pod, path,
        lambda _: new, rdf.media_type(content_type), if_match, if_none_match,
        _forward(request, "PUT", pod, path, content, content_type)))


@router.patch("/pods/{pod}/{path:path}", status_code=204,
              openapi_extra={"requestBody": {"content": {m: {"schema": {"type": "string"}}
                                                         for m in PATCH_TYPES}, "required": True}},
              responses={201: {}, 409: {}, 412: {}})
async def patch_resource(pod: str, path: str, request: Request, who: Who,
                         content_type: Annotated[str, Header()] = "",
                         if_match: Annotated[str | None, Header()] = None,
                         if_none_match: Annotated[str | None, Header()] = None) -> Response:
    """N3 Patch (``text/n3``) or SPARQL Update (``application/sparql-update``);
    a patch to a missing resource creates it (where-clauses then match the
    empty graph)."""
    apply = PATCH_TYPES.get(rdf.media_type(content_type))
    if apply is None:
        raise UnsupportedMediaType(f"PATCH takes {' or '.join(PATCH_TYPES)}, not "
                                   f"{content_type or 'a body without a type'}")
    settings = _settings(request)
    try:
        text = (await _body(request, who, pod, path, settings.max_patch_bytes)).decode("utf-8")
    except UnicodeDecodeError:
        raise patch.BadPatch("the patch is not UTF-8") from None
    change = await run_in_threadpool(  # a bad patch is 400 before any lock
        apply, text, service.iri(_base(request), pod, path), settings.max_patch_steps)
    return _written(request, pod, await run_in_threadpool(
        service.write, request.app.state.engine, who, _base(request), pod, path,
        change, "text/turtle", if_match, if_none_match,
        _forward(request, "PATCH", pod, path, text.encode(), content_type)))


@router.post("/pods/{pod}/{path:path}", status_code=201, openapi_extra={"requestBody": RDF_BODY})
async def post_member(pod: str, path: str, request: Request, who: Who,
                      content_type: Annotated[str, Header()] = "",
                      slug: Annotated[str | None, Header()] = None) -> Response:
    """A new member of the container, named after ``Slug``."""
    content = await _body(request, who, pod, path, _settings(request).max_body_bytes)
    await _parse(request, content, content_type, service.iri(_base(request), pod, path))
    upstream = request.app.state.upstream
    forward = None
    if upstream is not None:
        @_once
        def forward() -> str:
            r = upstream.send("POST", pod, path, content, {"content-type": content_type,
                                                           **({"slug": slug} if slug else {})})
            return upstream.local_path(pod, r.headers["location"])  # type: ignore[no-any-return]
    limits = _settings(request).rdf_limits()
    return _written(request, pod, await run_in_threadpool(
        service.create_member, request.app.state.engine, who, _base(request), pod, path, slug,
        lambda iri: rdf.parse(content, content_type, iri, limits), rdf.media_type(content_type),
        forward))


@router.delete("/pods/{pod}/{path:path}", status_code=204, responses={409: {}, 412: {}})
def delete_resource(pod: str, path: str, request: Request, who: Who,
                    if_match: Annotated[str | None, Header()] = None) -> Response:
    seq = service.delete(request.app.state.engine, who, _base(request), pod, path, if_match,
                         _forward(request, "DELETE", pod, path))
    return Response(status_code=204, headers={"Podviews-Seq": str(seq)})

"""The Solid Protocol on /pods/{pod}/…: GET, HEAD, OPTIONS, PUT, PATCH (N3
Patch, SPARQL Update), POST to containers (documents, non-RDF resources,
containers), DELETE; ETags, conditional requests, the protocol's headers
(``headers``), the storage description, and the ``Podviews-Seq`` of every
write. Paths are kept percent-encoded, as a client addresses them."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from datetime import UTC
from email.utils import format_datetime
from typing import Annotated, TypeVar
from urllib.parse import quote, unquote, unquote_to_bytes

from fastapi import APIRouter, Depends, Header, Request, Response
from starlette.concurrency import run_in_threadpool

from server.api.auth import Principal, caller
from server.api.ldp import access, acl_documents, body, headers, patch, rdf, resource, service
from server.api.ldp.headers import BINARY, CONTAINER, DOCUMENT, Shape
from server.config import Settings
from server.errors import BadRequest, PreconditionFailed, ServiceError, UnsupportedMediaType
from storage import db
from storage.terms import TermTable


def _valid_path(request: Request) -> None:
    """400 for a path whose percent-encoding is not UTF-8 (the router would
    read it with replacement characters: a lone surrogate becomes U+FFFD)."""
    try:
        unquote_to_bytes(request.scope["raw_path"]).decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadRequest(f"the path is not UTF-8 once percent-decoded: {e.reason}") from None


router = APIRouter(tags=["ldp"], dependencies=[Depends(_valid_path)])
Who = Annotated[Principal, Depends(caller)]
PATCH_TYPES = {"text/n3": patch.n3_patch, "application/sparql-update": patch.sparql_update}
ANY_BODY = {"content": {"*/*": {"schema": {"type": "string", "format": "binary"}}},
            "required": True}
_SEGMENT_SAFE = ":@!$&'()*+,;=~"


def _address(request: Request) -> tuple[str, str]:
    """(pod, path) as the client sent them: the path percent-encoded in one
    canonical way (each segment decoded and encoded again), so that
    ``with%20space`` and ``with space`` are one resource, named as its IRI."""
    raw = request.scope.get("raw_path") or request.url.path.encode()
    _, _, rest = raw.decode("latin-1").partition("/pods/")
    pod, _, path = rest.partition("/")
    return unquote(pod), "/".join(quote(unquote(s), safe=_SEGMENT_SAFE) for s in path.split("/"))


Where = Annotated[tuple[str, str], Depends(_address)]


def _base(request: Request) -> str:
    """Where pods live, so their resources' IRIs: the upstream Solid server's
    root, or ours."""
    return str(request.app.state.settings.pods_base)


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
    sent = {"content-type": content_type} if content_type else {}
    return _once(lambda: upstream.send(method, pod, path, content, sent))


def _settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def _body(request: Request, who: Principal, pod: str, path: str, limit: int,
                mode: str) -> bytes:
    """The body, read once the caller is known to reach the resource (a
    consumer's PUT to a pod it cannot write is refused before a byte is read)."""
    await run_in_threadpool(resource.authorize, request.app.state.engine, who, pod, path, mode)
    return await body.read(request, limit)


async def _parse(request: Request, content: bytes, content_type: str, iri: str) -> TermTable:
    """The body's triples, parsed off the event loop, as the table of terms
    writes intern in bulk."""
    return await run_in_threadpool(rdf.parse_table, content, content_type, iri,
                                   _settings(request).rdf_limits())


async def _written(request: Request, who: Principal, pod: str, w: service.Written) -> Response:
    request.app.state.metrics.batch.observe(w.triples)
    out = {"ETag": f'"{w.etag}"', "Podviews-Seq": str(w.seq),
           "Link": headers.storage_link(resource.iri(_base(request), pod, "")),
           "WAC-Allow": access.wac_allow(who, w.pod, w.path)}  # the policy the write kept
    if w.created:
        out["Location"] = resource.iri(f"{_settings(request).public_base}/pods", pod, w.path)
    return Response(status_code=201 if w.created else 204, headers=out)


@router.api_route("/pods/{pod}/.well-known/solid", methods=["GET", "HEAD"],
                  responses={200: {"content": {"text/turtle": {}}}})
def storage_description(pod: str, request: Request, who: Who) -> Response:
    """The storage description of the pod, to whoever may read the pod's
    root (CSS serves its publicly; here a pod's existence is not told to
    those who may not read it: design note 19)."""
    with db.reading(request.app.state.engine) as c:
        root = resource.target(c, who, _base(request), pod, "", access.READ).iri
    text = (f"<{root}.well-known/solid> a <{headers.SOLID}StorageDescription> .\n"
            f"<{root}> a <{headers.PIM_STORAGE}> .\n")
    return Response(text, media_type="text/turtle",
                    headers={"Link": headers.storage_link(root), "Vary": "Accept"})


@router.get("/pods/{pod}/{path:path}",
            responses={200: {"content": {"*/*": {}}}, 304: {}, 404: {}})
def get_resource(where: Where, request: Request, who: Who,
                 if_match: Annotated[str | None, Header()] = None,
                 if_none_match: Annotated[str | None, Header()] = None) -> Response:
    pod, path = where
    if access.acl_subject(path) is not None:
        return _acl_response(request, *acl_documents.get(
            request.app.state.engine, who, _base(request), pod, path,
            request.headers.get("accept", ""), if_none_match))
    accept = request.headers.get("accept", "")

    def representation(found: resource.Found) -> tuple[str, str]:  # (media type, ETag)
        binary = found.shape.kind == BINARY
        media = found.content_type if binary else rdf.negotiate(accept)
        return media, resource.tag(found.state, None if binary else media)

    def unchanged(found: resource.Found) -> bool:  # 304: its content is not read
        return if_none_match is not None and resource.names(representation(found)[1],
                                                            if_none_match)

    def holds(found: resource.Found) -> bool:  # else 412, its content not read either
        return if_match is None or resource.matches(found.state, if_match)

    with db.reading(request.app.state.engine) as c:
        t = resource.target(c, who, _base(request), pod, path, access.READ)
        found = resource.read(c, t, lambda f: holds(f) and not unchanged(f))
        wac = access.wac_allow(who, t.pod, t.path)
    if not holds(found):
        raise PreconditionFailed("If-Match does not hold: the resource has changed")
    media, etag = representation(found)
    out = {**headers.for_resource(found.shape, t.iri, t.root, wac, t.pod.owner, etag),
           "Last-Modified": format_datetime(found.modified.astimezone(UTC), usegmt=True)}
    if unchanged(found):
        return Response(status_code=304, headers=out)
    content = found.body if found.body is not None else \
        rdf.write(found.triples or TermTable([], []), media)
    # a file's type as it was stored (Starlette would add a charset to text/*); RDF's ours
    out["Content-Type"] = media if found.body is not None else f"{media}; charset=utf-8"
    if request.method == "HEAD":  # the headers of the GET, its length included
        return Response(b"", headers={**out, "Content-Length": str(len(content))})
    return Response(content, headers=out)


def _acl_response(request: Request, status: int, content: bytes, media: str,
                  out: dict[str, str]) -> Response:
    if request.method == "HEAD" or status == 304:
        return Response(b"", status_code=status, media_type=media,
                        headers={**out, "Content-Length": str(len(content))})
    return Response(content, media_type=media, headers=out)


async def _acl_write(request: Request, who: Principal, pod: str, path: str,
                     change: Callable[[set[rdf.Triple]], set[rdf.Triple]],
                     if_match: str | None, if_none_match: str | None) -> Response:
    """A PUT or PATCH of an ACL document (``acl_documents``)."""
    created, etag = await run_in_threadpool(
        acl_documents.write, request.app.state.engine, who, _base(request), pod, path, change,
        if_match, if_none_match)
    out = {"ETag": f'"{etag}"', "Link": headers.storage_link(resource.iri(_base(request), pod, "")),
           **await run_in_threadpool(access.wac_allow_after, request.app.state.engine, who,
                                     pod, path)}
    if created:
        out["Location"] = resource.iri(f"{_settings(request).public_base}/pods", pod, path)
    return Response(status_code=201 if created else 204, headers=out)


router.add_api_route("/pods/{pod}/{path:path}", get_resource, methods=["HEAD"],
                     operation_id="head_resource", responses={304: {}, 404: {}})


@router.options("/pods/{pod}/{path:path}", status_code=204)
def options_resource(where: Where, request: Request) -> Response:
    """The methods and types the resource takes (LDP §4.2.8: Allow on
    OPTIONS): the resource's own to a caller who may read it; else those of
    its kind of path, revealing nothing."""
    pod, path = where
    try:
        who = caller(request)
        with db.reading(request.app.state.engine) as c:
            t = resource.target(c, who, _base(request), pod, path, access.READ)
            found = resource.read(c, t)
            out = headers.for_resource(found.shape, t.iri, t.root,
                                       access.wac_allow(who, t.pod, t.path), t.pod.owner)
    except ServiceError as e:
        out = dict(e.headers) if "Allow" in e.headers else headers.allow(
            Shape(CONTAINER if path == "" or path.endswith("/") else DOCUMENT))
        out.pop("WWW-Authenticate", None)
    return Response(status_code=204, headers=out)


def _content_type(value: str | None) -> str:
    """Solid Protocol §5.2: a body without a Content-Type is 400."""
    if not value or not value.strip():
        raise BadRequest("the request has a body but no Content-Type")
    return value


MAX_CONTENT_TYPE = 100  # resources.content_type


def _file_type(content_type: str) -> str:
    """A file's Content-Type as it is stored and served again (parameters
    such as charset kept)."""
    value = " ".join(content_type.split())
    if len(value) > MAX_CONTENT_TYPE:
        raise BadRequest(f"a Content-Type longer than {MAX_CONTENT_TYPE} characters")
    return value


@router.put("/pods/{pod}/{path:path}", status_code=201,
            openapi_extra={"requestBody": ANY_BODY}, responses={204: {}, 409: {}, 412: {}})
async def put_resource(where: Where, request: Request, who: Who,
                       content_type: Annotated[str | None, Header()] = None,
                       if_match: Annotated[str | None, Header()] = None,
                       if_none_match: Annotated[str | None, Header()] = None) -> Response:
    """Create or replace: RDF (its triples; the change is the diff against
    the current resource), a container (a path ending in '/'), or bytes of
    any other media type."""
    pod, path = where
    ctype = _content_type(content_type)
    content = await _body(request, who, pod, path, _settings(request).max_body_bytes,
                          access.WRITE)
    if access.acl_subject(path) is not None:
        iri = resource.iri(_base(request), pod, path)
        new = await run_in_threadpool(acl_documents.parse, content, ctype, iri,
                                      _settings(request).rdf_limits())
        return await _acl_write(request, who, pod, path, lambda _: new, if_match, if_none_match)
    forward = _forward(request, "PUT", pod, path, content, ctype)
    engine, base = request.app.state.engine, _base(request)
    if not rdf.is_rdf(ctype):
        return await _written(request, who, pod, await run_in_threadpool(
            service.put_bytes, engine, who, base, pod, path, content, _file_type(ctype),
            if_match, if_none_match, forward))
    table = await _parse(request, content, ctype, resource.iri(base, pod, path))
    return await _written(request, who, pod, await run_in_threadpool(
        service.write, engine, who, base, pod, path, table, "PUT", if_match,
        if_none_match, forward))


@router.patch("/pods/{pod}/{path:path}", status_code=204,
              openapi_extra={"requestBody": {"content": {m: {"schema": {"type": "string"}}
                                                         for m in PATCH_TYPES}, "required": True}},
              responses={201: {}, 405: {}, 409: {}, 412: {}})
async def patch_resource(where: Where, request: Request, who: Who,
                         content_type: Annotated[str, Header()] = "",
                         if_match: Annotated[str | None, Header()] = None,
                         if_none_match: Annotated[str | None, Header()] = None) -> Response:
    """N3 Patch (``text/n3``) or SPARQL Update (``application/sparql-update``);
    a patch to a missing document creates it (where-clauses then match the
    empty graph)."""
    pod, path = where
    apply = PATCH_TYPES.get(rdf.media_type(content_type))
    if apply is None:
        raise UnsupportedMediaType(f"PATCH takes {' or '.join(PATCH_TYPES)}, not "
                                   f"{content_type or 'a body without a type'}",
                                   {"Accept-Patch": ", ".join(PATCH_TYPES)})
    settings = _settings(request)
    try:
        text = (await _body(request, who, pod, path, settings.max_patch_bytes,
                            access.APPEND)).decode("utf-8")  # Write holds Append too
    except UnicodeDecodeError:
        raise patch.BadPatch("the patch is not UTF-8") from None
    base = _base(request)
    change = await run_in_threadpool(  # a bad patch is 400 before any lock
        apply, text, resource.iri(base, pod, path), settings.patch_bounds())
    if access.acl_subject(path) is not None:
        return await _acl_write(request, who, pod, path, change, if_match, if_none_match)
    return await _written(request, who, pod, await run_in_threadpool(
        service.write, request.app.state.engine, who, base, pod, path, change, "PATCH",
        if_match, if_none_match,
        _forward(request, "PATCH", pod, path, text.encode(), content_type)))


_TYPE_LINK = re.compile(r'<([^>]*)>\s*;\s*rel\s*=\s*"?type"?', re.IGNORECASE)
_CONTAINER_TYPES = {f"{headers.LDP}BasicContainer", f"{headers.LDP}Container"}


@router.post("/pods/{pod}/{path:path}", status_code=201, openapi_extra={"requestBody": ANY_BODY},
             responses={404: {}, 405: {}})
async def post_member(where: Where, request: Request, who: Who,
                      content_type: Annotated[str | None, Header()] = None,
                      slug: Annotated[str | None, Header()] = None,
                      link: Annotated[str | None, Header()] = None,
                      if_match: Annotated[str | None, Header()] = None,
                      if_none_match: Annotated[str | None, Header()] = None) -> Response:
    """A new member of the container, named after ``Slug``: a container when
    ``Link`` gives it the type ``ldp:BasicContainer``, else an RDF document
    or a non-RDF resource by its Content-Type."""
    pod, path = where
    container = any(m in _CONTAINER_TYPES for m in _TYPE_LINK.findall(link or ""))
    content = await _body(request, who, pod, path, _settings(request).max_body_bytes,
                          access.APPEND)
    ctype = content_type or ("text/turtle" if container and not content else
                             _content_type(content_type))
    kind = CONTAINER if container else DOCUMENT if rdf.is_rdf(ctype) else BINARY
    if container and not rdf.is_rdf(ctype):
        raise UnsupportedMediaType(f"a container's body is RDF, not {ctype}")
    base = _base(request)
    if kind != BINARY:  # a bad body is 400 before any lock
        await _parse(request, content, ctype, resource.iri(base, pod, path))
    upstream = request.app.state.upstream
    forward = None
    if upstream is not None:
        @_once
        def forward() -> str:
            sent = {"content-type": ctype, **({"slug": slug} if slug else {}),
                    **({"link": link} if link else {})}
            r = upstream.send("POST", pod, path, content, sent)
            return upstream.local_path(pod, r.headers["location"])  # type: ignore[no-any-return]
    limits = _settings(request).rdf_limits()
    return await _written(request, who, pod, await run_in_threadpool(
        service.create_member, request.app.state.engine, who, base, pod, path, slug, kind,
        lambda iri: rdf.parse_table(content, ctype, iri, limits), content,
        _file_type(ctype) if kind == BINARY else "text/turtle", if_match, if_none_match,
        forward))


@router.delete("/pods/{pod}/{path:path}", status_code=204,
               responses={404: {}, 405: {}, 409: {}, 412: {}})
def delete_resource(where: Where, request: Request, who: Who,
                    if_match: Annotated[str | None, Header()] = None,
                    if_none_match: Annotated[str | None, Header()] = None) -> Response:
    pod, path = where
    engine = request.app.state.engine
    link = {"Link": headers.storage_link(resource.iri(_base(request), pod, ""))}
    if access.acl_subject(path) is not None:
        acl_documents.delete(engine, who, _base(request), pod, path, if_match)
        return Response(status_code=204, headers={
            **link, **access.wac_allow_after(engine, who, pod, path)})
    seq = service.delete(engine, who, _base(request), pod, path, if_match, if_none_match,
                         _forward(request, "DELETE", pod, path))
    return Response(status_code=204, headers={
        "Podviews-Seq": str(seq), **link, **access.wac_allow_after(engine, who, pod, path)})

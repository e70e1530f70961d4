"""What a path of a pod names and how it reads: the addressed resource
(``target``, asked of ``access.authorize``), its kind — a container (a path
'' or ending in '/', listing its direct members with ``ldp:contains``, which
the server alone states), an RDF document, a file (bytes and a media type)
or a file's description (``<file>.meta``) — its triples or bytes, and the
ETags of its state and representations."""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import quote, unquote

from rdflib import RDF, Namespace, URIRef
from sqlalchemy import Connection, Engine

from server.api.auth import Principal
from server.api.ldp import access, headers
from server.api.ldp.headers import BINARY, CONTAINER, DESCRIPTION, DOCUMENT, Shape
from server.api.ldp.rdf import Triple
from server.errors import BadRequest, NotFound
from storage import db, pods
from storage.terms import TermTable

LDP = Namespace("http://www.w3.org/ns/ldp#")
PIM = Namespace("http://www.w3.org/ns/pim/space#")
SOLID = Namespace("http://www.w3.org/ns/solid/terms#")


@dataclass(frozen=True)
class Target:
    pod: access.Pod
    path: str  # below the pod's root; '' is the root container
    iri: str  # the resource's IRI: {base}/{pod}/{path}
    root: str  # the pod's root container's IRI (its storage)

    @property
    def is_container(self) -> bool:
        return self.path == "" or self.path.endswith("/")

    @property
    def subject(self) -> str | None:
        """The path of the resource this one describes, for ``….meta``."""
        if self.path.endswith(headers.DESCRIPTION_SUFFIX):
            return self.path.removesuffix(headers.DESCRIPTION_SUFFIX)
        return None


@dataclass(frozen=True)
class Found:
    shape: Shape
    state: str  # the ETag of the resource's state; representations add their type
    content_type: str
    modified: datetime
    triples: TermTable | None = None  # RDF: the triples, as dictionary fields
    body: bytes | None = None  # non-RDF: the bytes


MAX_PATH = 1024
_NOT_IN_PATHS = re.compile(r"[\x00-\x1f\x7f\ud800-\udfff]")  # controls, lone surrogates


def target(conn: Connection, who: Principal, base: str, pod_name: str, path: str,
           mode: str = access.READ) -> Target:
    """The addressed resource, if the caller may ``mode`` it (401 or 404
    otherwise, as ``access.authorize`` decides). ``base`` is where pods live:
    our /pods, or the upstream Solid server."""
    _check_path(pod_name + "/" + unquote(path))
    if "%2f" in path.lower():
        raise BadRequest("a resource name may not hold an encoded '/' (%2F)")
    pod = access.authorize(conn, who, pod_name, path, mode)
    if any(unquote(seg) in (".", "..") for seg in path.split("/")) or "//" in "/" + path:
        raise NotFound(f"no resource {path}")
    return Target(pod, path, iri(base, pod_name, path), iri(base, pod_name, ""))


def _check_path(path: str) -> None:
    """400 for a path no resource can have (before any lookup)."""
    if len(path) > MAX_PATH:
        raise BadRequest(f"the path is longer than {MAX_PATH} characters")
    bad = _NOT_IN_PATHS.search(path)
    if bad:
        raise BadRequest(f"the path holds the character U+{ord(bad.group()):04X}, "
                         "which no resource name may hold")


def iri(base: str, pod_name: str, path: str) -> str:
    """The resource's IRI. Paths are kept percent-encoded (as the endpoints
    receive them), so they are IRI paths already."""
    return f"{base}/{quote(pod_name)}/{path}"


def authorize(engine: Engine, who: Principal, pod_name: str, path: str, mode: str) -> None:
    """The caller may ``mode`` this path (401/404 otherwise), asked before the
    request's body is read. Outside a transaction (``db.looking_up``): the
    write asks again in its own, so this answer need not be one snapshot's
    (design note 193)."""
    with db.looking_up(engine) as c:
        target(c, who, "", pod_name, path, mode)


def missing(t: Target) -> NotFound:
    """404 for a resource that does not exist, with the headers that say how
    to create it."""
    return NotFound(f"no resource {t.path}", headers.for_missing(
        CONTAINER if t.is_container else DOCUMENT, t.root))


def read(conn: Connection, t: Target, wanted: Callable[[Found], bool] = lambda _: True) -> Found:
    """The resource at ``t``: its shape, state and content — unless
    ``wanted``, given what it is without its content, says the content is
    not needed (a conditional GET answered 304 reads no triple)."""
    subject = described(conn, t)
    if subject is not None:
        return _content(conn, Found(Shape(DESCRIPTION), pods.description_etag(conn, subject.id),
                                    "text/turtle", subject.updated_at), subject.id, wanted)
    row = pods.resource(conn, t.pod.id, t.path)
    if row is None or t.subject is not None and not t.is_container:
        raise missing(t)
    if t.is_container:
        members = pods.members(conn, t.pod.id, t.path)
        found = _content(conn, Found(Shape(CONTAINER, root=t.path == "", empty=not members),
                                     container_state(row.etag, members), "text/turtle",
                                     row.updated_at), row.id, wanted)
        return found if found.triples is None else dataclasses.replace(
            found, triples=found.triples.union(TermTable.of(_managed(t, members))))
    if row.binary:
        found = Found(Shape(BINARY), row.etag, row.content_type, row.updated_at)
        return dataclasses.replace(found, body=pods.resource_body(conn, row.id)) \
            if wanted(found) else found
    return _content(conn, Found(Shape(DOCUMENT), row.etag, row.content_type, row.updated_at),
                    row.id, wanted)


def _content(conn: Connection, found: Found, rid: int, wanted: Callable[[Found], bool]) -> Found:
    """``found`` with the triples of the resource ``rid`` when ``wanted``."""
    return dataclasses.replace(found, triples=pods.resource_table(conn, rid)) \
        if wanted(found) else found


def described(conn: Connection, t: Target):  # type: ignore[no-untyped-def]
    """The non-RDF resource that ``t`` (``….meta``) describes, or None."""
    if t.subject is None or t.is_container:
        return None
    row = pods.resource(conn, t.pod.id, t.subject)
    return row if row is not None and row.binary else None


def _managed(t: Target, members: list[str]) -> set[Triple]:
    """The server-managed triples of a container: its types, its members
    and, for a pod's root, that it is a storage and whose."""
    me = URIRef(t.iri)
    out: set[Triple] = {(me, RDF.type, LDP.Resource), (me, RDF.type, LDP.Container),
                        (me, RDF.type, LDP.BasicContainer)}
    out |= {(me, LDP.contains, URIRef(t.root + m)) for m in members}
    if t.path == "":
        out |= {(me, RDF.type, PIM.Storage), (me, SOLID.owner, URIRef(t.pod.owner))}
    return out


def container_state(own: str, members: list[str]) -> str:
    return hashlib.sha1("\n".join([own, *members]).encode()).hexdigest()


def tag(state: str, media: str | None) -> str:
    """The ETag of a representation: the state's, and for RDF the media type
    it is written in (``{state}-turtle``); preconditions compare states, so
    any representation's ETag names the state it was read from."""
    return state if media is None else f"{state}-{media.split('/')[1]}"


def matches(state: str | None, header: str) -> bool:
    """Whether an If-Match / If-None-Match list of a write names ``state``
    ('*': any), in any representation."""
    if state is None:
        return False
    tags = _tags(header)
    return "*" in tags or any(x.split("-", 1)[0] == state for x in tags)


def names(etag: str, header: str) -> bool:
    """Whether a GET's If-None-Match names this representation's ETag (a
    client holding the JSON-LD has not got the Turtle)."""
    tags = _tags(header)
    return "*" in tags or etag in tags


def _tags(header: str) -> list[str]:
    return [x.strip().removeprefix("W/").strip('"') for x in header.split(",")]


def state(c: Connection, t: Target, row) -> str | None:  # type: ignore[no-untyped-def]
    """The current state's ETag, as GET names it (None when absent)."""
    if row is None:
        return None
    if t.is_container:
        return container_state(row.etag, pods.members(c, t.pod.id, t.path))
    return str(row.etag)

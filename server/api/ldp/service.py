"""LDP resources over the store. A resource path ending in '/' (or empty) is
a container: containers are implicit — the pod's root, and every prefix of a
resource's path — and list their direct members with ``ldp:contains``.
Every write is one transaction: the resource, its quads, the pod's default
graph, one change-log entry and the maintenance jobs of the views reading the
pod (``storage.changes.record_change``, called by every write of ``storage.pods``)."""

from __future__ import annotations

import functools
import hashlib
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote

from rdflib import RDF, Namespace, URIRef
from sqlalchemy import Connection, Engine

from server.api.auth import Principal
from server.api.ldp.patch import Change, DataChange
from server.api.ldp.rdf import Triple
from server.errors import BadRequest, Conflict, MethodNotAllowed, NotFound, PreconditionFailed
from storage import pods
from storage.db import retrying

LDP = Namespace("http://www.w3.org/ns/ldp#")


@dataclass(frozen=True)
class Target:
    pod: int
    name: str
    path: str  # below the pod's root; '' is the root container
    iri: str  # the resource's IRI: {base}/{pod}/{path}

    @property
    def is_container(self) -> bool:
        return self.path == "" or self.path.endswith("/")


@dataclass(frozen=True)
class Read:
    triples: set[Triple]
    etag: str
    container: bool


MAX_PATH = 1024
_NOT_IN_PATHS = re.compile(r"[\x00-\x1f\x7f\ud800-\udfff]")  # controls, lone surrogates


def target(conn: Connection, who: Principal, base: str, pod_name: str, path: str) -> Target:
    """The addressed resource, if the caller may touch the pod (404 otherwise:
    whether the pod exists is not the caller's business). ``base`` is where
    pods live: our /pods, or the upstream Solid server."""
    _check_path(pod_name + "/" + path)
    pod = pods.pod_row(conn, pod_name)
    if pod is None or not (who.is_admin() or pod.owner_id == who.agent):
        raise NotFound(f"no pod {pod_name}")
    if any(seg in (".", "..") for seg in path.split("/")) or "//" in "/" + path:
        raise NotFound(f"no resource {path}")
    return Target(int(pod.id), pod_name, path, iri(base, pod_name, path))


def _check_path(path: str) -> None:
    """400 for a path no resource can have (before any lookup)."""
    if len(path) > MAX_PATH:
        raise BadRequest(f"the path is longer than {MAX_PATH} characters")
    bad = _NOT_IN_PATHS.search(path)
    if bad:
        raise BadRequest(f"the path holds the character U+{ord(bad.group()):04X}, "
                         "which no resource name may hold")


def iri(base: str, pod_name: str, path: str) -> str:
    """The resource's IRI: its path percent-encoded where IRIs forbid a
    character (a space, a quote, a bracket…), as a client would address it."""
    return f"{base}/{quote(pod_name)}/{quote(path, safe=_IRI_SAFE)}"


_IRI_SAFE = "/:@!$&'()*+,;=~"


def authorize(engine: Engine, who: Principal, pod_name: str, path: str) -> None:
    """The caller may write at this path (404 otherwise), asked before the
    request's body is read."""
    with engine.connect() as c:
        target(c, who, "", pod_name, path)


def read(conn: Connection, t: Target) -> Read:
    if t.is_container:
        members = _members(conn, t)
        if t.path and not members:
            raise NotFound(f"no container {t.path}")
        me = URIRef(t.iri)
        triples: set[Triple] = {(me, RDF.type, LDP.Container), (me, RDF.type, LDP.BasicContainer)}
        triples |= {(me, LDP.contains, URIRef(t.iri + m)) for m in members}
        return Read(triples, _etag("\n".join(sorted(members)) + t.path), True)
    row = pods.resource(conn, t.pod, t.path)
    if row is None:
        raise NotFound(f"no resource {t.path}")
    return Read(pods.resource_triples(conn, row.id), row.etag, False)


def _members(conn: Connection, t: Target) -> list[str]:
    """Direct members: documents just below, and the next level of containers."""
    out = set()
    for path in pods.paths_under(conn, t.pod, t.path):
        rest = path[len(t.path):]
        head, slash, _ = rest.partition("/")
        out.add(head + slash)
    return sorted(out)


def _etag(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


@dataclass(frozen=True)
class Written:
    seq: int
    etag: str
    created: bool
    path: str
    triples: int  # triples the write changed in the resource


@retrying
def write(engine: Engine, who: Principal, base: str, pod_name: str, path: str,
          change: Change, content_type: str, if_match: str | None, if_none_match: str | None,
          forward: Callable[[], object] | None = None) -> Written:
    """Apply ``change`` to the resource's triples (creating it when absent),
    under If-Match / If-None-Match; ``forward`` sends the write upstream
    once it is known to apply here, before it commits."""
    with engine.begin() as c:
        t = target(c, who, base, pod_name, path)
        if t.is_container:
            raise MethodNotAllowed("containers are made by their members; write a resource "
                                   "below it, or POST to it", {"Allow": CONTAINER_ALLOW})
        row = pods.resource(c, t.pod, t.path, lock=True)
        _preconditions(row.etag if row else None, if_match, if_none_match)
        if isinstance(change, DataChange):  # the resource itself is not read
            store = functools.partial(pods.patch_resource, c, t.pod, t.path, change.inserts,
                                      change.deletes, content_type)
        else:
            new = change(pods.resource_triples(c, row.id) if row else set())
            store = functools.partial(pods.put_resource, c, t.pod, t.path, new, content_type)
        if forward is not None:  # once the write is known to apply here
            forward()
        seq = store()
        after = pods.written(c, seq)
    return Written(seq, after.etag, row is None, t.path, after.changed)


@retrying
def create_member(engine: Engine, who: Principal, base: str, pod_name: str, container: str,
                  slug: str | None, parse: Callable[[str], set[Triple]],
                  content_type: str, forward: Callable[[], str] | None = None) -> Written:
    """POST to a container: a new resource named by the Slug (made safe, and
    unique) — or, with ``forward``, by the upstream server (its path)."""
    with engine.begin() as c:
        t = target(c, who, base, pod_name, container)
        if not t.is_container:
            raise MethodNotAllowed("POST creates members of a container (a path ending in '/')",
                                   {"Allow": RESOURCE_ALLOW})
        if forward is not None:
            path = forward()
        else:
            name = re.sub(r"[^A-Za-z0-9._-]", "-", slug or "")[:100].strip(".") \
                or uuid.uuid4().hex
            path = t.path + name
            if pods.resource(c, t.pod, path, lock=True) is not None:
                path = f"{t.path}{name}-{uuid.uuid4().hex[:8]}"
        seq = pods.put_resource(c, t.pod, path, parse(f"{base}/{pod_name}/{path}"), content_type)
        after = pods.written(c, seq)
    return Written(seq, after.etag, True, path, after.changed)


@retrying
def delete(engine: Engine, who: Principal, base: str, pod_name: str, path: str,
           if_match: str | None, forward: Callable[[], object] | None = None) -> int:
    with engine.begin() as c:
        t = target(c, who, base, pod_name, path)
        if t.is_container:
            if not t.path:
                raise MethodNotAllowed("the pod's root cannot be deleted",
                                       {"Allow": CONTAINER_ALLOW})
            if _members(c, t):
                raise Conflict(f"container {t.path} is not empty")
            raise NotFound(f"no container {t.path}")
        row = pods.resource(c, t.pod, t.path, lock=True)
        if row is None:
            raise NotFound(f"no resource {t.path}")
        _preconditions(row.etag, if_match, None)
        if forward is not None:
            forward()
        seq = pods.delete_resource(c, t.pod, t.path)
    return seq


def _preconditions(etag: str | None, if_match: str | None, if_none_match: str | None) -> None:
    if if_match is not None and not matches(etag, if_match):
        raise PreconditionFailed("If-Match does not hold: the resource "
                                 + ("does not exist" if etag is None else "has changed"))
    if if_none_match is not None and matches(etag, if_none_match):
        raise PreconditionFailed("If-None-Match does not hold: the resource exists"
                                 if if_none_match.strip() == "*" else "the ETag matches")


def matches(etag: str | None, header: str) -> bool:
    """Whether an If-Match / If-None-Match list names ``etag`` ('*': any)."""
    if etag is None:
        return False
    tags = [x.strip().removeprefix("W/").strip('"') for x in header.split(",")]
    return "*" in tags or etag in tags


RESOURCE_ALLOW = "GET, HEAD, OPTIONS, PUT, PATCH, DELETE"
CONTAINER_ALLOW = "GET, HEAD, OPTIONS, POST, DELETE"

"""Writes of Solid Protocol resources (``resource`` names and reads them):
containers (made by PUT or POST, never holding client-written containment),
RDF documents, files (bytes and a media type) and their descriptions
(``<file>.meta``, RDF that feeds views like any document). A document and a
container never share a name; the containers above a new resource are
created with it.

Every write is one transaction: the resource, its quads, the pod's default
graph, one change-log entry and the maintenance jobs of the views reading the
pod (``storage.changes.record_change``, called by every write of
``storage.pods``). Access is asked of ``access.authorize`` alone."""

from __future__ import annotations

import functools
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from rdflib import Namespace
from sqlalchemy import Connection, Engine
from sqlalchemy.exc import IntegrityError

from server.api.auth import Principal
from server.api.ldp import access, headers, patch
from server.api.ldp.headers import BINARY, CONTAINER, DESCRIPTION, DOCUMENT, Shape
from server.api.ldp.patch import Change, DataChange, Patched
from server.api.ldp.resource import (
    Target,
    container_state,
    described,
    iri,
    matches,
    missing,
    state,
    tag,
    target,
)
from server.errors import Conflict, MethodNotAllowed, PreconditionFailed
from storage import acls, pods
from storage.db import retrying
from storage.terms import TermTable
from views.terms import fields_of

LDP = Namespace("http://www.w3.org/ns/ldp#")


@dataclass(frozen=True)
class Written:
    seq: int
    etag: str
    created: bool
    path: str
    triples: int  # triples the write changed in the resource
    pod: access.Pod  # with its access policy, which no write but an ACL's changes


def _conflicts_to_409(write: Callable[..., Written]) -> Callable[..., Written]:
    """A name taken (``d1`` when ``d1/`` exists, a document where a container
    goes), also by a concurrent writer, is 409."""
    @functools.wraps(write)
    def wrapped(*args: object, **kwargs: object) -> Written:
        try:
            return write(*args, **kwargs)
        except pods.NameTaken as e:
            raise Conflict(str(e)) from None
        except IntegrityError:
            raise Conflict("a resource of this name was created at the same time") from None
    return wrapped


@_conflicts_to_409
@retrying
def write(engine: Engine, who: Principal, base: str, pod_name: str, path: str,
          change: Change | TermTable, method: str, if_match: str | None, if_none_match: str | None,
          forward: Callable[[], object] | None = None) -> Written:
    """Apply ``change`` (a PUT's triples, as a table of terms, or a PATCH) to
    the RDF resource at ``path`` (creating it when absent), under If-Match / If-None-Match;
    ``forward`` sends the write upstream once it is known to apply here,
    before it commits."""
    op = access.WRITE
    if method == "PATCH" and not isinstance(change, TermTable):
        op = access.patching(patch.modes(change))
    with engine.begin() as c:
        t = target(c, who, base, pod_name, path, op)
        subject = described(c, t)
        if subject is not None:
            return _write_description(c, t, subject, change, method, if_match, if_none_match,
                                      forward)
        _refuse_auxiliary(t)
        row = pods.resource(c, t.pod.id, t.path, lock=True)
        if t.is_container and (method == "PATCH" or row is not None):
            # Solid Protocol §5.3: no PUT or PATCH of a container's containment triples
            raise Conflict(f"{method} of a container: its members are made by PUT below it "
                           "or POST to it, and its containment triples are the server's")
        if row is not None and row.binary and method == "PATCH":
            raise Conflict(f"{t.path} is not RDF: PATCH its description "
                           f"{t.path}{headers.DESCRIPTION_SUFFIX}")
        _conditions(c, t, row, if_match, if_none_match)
        if isinstance(change, DataChange):  # the resource itself is not read
            store = functools.partial(pods.patch_resource, c, t.pod.id, t.path, change.inserts,
                                      change.deletes, held=row)
        elif isinstance(change, TermTable):  # a PUT's body: neither is the resource
            if t.is_container:
                _no_containment(change)
            store = functools.partial(pods.put_resource, c, t.pod.id, t.path, change)
        else:  # a patch that reads the resource writes only what it changes
            old = pods.resource_table(c, row.id) if row and not row.binary else TermTable([], [])
            store = functools.partial(pods.patch_resource, c, t.pod.id, t.path,
                                      *_patched(change).diff(old), held=row)
        if forward is not None:  # once the write is known to apply here
            forward()
        seq = store()
        after = pods.written(c, seq)
    return Written(seq, tag(_after_state(after.etag, t), "text/turtle"), row is None,
                   t.path, after.changed, t.pod)


def _after_state(etag: str, t: Target) -> str:
    # a new container has no members: its state is its own and no members'
    return container_state(etag, []) if t.is_container else etag


def _write_description(c: Connection, t: Target, described,  # type: ignore[no-untyped-def]
                       change: Change | TermTable,
                       method: str, if_match: str | None, if_none_match: str | None,
                       forward: Callable[[], object] | None) -> Written:
    """PATCH of a non-RDF resource's description (CSS allows no PUT there)."""
    if method != "PATCH" or isinstance(change, TermTable):
        raise MethodNotAllowed("a description resource is changed by PATCH",
                               headers.not_allowed(Shape(DESCRIPTION), t.root))
    pods.resource(c, t.pod.id, described.path, lock=True)
    _preconditions(pods.description_etag(c, described.id), if_match, if_none_match)
    if forward is not None:
        forward()
    if isinstance(change, DataChange):
        seq = pods.patch_description(c, t.pod.id, described.id, change.inserts, change.deletes)
    else:
        seq = pods.patch_description(c, t.pod.id, described.id,
                                     *_patched(change).diff(pods.resource_table(c, described.id)))
    return Written(seq, tag(pods.description_etag(c, described.id), "text/turtle"), False,
                   t.path, pods.written(c, seq).changed, t.pod)


def _patched(change: Change) -> Patched:
    if not isinstance(change, Patched):
        raise TypeError(f"not a patch of this server: {change!r}")
    return change


def _refuse_auxiliary(t: Target) -> None:
    """No resource of ours is named like an auxiliary resource: ``.meta``
    only describes a non-RDF resource, and ``.acl`` is an ACL document
    (``acl_documents``: the endpoints hand it there before any write)."""
    if t.subject is not None:
        raise Conflict(f"{t.path} would describe {t.subject}, which is no non-RDF resource")
    if t.path.startswith(".well-known/"):
        raise Conflict("/.well-known/ below a pod is the server's (its storage description)")
    if t.path.endswith(headers.ACL_SUFFIX):
        raise Conflict("an ACL document is no resource of the pod")


def _no_containment(table: TermTable) -> None:
    """Containment triples are the server's (Solid Protocol §5.3)."""
    contains = fields_of(LDP.contains)
    if any(table.terms[p] == contains for _, p, _ in table.triples):
        raise Conflict("a container's ldp:contains triples are managed by the server")


@_conflicts_to_409
@retrying
def put_bytes(engine: Engine, who: Principal, base: str, pod_name: str, path: str,
              body: bytes, content_type: str, if_match: str | None, if_none_match: str | None,
              forward: Callable[[], object] | None = None) -> Written:
    """Create or replace the non-RDF resource at ``path``."""
    with engine.begin() as c:
        t = target(c, who, base, pod_name, path, access.WRITE)
        if t.is_container or described(c, t) is not None:
            raise Conflict(f"{t.path or 'the root'} holds RDF only; this body is "
                           f"{content_type}")
        _refuse_auxiliary(t)
        row = pods.resource(c, t.pod.id, t.path, lock=True)
        _conditions(c, t, row, if_match, if_none_match)
        if forward is not None:
            forward()
        seq = pods.put_bytes(c, t.pod.id, t.path, body, content_type)
        after = pods.written(c, seq)
    return Written(seq, after.etag, row is None, t.path, after.changed, t.pod)


@_conflicts_to_409
@retrying
def create_member(engine: Engine, who: Principal, base: str, pod_name: str, container: str,
                  slug: str | None, kind: str, parse: Callable[[str], TermTable],
                  body: bytes, content_type: str, if_match: str | None = None,
                  if_none_match: str | None = None,
                  forward: Callable[[], str] | None = None) -> Written:
    """POST to a container: a new member of ``kind`` (a container, an RDF
    document or non-RDF bytes) named by the Slug (made safe, and unique) —
    or, with ``forward``, by the upstream server (its path) — under the
    container's If-Match / If-None-Match."""
    with engine.begin() as c:
        t = target(c, who, base, pod_name, container, access.APPEND)
        row = pods.resource(c, t.pod.id, t.path)
        if row is None:  # Solid Protocol §5.3: POST to a missing resource is 404
            raise missing(t)
        if not t.is_container:
            raise MethodNotAllowed("POST creates members of a container (a path ending in '/')",
                                   headers.not_allowed(Shape(DOCUMENT), t.root))
        _conditions(c, t, row, if_match, if_none_match)
        path = forward() if forward is not None else _new_name(c, t, slug, kind)
        pods.resource(c, t.pod.id, path, lock=True)
        if kind == BINARY:
            seq = pods.put_bytes(c, t.pod.id, path, body, content_type)
        else:
            triples = parse(iri(base, pod_name, path))
            if kind == CONTAINER:
                _no_containment(triples)
            seq = pods.put_resource(c, t.pod.id, path, triples)
        after = pods.written(c, seq)
    made = after.etag if kind == BINARY else tag(
        container_state(after.etag, []) if kind == CONTAINER else after.etag, "text/turtle")
    return Written(seq, made, True, path, after.changed, t.pod)


def _new_name(c: Connection, t: Target, slug: str | None, kind: str) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]", "-", slug or "")[:100].strip(".") or uuid.uuid4().hex
    name = name.removesuffix(headers.DESCRIPTION_SUFFIX).removesuffix(headers.ACL_SUFFIX) \
        or uuid.uuid4().hex
    end = "/" if kind == CONTAINER else ""
    if pods.named(c, t.pod.id, t.path + name) is not None:
        name = f"{name}-{uuid.uuid4().hex[:8]}"
    return t.path + name + end


@retrying
def delete(engine: Engine, who: Principal, base: str, pod_name: str, path: str,
           if_match: str | None, if_none_match: str | None = None,
           forward: Callable[[], object] | None = None) -> int:
    with engine.begin() as c:
        t = target(c, who, base, pod_name, path, access.DELETE)
        if described(c, t) is not None:
            raise Conflict("a description goes with the resource it describes: delete that")
        row = pods.resource(c, t.pod.id, t.path, lock=True)
        if row is None:
            raise missing(t)
        if t.path == "":
            raise MethodNotAllowed("the pod's root cannot be deleted",
                                   headers.not_allowed(Shape(CONTAINER, root=True), t.root))
        if t.is_container and pods.members(c, t.pod.id, t.path):
            raise Conflict(f"container {t.path} is not empty")
        _conditions(c, t, row, if_match, if_none_match)
        if forward is not None:
            forward()
        seq = pods.delete_resource(c, t.pod.id, t.path)
        acls.delete(c, t.pod.id, t.path)  # its ACL document goes with it
    return seq


def _conditions(c: Connection, t: Target, row,  # type: ignore[no-untyped-def]
                if_match: str | None, if_none_match: str | None) -> None:
    """``_preconditions`` on the resource's current state, read only when a
    condition asks for it: a container's state lists its members, which a
    POST without conditions would otherwise read on every call. A missing
    resource's name taken is 409 before them, whatever they say (RFC 9110
    §13.2.1: a server answers its other errors first)."""
    if row is None:
        pods.name_free(c, t.pod.id, t.path)
    if if_match is not None or if_none_match is not None:
        _preconditions(state(c, t, row), if_match, if_none_match)


def _preconditions(state: str | None, if_match: str | None, if_none_match: str | None) -> None:
    if if_match is not None and not matches(state, if_match):
        raise PreconditionFailed("If-Match does not hold: the resource "
                                 + ("does not exist" if state is None else "has changed"))
    if if_none_match is not None and matches(state, if_none_match):
        raise PreconditionFailed("If-None-Match does not hold: the resource exists"
                                 if if_none_match.strip() == "*" else "the ETag matches")

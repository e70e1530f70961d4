"""ACL documents over LDP: GET, HEAD, PUT, PATCH and DELETE of
``<resource>.acl`` by those with Control on ``<resource>`` (``access``
decides; the owner always has it). A document is RDF, kept apart from the
pod's resources (``storage.acls``): its triples with absolute IRIs, as
N-Triples, and every write invalidates the pod's cached decisions. The
endpoints hand an ACL path here before anything else."""

from __future__ import annotations

from collections.abc import Callable

from rdflib import RDF, Graph
from sqlalchemy import Connection, Engine

from server.api.auth import Principal
from server.api.ldp import access, rdf, resource, service
from server.api.ldp.headers import PATCH_TYPES, storage_link
from server.api.ldp.wac import ACL
from server.errors import NotFound, UnsupportedMediaType
from storage import acls, db
from storage.db import retrying
from storage.terms import TermTable

Triple = rdf.Triple
ALLOW = "OPTIONS, HEAD, GET, PATCH, PUT, DELETE"


def _headers(t: resource.Target, who: Principal, etag: str | None = None) -> dict[str, str]:
    out = {"Allow": ALLOW, "Accept-Patch": ", ".join(PATCH_TYPES), "Accept-Put": "text/turtle",
           "Link": ", ".join(['<http://www.w3.org/ns/ldp#Resource>; rel="type"',
                              storage_link(t.root)]),
           "WAC-Allow": access.wac_allow(who, t.pod, t.path), "Vary": "Accept, Authorization"}
    if etag:
        out["ETag"] = f'"{etag}"'
    return out


def _subject(t: resource.Target) -> str:
    subject = access.acl_subject(t.path)
    assert subject is not None
    if access.acl_subject(subject) is not None:
        raise NotFound("an ACL document has no ACL document of its own")
    return subject


def _triples(body: str) -> set[Triple]:
    g = Graph()
    g.parse(data=body, format="nt")
    return set(g)  # type: ignore[arg-type]


def _ntriples(triples: set[Triple]) -> str:
    g = Graph()
    for t in triples:
        g.add(t)
    return "\n".join(sorted(line for line in g.serialize(format="nt").splitlines() if line))


def _root_default(t: resource.Target) -> str:
    """The root's ACL document while none is stored: what the owner holds
    anyway (all modes, inherited by everything), as CSS writes it for a new
    pod — so that a client looking for the ACL that applies (Inrupt's
    universalAccess walks up to the root) finds one."""
    me, root = f"<{t.iri}#owner>", f"<{t.root}>"
    return "\n".join(sorted([
        f"{me} <{RDF.type}> <{ACL.Authorization}> .",
        f"{me} <{ACL.agent}> <{t.pod.owner}> .",
        *(f"{me} <{ACL.mode}> <{ACL[m]}> ." for m in ("Read", "Write", "Control")),
        f"{me} <{ACL.accessTo}> {root} .", f"{me} <{ACL.default}> {root} ."]))


def _document(c: Connection, t: resource.Target, subject: str) -> tuple[str, str] | None:
    """(body, etag) of the ACL document of ``subject``, or None."""
    doc = acls.document(c, t.pod.id, subject)
    if doc is not None:
        return doc.body, doc.etag
    if subject == "":
        body = _root_default(t)
        return body, acls.etag(body)
    return None


def get(engine: Engine, who: Principal, base: str, pod: str, path: str, accept: str,
        if_none_match: str | None) -> tuple[int, bytes, str, dict[str, str]]:
    """(status, body, media type, headers) of a GET of the ACL document."""
    with db.reading(engine) as c:
        t = resource.target(c, who, base, pod, path, access.READ)
        doc = _document(c, t, _subject(t))
        if doc is None:
            raise NotFound(f"no ACL document {path}", {**_headers(t, who), "Allow": "PUT, PATCH"})
        media = rdf.negotiate(accept)
        etag = resource.tag(doc[1], media)
        out = _headers(t, who, etag)
    if if_none_match is not None and resource.names(etag, if_none_match):
        return 304, b"", media, out
    return 200, rdf.write(TermTable.of(_triples(doc[0])), media), media, out


def parse(content: bytes, content_type: str, iri: str, limits: object) -> set[Triple]:
    """A PUT's body: RDF only."""
    if not rdf.is_rdf(content_type):
        raise UnsupportedMediaType(f"an ACL document is RDF, not {content_type}")
    return rdf.parse(content, content_type, iri, limits)  # type: ignore[arg-type]


@retrying
def write(engine: Engine, who: Principal, base: str, pod: str, path: str,
          change: Callable[[set[Triple]], set[Triple]], if_match: str | None,
          if_none_match: str | None) -> tuple[bool, str]:
    """Apply ``change`` (a PUT's triples or a PATCH) to the ACL document;
    (whether it was created, its ETag)."""
    with engine.begin() as c:
        t = resource.target(c, who, base, pod, path, access.WRITE)
        subject = _subject(t)
        acls.lock(c, t.pod.id)
        doc = _document(c, t, subject)
        service._preconditions(None if doc is None else doc[1], if_match, if_none_match)
        body = _ntriples(change(set() if doc is None else _triples(doc[0])))
        created = acls.put(c, t.pod.id, subject, t.root, body)
    return created, resource.tag(acls.etag(body), "text/turtle")


@retrying
def delete(engine: Engine, who: Principal, base: str, pod: str, path: str,
           if_match: str | None) -> None:
    with engine.begin() as c:
        t = resource.target(c, who, base, pod, path, access.DELETE)
        subject = _subject(t)
        acls.lock(c, t.pod.id)
        doc = acls.document(c, t.pod.id, subject)
        if doc is None:
            raise NotFound(f"no ACL document {path}")
        service._preconditions(doc.etag, if_match, None)
        acls.delete(c, t.pod.id, subject)

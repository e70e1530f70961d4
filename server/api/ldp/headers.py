"""The Solid Protocol's response headers for a resource, in one place:
``Allow`` and ``Accept-Patch/Post/Put`` (also on 404s, so a client learns how
to create the resource), ``Link`` (rel=type, acl, describedby, the storage's
owner and description), ``WAC-Allow``, ``Vary`` and ``ETag`` — chosen as the
Community Solid Server chooses them (its ``AllowAcceptHeaderWriter``), so
that the differential test finds no difference it does not list."""

from __future__ import annotations

from dataclasses import dataclass

LDP = "http://www.w3.org/ns/ldp#"
PIM_STORAGE = "http://www.w3.org/ns/pim/space#Storage"
SOLID = "http://www.w3.org/ns/solid/terms#"
STORAGE_DESCRIPTION = f"{SOLID}storageDescription"
DESCRIPTION_SUFFIX = ".meta"  # a non-RDF resource's describedby resource
ACL_SUFFIX = ".acl"

PATCH_TYPES = ("text/n3", "application/sparql-update")
METHODS = ("OPTIONS", "HEAD", "GET", "PATCH", "POST", "PUT", "DELETE")

CONTAINER, DOCUMENT, BINARY, DESCRIPTION = "container", "document", "binary", "description"


@dataclass(frozen=True)
class Shape:
    """What the headers depend on: the resource's kind, whether it exists,
    is a pod's root (a storage) or holds members."""

    kind: str
    exists: bool = True
    root: bool = False
    empty: bool = True


def allowed(shape: Shape) -> list[str]:
    """The methods allowed on the resource (CSS: POST on containers only; PUT
    and PATCH not on an existing container; PUT and DELETE not on a
    description; DELETE of a container only when it is empty and no storage;
    a missing resource only by the methods that create it)."""
    container = shape.kind == CONTAINER
    out = [m for m in METHODS if not (
        (m == "POST" and not container)
        or (m == "PUT" and (shape.kind == DESCRIPTION or (container and shape.exists)))
        or (m == "PATCH" and container)
        or (m == "DELETE" and (shape.kind == DESCRIPTION
                               or (container and (shape.root or not shape.empty)))))]
    if not shape.exists:
        out = [m for m in out if m == "PUT" or (m == "PATCH" and not container)]
    return out


def allow(shape: Shape) -> dict[str, str]:
    """``Allow`` and the ``Accept-*`` of the methods it allows."""
    methods = allowed(shape)
    out = {"Allow": ", ".join(methods)}
    if "PATCH" in methods:
        out["Accept-Patch"] = ", ".join(PATCH_TYPES)
    if "POST" in methods:
        out["Accept-Post"] = "*/*"
    if "PUT" in methods:
        out["Accept-Put"] = "*/*"
    return out


def links(shape: Shape, iri: str, owner: str | None = None) -> list[str]:
    """The ``Link`` values of an existing resource at ``iri``."""
    types = [f"{LDP}Resource"]  # as CSS: no ldp:RDFSource / ldp:NonRDFSource
    if shape.kind == CONTAINER:
        types += [f"{LDP}Container", f"{LDP}BasicContainer"]
        if shape.root:
            types.append(PIM_STORAGE)
    out = [f'<{t}>; rel="type"' for t in types]
    if shape.kind != DESCRIPTION:
        out.append(f'<{iri}{ACL_SUFFIX}>; rel="acl"')
    if shape.kind == BINARY:
        out.append(f'<{iri}{DESCRIPTION_SUFFIX}>; rel="describedby"')
    if shape.root and owner:
        out.append(f'<{owner}>; rel="{SOLID}owner"')
    return out


def storage_link(storage_root: str) -> str:
    """Solid Protocol §4.1: every resource links to its storage's description."""
    return f'<{storage_root}.well-known/solid>; rel="{STORAGE_DESCRIPTION}"'


def for_resource(shape: Shape, iri: str, storage_root: str, wac_allow: str,
                 owner: str | None = None, etag: str | None = None) -> dict[str, str]:
    """The headers of a GET, HEAD or OPTIONS of an existing resource."""
    out = {**allow(shape), "Link": ", ".join([*links(shape, iri, owner),
                                              storage_link(storage_root)]),
           "WAC-Allow": wac_allow, "Vary": "Accept, Authorization"}
    if etag:
        out["ETag"] = f'"{etag}"'
    return out


def not_allowed(shape: Shape, storage_root: str) -> dict[str, str]:
    """The headers of a 405: what the resource does allow."""
    return {**allow(shape), "Link": storage_link(storage_root)}


def for_missing(kind: str, storage_root: str) -> dict[str, str]:
    """The headers of a 404: how the resource could be created."""
    return {**allow(Shape(kind, exists=False)), "Link": storage_link(storage_root),
            "Vary": "Accept, Authorization"}

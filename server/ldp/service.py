"""LDP resources: each RDF resource is one named graph, named by its IRI; the
default graph every view sees is their union (support-counted)."""

from __future__ import annotations

from rdflib import Graph, URIRef

from server.errors import BadRdf, NotFound, UnsupportedMediaType
from server.hub import Hub

RDF_TYPES = {"text/turtle": "turtle", "application/n-triples": "nt", "application/ld+json": "json-ld"}


def parse(body: bytes, content_type: str, iri: str) -> set[tuple]:
    fmt = RDF_TYPES.get(content_type.split(";")[0].strip().lower())
    if fmt is None:
        raise UnsupportedMediaType(f"cannot read {content_type or 'a body without a type'}; "
                                   f"use one of {', '.join(RDF_TYPES)}")
    g = Graph()
    try:
        g.parse(data=body.decode("utf-8"), format=fmt, publicID=iri)
    except Exception as e:  # rdflib raises many types for bad input
        raise BadRdf(f"{fmt} parse error: {e}") from None
    return set(g)


def triples(hub: Hub, iri: str) -> set[tuple]:
    graph = hub.ds.named.get(URIRef(iri))
    return set(graph.triples) if graph is not None else set()


def put(hub: Hub, iri: str, new: set[tuple]) -> int:
    """Create or replace: the change is the diff against the current resource."""
    with hub.lock:
        old = triples(hub, iri)
        g = URIRef(iri)
        changes = [((g, *t), -1) for t in old - new] + [((g, *t), 1) for t in new - old]
        return hub.change(changes)


def delete(hub: Hub, iri: str) -> int:
    with hub.lock:
        old = triples(hub, iri)
        if not old:
            raise NotFound(f"no resource {iri}")
        return hub.change(((URIRef(iri), *t), -1) for t in old)


def serialize(hub: Hub, iri: str) -> str:
    found = triples(hub, iri)
    if not found:
        raise NotFound(f"no resource {iri}")
    g = Graph()
    for t in found:
        g.add(t)
    return g.serialize(format="turtle")

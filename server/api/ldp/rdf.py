"""RDF bodies of LDP resources: reading by Content-Type, writing by Accept."""

from __future__ import annotations

from rdflib import Graph
from rdflib.term import Identifier

from server.errors import BadRdf, UnsupportedMediaType

Triple = tuple[Identifier, Identifier, Identifier]
# media type -> rdflib format, read and written alike
FORMATS = {"text/turtle": "turtle", "application/n-triples": "nt", "application/ld+json": "json-ld"}


def media_type(header: str) -> str:
    return header.split(";")[0].strip().lower()


def parse(body: bytes, content_type: str, base: str) -> set[Triple]:
    fmt = FORMATS.get(media_type(content_type))
    if fmt is None:
        raise UnsupportedMediaType(f"cannot read {content_type or 'a body without a type'}; "
                                   f"use one of {', '.join(FORMATS)}")
    g = Graph()
    try:
        g.parse(data=body.decode("utf-8"), format=fmt, publicID=base)
    except Exception as e:  # noqa: BLE001 - rdflib's parsers raise many types for bad input
        raise BadRdf(f"{fmt} parse error: {e}") from None
    return set(g)  # type: ignore[arg-type]


def negotiate(accept: str) -> str:
    """The media type to answer with: the first acceptable of ours by q-value
    (Turtle for */* or no Accept); None-like Accept lists give Turtle too."""
    best, best_q = "text/turtle", -1.0
    for i, part in enumerate(accept.split(",") if accept.strip() else ["*/*"]):
        fields = [f.strip() for f in part.split(";")]
        q = 1.0
        for f in fields[1:]:
            if f.startswith("q="):
                try:
                    q = float(f[2:])
                except ValueError:
                    q = 0.0
        name = fields[0].lower()
        for ours in FORMATS:
            if (name == ours or name in ("*/*", ours.split("/")[0] + "/*")) and q > best_q and q > 0:
                best, best_q = ours, q - i * 1e-6
                break
    return best


def serialize(triples: set[Triple], media: str, base: str | None = None) -> bytes:
    g = Graph()
    for t in triples:
        g.add(t)
    g.bind("ldp", "http://www.w3.org/ns/ldp#")
    out = g.serialize(format=FORMATS[media], base=base) if media == "text/turtle" else \
        g.serialize(format=FORMATS[media])
    return out.encode() if isinstance(out, str) else out

"""RDF bodies of LDP resources: reading by Content-Type, writing by Accept.

Bodies are read by pyoxigraph's parsers, which are linear in their input and
check every IRI (rdflib's N-Triples parser is quadratic in a line's length: a
52 MB one-line body held the server for 17 minutes). Reading is bounded by
``RdfLimits`` and never fetches anything (JSON-LD contexts come from the
bundled allow-list, ``server.api.ldp.contexts``)."""

from __future__ import annotations

import bisect
import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any, cast

import pyoxigraph as ox
from rdflib import Graph
from rdflib.term import Identifier

from server.api.ldp import contexts
from server.errors import BadRdf, PayloadTooLarge, UnsupportedMediaType
from storage.terms import Position, TermTable
from views.terms import TermFields

Triple = tuple[Identifier, Identifier, Identifier]
# media type -> pyoxigraph format, written (and rdflib's, for what pyoxigraph refuses)
FORMATS = {"text/turtle": ox.RdfFormat.TURTLE, "application/n-triples": ox.RdfFormat.N_TRIPLES,
           "application/ld+json": ox.RdfFormat.JSON_LD}
_RDFLIB = {"text/turtle": "turtle", "application/n-triples": "nt", "application/ld+json": "json-ld"}
# the prefixes a Turtle body declares, those of them it uses
PREFIXES = {"rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
            "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
            "xsd": "http://www.w3.org/2001/XMLSchema#", "ldp": "http://www.w3.org/ns/ldp#",
            "dcterms": "http://purl.org/dc/terms/", "foaf": "http://xmlns.com/foaf/0.1/",
            "acl": "http://www.w3.org/ns/auth/acl#", "solid": "http://www.w3.org/ns/solid/terms#",
            "pim": "http://www.w3.org/ns/pim/space#"}
# media type -> pyoxigraph format, read (N-Quads of the default graph: Comunica
# PUTs new resources as N-Quads)
_READERS = {"text/turtle": ox.RdfFormat.TURTLE, "application/n-triples": ox.RdfFormat.N_TRIPLES,
            "application/ld+json": ox.RdfFormat.JSON_LD,
            "application/n-quads": ox.RdfFormat.N_QUADS}
_XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
_RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
MORE_PREFIXES = 16  # namespaces a Turtle body names beyond PREFIXES, its most used


@dataclass(frozen=True)
class RdfLimits:
    """How much one body may hold (413 beyond)."""

    literal_bytes: int = 1 << 20
    triples: int = 500_000


def media_type(header: str) -> str:
    return header.split(";")[0].strip().lower()


def is_rdf(content_type: str) -> bool:
    """Whether a body of this type is read as RDF (else it is stored as bytes)."""
    return media_type(content_type) in _READERS


def parse(body: bytes, content_type: str, base: str,
          limits: RdfLimits = RdfLimits()) -> set[Triple]:
    """The triples of ``body``; 415 for a type we do not read, 400 for a body
    that is not valid RDF in it (an invalid IRI included), 413 beyond ``limits``.
    Its blank nodes are its own: each body's are new nodes, whatever their
    labels (RDF 1.1 Concepts §3.4: blank node identifiers are local to the
    document), so two documents' ``_:b0`` are two nodes in a pod's graph."""
    return parse_table(body, content_type, base, limits).decoded()


def parse_table(body: bytes | IO[bytes], content_type: str, base: str,
                limits: RdfLimits | None = RdfLimits()) -> TermTable:
    """``parse``, as a table of terms (``storage.terms.TermTable``): each
    term's dictionary fields once, each triple as positions — no Python term
    per triple, the form bulk writes intern (``podviews load`` reads a
    stream, without ``limits``)."""
    media = media_type(content_type)
    fmt = _READERS.get(media)
    if fmt is None:
        raise UnsupportedMediaType(f"cannot read {content_type or 'a body without a type'}; "
                                   f"use one of {', '.join(_READERS)}")
    if media == "application/ld+json":
        body = _with_bundled_contexts(body if isinstance(body, bytes) else body.read(), base)
    most = limits.triples if limits is not None else None
    try:
        table = table_of(ox.parse(body, fmt, base_iri=base, without_named_graphs=True,
                                  rename_blank_nodes=True), most)
    except (SyntaxError, ValueError) as e:
        raise BadRdf(f"{media} parse error: {e}") from None
    if not table.triples and media == "application/ld+json" and \
            (body if isinstance(body, bytes) else b"").strip() not in (b"{}", b"[]"):
        # JSON-LD drops what it cannot read (invalid IRIs, free-floating values)
        raise BadRdf("the JSON-LD document holds no triples")
    if limits is not None and any(f[0] == 2 and len(f[1]) > limits.literal_bytes
                                  for f in table.terms):
        raise PayloadTooLarge(f"a literal is longer than {limits.literal_bytes} characters")
    return table


def table_of(quads: Iterable[ox.Quad], most: int | None = None) -> TermTable:
    """pyoxigraph's quads (parsed as they are read) as a table of terms: each
    term's dictionary fields once, each triple as positions; 413 past
    ``most`` triples. A parser's error is its own (``SyntaxError``,
    ``ValueError``)."""
    at: dict[object, int] = {}
    rows: set[Position] = set()
    for s, p, o, _ in quads:
        rows.add((at.setdefault(s, len(at)), at.setdefault(p, len(at)), at.setdefault(o, len(at))))
        if most is not None and len(rows) > most:
            raise PayloadTooLarge(f"a resource may hold at most {most} triples")
    return TermTable([fields(t) for t in at], list(rows))


def fields(t: object) -> TermFields:
    """The dictionary fields of a pyoxigraph term (``views.terms.fields_of``
    of the same term in rdflib: canonical — pyoxigraph writes a simple
    literal as an xsd:string and language tags in lower case already)."""
    if isinstance(t, ox.NamedNode):
        return 0, t.value, None, None
    if isinstance(t, ox.BlankNode):
        return 1, t.value, None, None
    if not isinstance(t, ox.Literal):
        raise BadRdf("RDF-star triple terms are not supported")
    if t.language:
        return 2, t.value, None, t.language.lower()
    dt = t.datatype.value
    return 2, t.value, None if dt == _XSD_STRING else dt, None


def _with_bundled_contexts(body: bytes, base: str) -> bytes:
    """The JSON-LD document with every remote ``@context`` replaced by its
    bundled copy; a context that is not bundled is a 400 naming it, and so is
    an ``@id`` that is no IRI (JSON-LD would drop its node without a word)."""
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError) as e:
        raise BadRdf(f"JSON-LD parse error: {e}") from None
    for ref in _ids(doc):
        _check_iri(ref, base)
    return json.dumps(_inline(doc)).encode()


def _ids(node: object) -> Iterator[str]:
    """The ``@id`` values of the document's nodes (not of its contexts)."""
    if isinstance(node, list):
        for x in node:
            yield from _ids(x)
    elif isinstance(node, dict):
        for k, v in node.items():
            if k == "@id" and isinstance(v, str) and not v.startswith("_:"):
                yield v
            elif k != "@context":
                yield from _ids(v)


def _check_iri(ref: str, base: str) -> None:
    """400 unless ``ref`` resolves against ``base`` to a valid IRI (RFC 3987,
    as pyoxigraph checks every IRI of the other formats)."""
    try:
        if any(c in ref for c in '<>"\\\n'):
            raise SyntaxError(f"invalid character in {ref!r}")
        list(ox.parse(f"<{ref}> <urn:x> <urn:x> .".encode(), ox.RdfFormat.TURTLE,
                      base_iri=base))
    except (SyntaxError, ValueError) as e:
        raise BadRdf(f"the JSON-LD @id {ref!r} is not an IRI: {e}") from None


def _inline(node: object) -> object:
    if isinstance(node, list):
        return [_inline(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: _inline(v) for k, v in node.items() if k != "@context"}
    if "@context" in node:
        out["@context"] = _context(node["@context"])
    return out


def _context(value: object) -> object:
    if isinstance(value, list):
        return [_context(v) for v in value]
    if isinstance(value, str):
        found = contexts.bundled(value)
        if found is None:
            raise BadRdf(f"the JSON-LD context {value} is not one this server bundles "
                         f"({', '.join(contexts.BUNDLED)}); remote contexts are never fetched")
        return found
    return _inline(value) if isinstance(value, dict) else value


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


def write(table: TermTable, media: str) -> bytes:
    """A table of triples (a stored resource's, as read: dictionary fields,
    no term object built for rdflib) written in ``media`` by pyoxigraph,
    every IRI absolute; Turtle declares the ``PREFIXES`` it uses. rdflib
    wrote a 64k-triple document in 1.0–2.4 s and pyoxigraph writes it in
    0.03–0.04 s (design note 204). A term pyoxigraph refuses to make (a
    language subtag of over eight letters, an IRI with a space: rdflib's
    SPARQL Update parser let such terms in before a PATCH refused them,
    design note 218) makes rdflib write the whole body, as before."""
    try:
        made: list[Any] = [_term(f) for f in table.terms]
        out = [ox.Triple(made[s], made[p], made[o]) for s, p, o in table.triples]
    except (ValueError, TypeError):  # TypeError: a literal as subject
        out = None
    if out is None:
        body = Graph()
        for t in table.decoded():
            body.add(t)
        written = body.serialize(format=_RDFLIB[media])
        return written.encode() if isinstance(written, str) else written
    used = _prefixes(table) if media == "text/turtle" else None
    return cast(bytes, ox.serialize(out, format=FORMATS[media], prefixes=used or None))


def _prefixes(table: TermTable) -> dict[str, str]:
    """The prefixes of a Turtle body: those of ``PREFIXES`` its IRIs use,
    and ``ns1``, ``ns2`` … for the ``MORE_PREFIXES`` namespaces its
    predicates and classes use most (an IRI up to its last ``#`` or ``/``),
    as rdflib wrote them — but not a namespace that a longer one of the
    body's IRIs extends, whose names pyoxigraph would write with escaped
    slashes (``ns:a\\/b``), which not every Turtle reader takes.
    pyoxigraph's writer tries every prefix on every IRI: 50,000 namespaces
    of as many predicates took it 2.6 s, so they are bounded."""
    iris = [f[1] for f in table.terms if f[0] == 0]
    used = {name: ns for name, ns in PREFIXES.items() if any(i.startswith(ns) for i in iris)}
    kind = {i for i, f in enumerate(table.terms) if f == (0, _RDF_TYPE, None, None)}
    named = Counter(p for _, p, _ in table.triples) + Counter(
        o for _, p, o in table.triples if p in kind)
    spaces: Counter[str] = Counter()
    for i, uses in named.items():
        if table.terms[i][0] == 0:
            spaces[_namespace(table.terms[i][1])] += uses
    every = sorted({_namespace(i) for i in iris})
    known = set(used.values()) | {""}
    others = [ns for ns, _ in sorted(spaces.items(), key=lambda x: (-x[1], x[0]))
              if ns not in known and not _extended(ns, every)][:MORE_PREFIXES]
    return {**used, **{f"ns{n}": ns for n, ns in enumerate(sorted(others), 1)}}


def _extended(ns: str, spaces: list[str]) -> bool:
    """Whether a namespace of the sorted ``spaces`` extends ``ns`` (those
    that do follow it in order: one look, not a scan of them all)."""
    at = bisect.bisect_right(spaces, ns)
    return at < len(spaces) and spaces[at].startswith(ns)


def _namespace(iri: str) -> str:
    return iri[:max(iri.rfind("#"), iri.rfind("/")) + 1]


def unwritable(table: TermTable) -> TermFields | None:
    """A term of ``table`` that is no RDF term pyoxigraph makes (an IRI with
    a space, a language tag that is not BCP 47: what a PUT's parser
    refuses, and rdflib's SPARQL Update and N3 parsers let in), or None."""
    for f in table.terms:
        try:
            _term(f)
        except ValueError:
            return f
    return None


def _term(f: TermFields) -> ox.NamedNode | ox.BlankNode | ox.Literal:
    """The pyoxigraph term of dictionary fields (inverse of ``fields``);
    ValueError for what pyoxigraph does not take as RDF."""
    kind, lexical, datatype, lang = f
    if kind == 0:
        return ox.NamedNode(lexical)
    if kind == 1:
        return ox.BlankNode(lexical)
    if lang:
        return ox.Literal(lexical, language=lang)
    return ox.Literal(lexical, datatype=ox.NamedNode(datatype)) if datatype else ox.Literal(lexical)

"""SPARQL 1.1 Query Results: JSON, CSV and TSV (W3C Recommendations); a
CONSTRUCT view's graph as Turtle, N-Triples or JSON-LD."""

from __future__ import annotations

import csv
import io

from rdflib import Graph
from rdflib.term import BNode, Identifier, Literal, URIRef

from views.terms import canonical


def term_json(t: Identifier) -> dict[str, str]:
    t = canonical(t)  # one form per term: "a"^^xsd:string is written "a"
    if isinstance(t, URIRef):
        return {"type": "uri", "value": str(t)}
    if isinstance(t, BNode):
        return {"type": "bnode", "value": str(t)}
    assert isinstance(t, Literal)
    out = {"type": "literal", "value": str(t)}
    if t.language:
        out["xml:lang"] = t.language
    elif t.datatype is not None:
        out["datatype"] = str(t.datatype)
    return out


def select_json(variables: tuple[str, ...], rows: list[dict[str, Identifier]]) -> dict:  # type: ignore[type-arg]
    return {"head": {"vars": list(variables)},
            "results": {"bindings": [{v: term_json(t) for v, t in r.items() if v in variables}
                                     for r in rows]}}


def ask_json(answer: bool) -> dict:  # type: ignore[type-arg]
    return {"head": {}, "boolean": answer}


def select_csv(variables: tuple[str, ...], rows: list[dict[str, Identifier]]) -> str:
    """SPARQL 1.1 Query Results CSV: plain values, RFC 4180 quoting."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\r\n")
    w.writerow(variables)
    for r in rows:
        w.writerow(["" if v not in r else (f"_:{r[v]}" if isinstance(r[v], BNode) else str(r[v]))
                    for v in variables])
    return out.getvalue()


def select_tsv(variables: tuple[str, ...], rows: list[dict[str, Identifier]]) -> str:
    """SPARQL 1.1 Query Results TSV: terms in Turtle syntax."""
    lines = ["\t".join(f"?{v}" for v in variables)]
    lines += ["\t".join(_tsv_term(r[v]) if v in r else "" for v in variables) for r in rows]
    return "\n".join(lines) + "\n"


def _tsv_term(t: Identifier) -> str:
    t = canonical(t)
    if isinstance(t, Literal):
        text = str(t).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") \
            .replace("\r", "\\r").replace("\t", "\\t")
        if t.language:
            return f'"{text}"@{t.language}'
        if t.datatype is not None:
            return f'"{text}"^^<{t.datatype}>'
        return f'"{text}"'
    return t.n3()


TURTLE, NTRIPLES, JSONLD = "text/turtle", "application/n-triples", "application/ld+json"
GRAPH_MEDIA = {TURTLE: "turtle", NTRIPLES: "nt", JSONLD: "json-ld"}


def ntriples(triples: list[tuple[Identifier, Identifier, Identifier]]) -> list[str]:
    """Each triple's N-Triples line, sorted: the graph's canonical text for
    paging and ETags (blank node labels are stable: ``views.results.graph``)."""
    g = Graph()
    for t in triples:
        g.add(t)
    return sorted(line for line in g.serialize(format="nt").splitlines() if line.strip())


def graph_body(lines: list[str], media: str) -> str:
    """N-Triples ``lines`` in ``media`` (one of ``GRAPH_MEDIA``)."""
    text = "\n".join(lines) + ("\n" if lines else "")
    if media == NTRIPLES:
        return text
    g = Graph()
    g.parse(data=text, format="nt")
    return g.serialize(format=GRAPH_MEDIA[media])

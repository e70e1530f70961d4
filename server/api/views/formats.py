"""SPARQL 1.1 Query Results: JSON, CSV and TSV (W3C Recommendations); a
CONSTRUCT view's graph as Turtle, N-Triples or JSON-LD."""

from __future__ import annotations

import csv
import io

import pyoxigraph as ox
from rdflib import Graph
from rdflib.term import BNode, Identifier, URIRef

from server.api.ldp import rdf
from storage.terms import TermTable
from views.terms import KINDS, TermFields

URI, BLANK = KINDS[URIRef], KINDS[BNode]


def term_json(f: TermFields) -> dict[str, str]:
    """A term, as its dictionary fields (canonical: a simple literal has no
    datatype, a language tag is lower case), in SPARQL 1.1 Query Results
    JSON: read results are written from the fields, with no term object
    built (design note 184)."""
    kind, lexical, datatype, lang = f
    if kind == URI:
        return {"type": "uri", "value": lexical}
    if kind == BLANK:
        return {"type": "bnode", "value": lexical}
    if lang:
        return {"type": "literal", "value": lexical, "xml:lang": lang}
    if datatype is not None:
        return {"type": "literal", "value": lexical, "datatype": datatype}
    return {"type": "literal", "value": lexical}


def select_json(variables: tuple[str, ...], rows: list[dict[str, TermFields]]) -> dict:  # type: ignore[type-arg]
    return {"head": {"vars": list(variables)},
            "results": {"bindings": [{v: term_json(f) for v, f in r.items() if v in variables}
                                     for r in rows]}}


def ask_json(answer: bool) -> dict:  # type: ignore[type-arg]
    return {"head": {}, "boolean": answer}


def select_csv(variables: tuple[str, ...], rows: list[dict[str, TermFields]]) -> str:
    """SPARQL 1.1 Query Results CSV: plain values, RFC 4180 quoting."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\r\n")
    w.writerow(variables)
    for r in rows:
        w.writerow([_csv_value(r[v]) if v in r else "" for v in variables])
    return out.getvalue()


def _csv_value(f: TermFields) -> str:
    kind, lexical, _, _ = f
    return f"_:{lexical}" if kind == BLANK else lexical


def select_tsv(variables: tuple[str, ...], rows: list[dict[str, TermFields]]) -> str:
    """SPARQL 1.1 Query Results TSV: terms in Turtle syntax."""
    lines = ["\t".join(f"?{v}" for v in variables)]
    lines += ["\t".join(_tsv_term(r[v]) if v in r else "" for v in variables) for r in rows]
    return "\n".join(lines) + "\n"


def _tsv_term(f: TermFields) -> str:
    kind, lexical, datatype, lang = f
    if kind == URI:
        return f"<{lexical}>"
    if kind == BLANK:
        return f"_:{lexical}"
    text = lexical.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") \
        .replace("\r", "\\r").replace("\t", "\\t")
    if lang:
        return f'"{text}"@{lang}'
    if datatype is not None:
        return f'"{text}"^^<{datatype}>'
    return f'"{text}"'


TURTLE, NTRIPLES, JSONLD = "text/turtle", "application/n-triples", "application/ld+json"
GRAPH_MEDIA = (TURTLE, NTRIPLES, JSONLD)


def ntriples(triples: list[tuple[Identifier, Identifier, Identifier]]) -> list[str]:
    """Each triple's N-Triples line, sorted: the graph's canonical text for
    paging and ETags (blank node labels are stable: ``views.results.graph``)."""
    text = rdf.write(TermTable.of(triples), NTRIPLES).decode()
    return sorted(line for line in text.splitlines() if line.strip())


def graph_body(lines: list[str], media: str) -> str:
    """N-Triples ``lines`` in ``media`` (one of ``GRAPH_MEDIA``), written as
    a resource's triples are (``rdf.write``: design note 204); rdflib reads
    lines pyoxigraph will not (rdflib wrote them for a term pyoxigraph
    refuses, ``rdf.write``)."""
    text = "\n".join(lines) + ("\n" if lines else "")
    if media == NTRIPLES:
        return text
    try:
        table = rdf.table_of(ox.parse(text.encode(), ox.RdfFormat.N_TRIPLES))
    except (SyntaxError, ValueError):
        table = TermTable.of(Graph().parse(data=text, format="nt"))  # type: ignore[arg-type]
    return rdf.write(table, media).decode()

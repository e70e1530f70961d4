"""SPARQL 1.1 Query Results JSON (W3C Recommendation, §3)."""

from __future__ import annotations

from rdflib.term import BNode, Identifier, Literal, URIRef


def term_json(t: Identifier) -> dict[str, str]:
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

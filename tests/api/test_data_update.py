"""The plain INSERT DATA / DELETE DATA reader against rdflib's full SPARQL
Update parser (the oracle): on random updates both give the same resource,
and everything outside the plain form is left to the full parser."""

from __future__ import annotations

import random

import pytest
from rdflib import Literal, URIRef

from server.api.ldp import data_update
from server.api.ldp.patch import BadPatch, _rdflib_update, sparql_update

BASE = "http://pods.example/alice/doc"
OBJECTS = ['"plain"', '"with } brace"', "'''long\nstring'''", '"esc \\" quote"', '"chat"@fr',
           '"5"^^<http://www.w3.org/2001/XMLSchema#integer>', "7", "-2", "1.5", "2e3", "true",
           "<rel>", ":o1", "ex:o2", "<http://x.example/#frag>", r'"\u00e9t\u00e9"']


def _triple(rng: random.Random) -> str:
    s = rng.choice([":s1", ":s2", "<s3>", "ex:s4"])
    p = rng.choice([":p", "ex:q", "a", "<http://x.example/r>"])
    return f"{s} {p} {rng.choice(OBJECTS)}"


def _update(rng: random.Random) -> str:
    parts = ["PREFIX : <http://ex.example/>\n", "prefix ex: <http://ex2.example/> # note\n"]
    for _ in range(rng.randint(1, 4)):
        block = " . ".join(_triple(rng) for _ in range(rng.randint(0, 4)))
        if block and rng.random() < 0.5:
            block += " ."
        parts.append(f"{rng.choice(['INSERT', 'DELETE', 'insert', 'delete'])} DATA {{ {block} }}")
        parts.append(rng.choice([" ;\n", ";", " ; # more\n"]))
    return "".join(parts).rstrip(" ;\n#more")


def test_plain_updates_equal_the_full_parser() -> None:
    rng = random.Random(7)
    current = {(URIRef("http://ex.example/s1"), URIRef("http://ex.example/p"), Literal("plain"))}
    for _ in range(200):
        body = _update(rng)
        assert data_update.operations(body, BASE) is not None, body
        fast, full = sparql_update(body, BASE)(current), _rdflib_update(body, BASE)(current)
        assert fast == full, body
        current = fast


@pytest.mark.parametrize("body", [
    "BASE <http://b.example/> INSERT DATA { <a> <b> <c> }",
    "INSERT DATA { GRAPH <g> { <a> <b> <c> } }",
    "INSERT DATA { _:x <b> <c> }",
    "DELETE DATA { <a> <b> [] }",
    "INSERT DATA { <a> <b> ?x }",
    "INSERT DATA { PREFIX x: <y> <a> <b> <c> }",
    "INSERT DATA { @prefix x: <y> . <a> <b> <c> }",
    "DELETE WHERE { ?a ?b ?c }",
    "INSERT DATA { <a> <b> <c> } garbage",
    "INSERT DATA { <a> <b> \"open }",
    "INSERT DATA { <a> <b> \"Chat\"@EN-us }",  # its case is kept as written
])
def test_other_forms_go_to_the_full_parser(body: str) -> None:
    assert data_update.operations(body, BASE) is None


@pytest.mark.parametrize("body", ["INSERT DATA { <a> <b> ?x }", "DELETE DATA { _:x <b> <c> }",
                                  "INSERT DATA { <a> <b> <c> } garbage"])
def test_errors_are_worded_by_the_full_parser(body: str) -> None:
    with pytest.raises(BadPatch):
        sparql_update(body, BASE)

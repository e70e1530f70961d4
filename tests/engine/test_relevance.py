"""The predicates a view can match decide which writes wake it."""

from __future__ import annotations

from views.compile import compile_query
from views.relevance import predicates

EX = "PREFIX : <http://ex/> "


def _preds(q: str) -> set[str] | None:
    found = predicates(compile_query(EX + q).query)
    return None if found is None else {p.removeprefix("http://ex/") for p in found}


def test_every_triple_pattern_counts_exists_and_minus_included() -> None:
    assert _preds("SELECT ?s { ?s :p ?o FILTER NOT EXISTS { ?o :q ?x } }") == {"p", "q"}
    assert _preds("SELECT ?s { ?s a :T OPTIONAL { ?s :q ?x } MINUS { ?s :r ?z } }") == {
        "http://www.w3.org/1999/02/22-rdf-syntax-ns#type", "q", "r"}
    assert _preds("SELECT ?s (COUNT(?o) AS ?n) { { ?s :p ?o } UNION { ?s :q ?o } } "
                  "GROUP BY ?s") == {"p", "q"}
    assert _preds("SELECT ?s { ?s :p ?o BIND(EXISTS { ?s :z 1 } AS ?b) }") == {"p", "z"}


def test_a_variable_predicate_matches_every_change() -> None:
    assert _preds("SELECT ?s { ?s :p ?o . ?o ?any ?x }") is None

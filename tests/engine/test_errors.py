"""Bad queries get precise errors; unsupported ones name their feature."""

from __future__ import annotations

import pytest

from views.compile import compile_query
from views.errors import SparqlSyntaxError, UnsupportedFeature


def test_syntax_error_carries_line_and_column() -> None:
    with pytest.raises(SparqlSyntaxError) as e:
        compile_query("SELECT ?s\nWHERE {\n  ?s ?p \n}")
    assert (e.value.line, e.value.column) >= (1, 1)
    assert "line" in str(e.value) and "column" in str(e.value)


def test_syntax_error_points_at_the_fault() -> None:
    with pytest.raises(SparqlSyntaxError) as e:
        compile_query("SELECT * WHERE { ?s ?p ?o . FILTER(?o >) }")
    assert e.value.line == 1


def test_an_escape_past_the_last_code_point_is_a_syntax_error() -> None:
    """``\\U00110000`` names no character (SPARQL 1.1 §19.2): rdflib's
    escape expansion raised ValueError, a 500 at ``POST /views`` and at a
    SPARQL Update PATCH (found by mutating the W3C queries)."""
    with pytest.raises(SparqlSyntaxError) as e:
        compile_query('SELECT * {\n ?s ?p "a\\U00110000" }')
    assert (e.value.line, e.value.column) == (2, 10)


@pytest.mark.parametrize(("query", "feature"), [
    ("SELECT * { SERVICE <http://e/> { ?s ?p ?o } }", "SERVICE"),
    ("SELECT (NOW() AS ?n) {}", "NOW"),
    ("SELECT (RAND() AS ?n) {}", "RAND"),
    ("SELECT (UUID() AS ?n) {}", "UUID"),
    ("SELECT (BNODE() AS ?n) {}", "BNODE"),
    ("SELECT * { { SELECT ?s { ?s ?p ?o } LIMIT 1 } }", "LIMIT/OFFSET inside a sub-select"),
    ("DESCRIBE <http://e/a>", "DESCRIBE"),
    ("SELECT * { ?s ?p ?o OPTIONAL { ?o ?q ?r FILTER EXISTS { ?r ?p ?s } } }",
     "EXISTS inside an OPTIONAL"),
    ("SELECT (SUM(IF(EXISTS { ?s <http://e/z> 1 }, 1, 0)) AS ?n) { ?s ?p ?o }",
     "EXISTS inside an aggregate"),
])
def test_unsupported_names_the_feature(query: str, feature: str) -> None:
    with pytest.raises(UnsupportedFeature) as e:
        compile_query(query)
    assert feature in e.value.feature


def test_a_query_whose_schemas_explode_is_refused_before_they_are_built() -> None:
    """A group's aggregates that may each be unbound make 2^n schemas: 16 of
    them (SUM over an OPTIONAL variable) are refused at once, a few stay
    well within."""
    from views.limits import QueryTooLarge
    from views.schemas import MAX_SCHEMAS
    sums = " ".join(f"(SUM(?d) AS ?t{i})" for i in range(16))
    query = (f"PREFIX : <http://ex/> SELECT ?s {sums} "
             "WHERE { ?s :b ?o OPTIONAL { ?s :c ?d } } GROUP BY ?s")
    with pytest.raises(QueryTooLarge, match=f"{MAX_SCHEMAS:,}"):
        compile_query(query)
    assert len(compile_query(query.replace(sums, sums[:sums.index("(SUM(?d) AS ?t4)")])
                             ).schemas) == 2 ** 4


@pytest.mark.parametrize("query, expected", [
    # the attack bench's mutant (note 129), made valid (an ungrouped projected
    # variable is a syntax error, note 209): a SAMPLE of a variable no member
    # binds is never bound
    ("PREFIX : <http://ex/> SELECT " + "".join(f"(SAMPLE(?x{i}) AS ?y{i}) " for i in range(16))
     + "?s (COUNT(?o) AS ?n) WHERE { ?s :b ?o OPTIONAL { ?s :c ?d } } GROUP BY ?s",
     [["n", "s"]]),
    # BINDs that cannot err, or always do, add no schema
    ("SELECT * { ?s ?p ?o " + " ".join(f"BIND({i} AS ?c{i})" for i in range(14)) +
     " BIND(?s AS ?a) BIND(?nowhere AS ?b) BIND(COALESCE(?nowhere, 1) AS ?d)"
     " BIND(BOUND(?o) AS ?e) }",
     [["a", "d", "e", "o", "p", "s", *(f"c{i}" for i in range(14))]]),
    # a BIND that may err, and a group's keys and aggregates by what its members bind
    (("SELECT ?s ?z (SAMPLE(?o) AS ?x) (MIN(?d) AS ?m) (COUNT(?d) AS ?n) "
      "{ ?s ?p ?o OPTIONAL { ?o ?p ?d } BIND(STR(?o) AS ?z) } GROUP BY ?s ?z"),
     [["m", "n", "s", "x"], ["m", "n", "s", "x", "z"], ["n", "s", "x"], ["n", "s", "x", "z"]]),
])
def test_schemas_follow_what_the_expressions_can_bind(query: str, expected: list) -> None:
    assert sorted(sorted(s) for s in compile_query(query).schemas) == \
        sorted(sorted(s) for s in expected)

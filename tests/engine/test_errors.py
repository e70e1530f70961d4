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


@pytest.mark.parametrize(("query", "feature"), [
    ("SELECT * { GRAPH ?g { GRAPH ?h { ?s ?p ?o } } }", "GRAPH nested in another GRAPH"),
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
    """Each ungrouped projected variable becomes an aggregate, and a group's
    aggregates may each be unbound: 2^n schemas. A mutant of the attack
    bench with 16 of them took 144 s to compile; now it is refused at once."""
    from views.limits import QueryTooLarge
    from views.schemas import MAX_SCHEMAS
    query = ("PREFIX : <http://ex/> SELECT " + "?x " * 16 + "?s (COUNT(?o) AS ?n) "
             "WHERE { ?s :b ?o OPTIONAL { ?s :c ?d } } GROUP BY ?s")
    with pytest.raises(QueryTooLarge, match=f"{MAX_SCHEMAS:,}"):
        compile_query(query)
    compile_query(query.replace("?x " * 16, "?x " * 4))  # a few stay well within

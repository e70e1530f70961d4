"""A view's results in SPARQL 1.1 Query Results JSON, TSV and CSV, written
from the dictionary's fields (design note 184), read back by pyoxigraph's
own parsers and compared with pyoxigraph's answer to the same query over
the same data: every kind of term (IRIs, blank nodes, simple, language-
tagged and typed literals, text needing escapes), unbound variables, and
both ways a page is made (paged by Postgres; evaluated whole when ORDER BY
holds an expression). Numbers are written in their canonical forms:
pyoxigraph stores a number by its value, so it answers "01"^^xsd:integer
as "1" (two RDF terms; podviews keeps both, design note 46)."""

from __future__ import annotations

import csv
import io
from collections import Counter

import pyoxigraph as ox
import pytest

from tests.api.api_helpers import World, world
from tests.api.test_limits import _shared_view

DATA = """PREFIX : <http://ex/>
PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>
:a :p "plain", "with \\"quotes\\" and a \\\\ backslash", "line\\nbreak\\ttab\\rreturn",
      "chat"@FR-be, 2, 1.5, true, "2002-01-01T00:00:00Z"^^xsd:dateTime,
      "x"^^xsd:string, "é ünïcödé 😀", <http://ex/o>, _:b1 .
:a :q "q" .
_:b2 :p "a blank subject" .
:c :p :a ; :q _:b1 .
"""
SELECT = "PREFIX : <http://ex/> SELECT ?s ?o ?x WHERE { ?s :p ?o OPTIONAL { ?s :q ?x } }"
FORMATS = {"application/sparql-results+json": ox.QueryResultsFormat.JSON,
           "text/tab-separated-values": ox.QueryResultsFormat.TSV}


def _solutions(found: ox.QuerySolutions) -> Counter[tuple[str | None, ...]]:
    """Solutions as rows of terms in N-Triples syntax, blank nodes all one."""
    def term(t: object) -> str | None:
        return None if t is None else "_:" if isinstance(t, ox.BlankNode) else str(t)
    names = [v.value for v in found.variables]
    return Counter(tuple(term(s[n]) for n in names) for s in found)


def _csv_rows(text: str) -> Counter[tuple[str, ...]]:
    return Counter(tuple("_:" if cell.startswith("_:") else cell for cell in row)
                   for row in list(csv.reader(io.StringIO(text)))[1:])


@pytest.mark.parametrize("order", ["", " ORDER BY STR(?o)"], ids=["paged-by-postgres", "evaluated"])
def test_results_in_every_format_are_pyoxigraphs(migrated: str, order: str) -> None:
    store = ox.Store()
    store.load(DATA.encode(), ox.RdfFormat.TURTLE)
    query = SELECT + order
    want = _solutions(store.query(query))  # type: ignore[arg-type]
    assert any(None in row for row in want) and sum(want.values()) == 14
    theirs = store.query(query).serialize(format=ox.QueryResultsFormat.CSV)  # type: ignore[union-attr]
    assert theirs is not None
    with world(migrated) as w:
        view, seq = _shared_view(w, DATA, query)
        for media, parsed in FORMATS.items():
            got = _solutions(ox.parse_query_results(_read(w, view, seq, media), parsed))
            assert got == want, media
        assert _csv_rows(_read(w, view, seq, "text/csv").decode()) == \
            _csv_rows(theirs.decode())


def _read(w: World, view: str, seq: str, media: str) -> bytes:
    r = w.client.get(f"{view}/results", params={"min_seq": seq},
                     headers={"accept": media, **w.as_("consumer")})
    assert r.status_code == 200 and r.headers["content-type"].startswith(media), r.text
    return r.content

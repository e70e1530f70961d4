"""The W3C SPARQL 1.1 syntax tests: the suite's positive and negative syntax
tests of queries and updates, which the evaluation harness (server/tools/w3c.py,
mf:QueryEvaluationTest only) never runs.

A view definition is compiled by ``views.compile.compile_query``: a positive
query test must compile (or be refused by name as ``UnsupportedFeature``: a
feature the engine does not maintain, such as SERVICE), a negative one must
raise ``SparqlSyntaxError`` and nothing else (an AttributeError is a crash, not
a refusal). A positive update test must parse and translate as the PATCH handler's
grammar step does (``views.grammar.parsed``, then rdflib's
``translateUpdate``: the handler's policy refuses LOAD, GRAPH, … after it); a
negative one must be refused by the handler (``patch._translated`` raises
``BadPatch``, a 400).

One case per manifest entry, named by its id (``syntax-query/manifest#test_1``),
so a failure says which test. A missing suite fails, it does not skip: the
tests would otherwise pass by running nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from rdflib import RDF

from server.api.ldp.patch import BadPatch, _translated
from server.tools.paths import W3C as SUITE
from server.tools.w3c import MF, _path, manifest_entries
from views.compile import compile_query
from views.errors import SparqlSyntaxError, UnsupportedFeature
from views.grammar import parsed

KINDS = {  # the manifest's test type: (an update?, a positive test?)
    MF.PositiveSyntaxTest11: (False, True),
    MF.NegativeSyntaxTest11: (False, False),
    MF.PositiveUpdateSyntaxTest11: (True, True),
    MF.NegativeUpdateSyntaxTest11: (True, False),
}


@dataclass(frozen=True)
class SyntaxTest:
    id: str  # relative to the suite: "syntax-query/manifest#test_1"
    file: Path
    update: bool
    positive: bool


def discover(root: Path) -> list[SyntaxTest]:
    """Every syntax test in the manifest.ttl files under ``root``."""
    return [SyntaxTest(name, _path(g.value(entry, MF.action)), update, positive)
            for name, g, entry in manifest_entries(root)
            for kind, (update, positive) in KINDS.items() if (entry, RDF.type, kind) in g]


TESTS = discover(SUITE) if SUITE.is_dir() else []


def test_the_suite_is_there() -> None:
    assert SUITE.is_dir(), f"the W3C suite is not at {SUITE} (../shared beside the checkout)"
    kinds = {(t.update, t.positive) for t in TESTS}
    assert kinds == set(KINDS.values()), "a kind of syntax test was not found"
    assert len({t.id for t in TESTS}) == len(TESTS), "two entries of one id"


def _update(text: str, base: str) -> None:
    from rdflib.plugins.sparql.algebra import translateUpdate

    translateUpdate(parsed(text, update=True), base=base)


@pytest.mark.parametrize("test", [t for t in TESTS if not t.update], ids=lambda t: t.id)
def test_query(test: SyntaxTest) -> None:
    text = test.file.read_text(encoding="utf-8")
    base = test.file.as_uri()
    if test.positive:
        try:
            compile_query(text, base=base)
        except UnsupportedFeature:
            pass  # refused by name: a feature the engine does not maintain
    else:
        with pytest.raises(SparqlSyntaxError):
            compile_query(text, base=base)


@pytest.mark.parametrize("test", [t for t in TESTS if t.update], ids=lambda t: t.id)
def test_update(test: SyntaxTest) -> None:
    text = test.file.read_text(encoding="utf-8")
    base = test.file.as_uri()
    if test.positive:
        _update(text, base)
    else:
        with pytest.raises(BadPatch):
            _translated(text, base)

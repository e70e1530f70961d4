"""The W3C SPARQL 1.1 Update evaluation tests that a resource can hold: each
``mf:UpdateEvaluationTest`` whose data and expected result are a default
graph alone, its request applied as a SPARQL Update PATCH evaluates it
(``patch._evaluated``: the WHERE by the engine, design note 225), the
resource after it isomorphic to the W3C's expected graph (the oracle: none
of our code made it). A request the handler refuses by policy (named graphs,
LOAD, CLEAR, …: a resource is one graph) must be refused as a 400 naming it,
never half-applied; such tests are counted apart, and at least
``MIN_RUN`` run in full so the test cannot pass by running nothing."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from rdflib import RDF, Graph, Namespace
from rdflib.compare import isomorphic

from server.api.ldp.patch import DEFAULT_STEPS, BadPatch, _evaluated, _translated
from server.tools.paths import W3C as SUITE
from server.tools.w3c import MF, _path, manifest_entries
from storage.terms import TermTable

UT = Namespace("http://www.w3.org/2009/sparql/tests/test-update#")
MIN_RUN = 20


@dataclass(frozen=True)
class UpdateTest:
    id: str
    request: Path
    data: Path | None  # the default graph before; None: empty
    result: Path | None  # the default graph after


def discover(root: Path) -> list[UpdateTest]:
    """The update evaluation tests under ``root``."""
    found = []
    for name, g, entry in manifest_entries(root):
        if (entry, RDF.type, MF.UpdateEvaluationTest) in g:
            action, result = g.value(entry, MF.action), g.value(entry, MF.result)
            data, after = g.value(action, UT.data), g.value(result, UT.data)
            found.append(UpdateTest(name, _path(g.value(action, UT.request)),
                                    None if data is None else _path(data),
                                    None if after is None else _path(after)))
    return found


TESTS = discover(SUITE) if SUITE.is_dir() else []


def _graph(path: Path | None) -> Graph:
    g = Graph()
    if path is not None:
        g.parse(path, format="turtle")
    return g


def _refused(test: UpdateTest) -> bool:
    text = test.request.read_text(encoding="utf-8")
    try:
        _translated(text, test.request.as_uri())
    except BadPatch:
        return True
    return False


def test_enough_of_the_suite_runs() -> None:
    assert SUITE.is_dir(), f"the W3C suite is not at {SUITE} (../shared beside the checkout)"
    run = [t for t in TESTS if not _refused(t)]
    assert len(run) >= MIN_RUN, f"only {len(run)} of {len(TESTS)} update tests run"


@pytest.mark.parametrize("test", TESTS, ids=lambda t: t.id)
def test_update(test: UpdateTest) -> None:
    text = test.request.read_text(encoding="utf-8")
    base = test.request.as_uri()
    if _refused(test):
        with pytest.raises(BadPatch, match="named graphs|not allowed"):
            _translated(text, base)
        return
    table = TermTable.of(set(_graph(test.data)))
    before = table.decoded()  # one form per term, as the dictionary holds them
    inserted, deleted = _evaluated(text, base, DEFAULT_STEPS, table)
    got = Graph()
    for t in (before - deleted.decoded()) | inserted.decoded():
        got.add(t)
    assert isomorphic(got, _graph(test.result)), test.id

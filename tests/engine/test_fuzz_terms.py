"""The differential term fuzzer on the in-memory engine (issue 15): each case
(tests/engine/fuzz_terms.py) is maintained incrementally through random
insert/delete batches and compared after every batch with pyoxigraph
evaluating from scratch.

``PODVIEWS_FUZZ_EXAMPLES`` is the number of cases of the whole fuzzer (this
file runs all of them; the pipeline's share is in
tests/maintenance/test_fuzz_pipeline.py); ``PODVIEWS_FUZZ_SEED`` runs a
different, random stream of cases (the default is derandomized, the same
on every run)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, seed, settings

from tests.engine.fuzz_terms import PREFIXES, Case, Changes, cases, check_case, render
from views.compile import compiled
from views.dataset import Dataset
from views.interpret import Maintainer
from views.kset import KSet
from views.plan import plan_of
from views.reference import evaluate

EXAMPLES = int(os.environ.get("PODVIEWS_FUZZ_EXAMPLES", "1500"))
SEED = os.environ.get("PODVIEWS_FUZZ_SEED")


def fuzz_settings(examples: int):  # type: ignore[no-untyped-def]
    """Hypothesis settings of the fuzzer: derandomized unless a seed is given."""
    def apply(f):  # type: ignore[no-untyped-def]
        f = settings(max_examples=max(examples, 1), deadline=None, database=None,
                     derandomize=SEED is None, print_blob=True,
                     suppress_health_check=list(HealthCheck))(f)
        return seed(int(SEED))(f) if SEED is not None else f
    return apply


class InMemory:
    """The case's view maintained by the engine's rules in memory; every
    solution's variables are one of the schemas inferred at compile
    (``views.schemas``, which bounds a view's K-relation tables)."""

    def __init__(self, case: Case) -> None:
        c = compiled(PREFIXES + case.query)
        self.ds = Dataset()
        self.view = Maintainer(plan_of(c.query.pattern), self.ds)
        self.schemas = c.schemas

    def __call__(self, changes: Changes) -> KSet:
        self.view.apply(self.ds.apply(changes))
        seen = {frozenset(dict(m)) for m in self.view.result}
        assert seen <= self.schemas, f"schemas {sorted(map(sorted, seen - self.schemas))} " \
            f"not inferred (inferred: {sorted(map(sorted, self.schemas))})"
        return self.view.result


@fuzz_settings(EXAMPLES)
@given(cases())
def test_memory_engine_agrees_with_pyoxigraph(case: Case) -> None:
    check_case(case, InMemory(case))


@fuzz_settings(EXAMPLES // 3)
@given(cases())
def test_a_constant_spelled_bare_or_in_full_is_one_term(case: Case) -> None:
    """A number or boolean written as its bare token (``-0``, ``+1.50``,
    ``true``) is the term ``"-0"^^xsd:integer`` written in full (SPARQL 1.1
    §19.8): the query with either spelling answers the same, lexical forms
    included, which pyoxigraph (D1: numbers by value) cannot tell. rdflib
    read a signed number in an expression as an operator (``STR(-0)`` was
    ``"0"``, note 209)."""
    ds = Dataset()
    ds.apply([((None, *case.triples[i]), 1) for i in {i for i, _ in case.batches[0]}])
    answers = [evaluate(compiled(PREFIXES + render(case.template, case.pool, True, bare))
                        .query.pattern, ds) for bare in (False, True)]
    assert answers[0] == answers[1], render(case.template, case.pool, True, True)

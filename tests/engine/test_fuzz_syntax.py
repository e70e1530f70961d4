"""The differential syntax fuzzer (tests/engine/fuzz_syntax.py): a query
meaning in three spellings SPARQL 1.1 allows must answer alike on our
engine (lexical forms included) and as pyoxigraph does.

``PODVIEWS_FUZZ_EXAMPLES`` scales the number of cases (default 150 here);
``PODVIEWS_FUZZ_SEED`` runs a random stream instead of the derandomized
one."""

from __future__ import annotations

import os

from hypothesis import given

from tests.engine.fuzz_syntax import Case, cases, check
from tests.engine.test_fuzz_terms import fuzz_settings

EXAMPLES = int(os.environ.get("PODVIEWS_FUZZ_EXAMPLES", "150"))


@fuzz_settings(EXAMPLES)
@given(cases())
def test_spellings_of_one_query_answer_alike(case: Case) -> None:
    check(case)

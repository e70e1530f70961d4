"""The differential property-path fuzzer (tests/engine/fuzz_paths.py) on the
in-memory engine: every case maintained through random insert/delete batches
and compared with pyoxigraph from scratch after every batch.

``PODVIEWS_FUZZ_PATH_EXAMPLES`` sets the number of cases (the default keeps
the suite fast; run thousands locally); ``PODVIEWS_FUZZ_SEED`` runs a
different, random stream of cases."""

from __future__ import annotations

import os

from hypothesis import given

from tests.engine.fuzz_paths import PathCase, check_path_case, path_cases
from tests.engine.test_fuzz_terms import InMemory, fuzz_settings

EXAMPLES = int(os.environ.get("PODVIEWS_FUZZ_PATH_EXAMPLES", "60"))
print(f"path fuzzer: {EXAMPLES} cases")


@fuzz_settings(EXAMPLES)
@given(path_cases())
def test_paths_agree_with_pyoxigraph(case: PathCase) -> None:
    check_path_case(case, InMemory(case))

"""The differential term fuzzer through the pipeline (issue 15): each case's
view registered by a consumer, its batches written to a pod (two resources,
so the pod's default graph counts support), its jobs run by workers on the
SQL executor, its state in Postgres, and the results a reader gets compared
after every batch with pyoxigraph from scratch — and with the view's change
feed, followed from its first snapshot (each job's ΔV, whether the root's
triggers captured it or the rendered statement recorded it, design note
170) (the Spark executor's cases
are in tests/executors/test_spark.py, beside the other Spark tests: one
Spark session warms up once).

Its share of ``PODVIEWS_FUZZ_EXAMPLES``: a 25th through SQL, a 2500th
through Spark (the in-memory engine runs all of them,
tests/engine/test_fuzz_terms.py)."""

from __future__ import annotations

import itertools
from collections import Counter

import sqlalchemy as sa
from hypothesis import given
from rdflib.term import Identifier

from server.api.consents.service import record_grant
from server.api.views.service import register_view
from server.errors import Conflict
from server.maintenance import jobs
from server.maintenance.router import Router
from storage import catalog, pods
from tests.engine.fuzz_paths import PathCase, check_path_case, path_cases
from tests.engine.fuzz_terms import PREFIXES, Case, Changes, cases, check_case
from tests.engine.test_fuzz_paths import EXAMPLES as PATH_EXAMPLES
from tests.engine.test_fuzz_terms import EXAMPLES, fuzz_settings
from tests.maintenance.test_feed import Follower
from views.kset import KSet

_IDS = itertools.count()


class InPipeline:
    """The case's view kept by the pipeline: pod writes, jobs, K-relations."""

    def __init__(self, engine: sa.Engine, case: Case, router: Router) -> None:
        self.engine, self.router, self.case = engine, router, case
        n = next(_IDS)
        with engine.begin() as c:
            owner = pods.create_agent(c, f"urn:fuzz:owner:{n}", "owner", f"o{n}".encode())
            consumer = pods.create_agent(c, f"urn:fuzz:consumer:{n}", "consumer",
                                         f"c{n}".encode())
            self.pod = pods.create_pod(c, f"fuzz-{n}", owner)
            record_grant(c, self.pod, consumer)
            self.view = register_view(c, consumer, "fuzz", PREFIXES + case.query)
        self.held: list[set[tuple]] = [set(), set()]  # two resources of the pod
        self._drain()
        self.feed: Follower | None = Follower(engine, self.view, budget=1_000, key=_exact)
        try:
            self.feed.start()
        except Conflict:  # ASK, LIMIT/OFFSET: no changes to follow
            self.feed = None

    def __call__(self, changes: Changes) -> KSet:
        touched = set()
        for (_, s, p, o), sign in changes:
            i = self.case.triples.index((s, p, o))
            held = self.held[i % 2]  # triples by index parity; the pod's graph counts both
            (held.add if sign > 0 else held.discard)((s, p, o))
            touched.add(i % 2)
        with self.engine.begin() as c:
            for r in sorted(touched):
                pods.put_resource(c, self.pod, f"r{r}", self.held[r])
        self._drain()
        with self.engine.connect() as c:
            got = catalog.view_results(c, self.view)
        if self.feed is None:
            return got
        self.feed.follow()
        assert self.feed.rows == Counter({_exact(dict(m)): k for m, k in got.items()}), \
            "the view's feed, followed, differs from its results"
        return got

    def _drain(self) -> None:
        while jobs.run_one(self.engine, "fuzz", self.router):
            pass
        with self.engine.connect() as c:
            failed = c.execute(sa.text("SELECT last_error FROM jobs WHERE view_id = :v "
                                       "AND status <> 'done'"), {"v": self.view}).all()
        assert failed == [], failed


def _exact(b: dict[str, Identifier]) -> tuple:
    """A binding as the feed and the results give it (the same terms,
    blank nodes included)."""
    return tuple(sorted(b.items()))


SQL = Router(mode="sql", render=True)  # plans that render run as SQL, the others interpreted


@fuzz_settings(EXAMPLES // 25)
@given(case=cases())
def test_sql_executor_agrees_with_pyoxigraph(cases_engine: sa.Engine, case: Case) -> None:
    check_case(case, InPipeline(cases_engine, case, SQL))


@fuzz_settings(max(PATH_EXAMPLES // 5, 1))
@given(case=path_cases())
def test_sql_executor_maintains_paths_like_pyoxigraph(cases_engine: sa.Engine, case: PathCase) -> None:
    """Issue 19: the Closure node with its state in Postgres (a fifth of the
    path fuzzer's cases)."""
    check_path_case(case, InPipeline(cases_engine, case, SQL))

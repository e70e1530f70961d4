"""``podviews bench many-views``: N registered views over one pod, an update
that can change only a few of them (``--touched``). The time to maintain
everything the update woke (the queue drained) is measured against the same
updates with only the affected views registered: irrelevant views should
cost ~0 (issue target: ≤ 3×). Every view equals its from-scratch
evaluation after the last update, and the affected ones after every update."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from rdflib import URIRef

from server.api.views.service import register_view
from server.cli.progress import progress
from server.maintenance import verify
from server.tools.bench.pipeline import (
    bench_pod,
    bench_router,
    checking,
    drain,
    fresh_engine,
    timed_drain,
)
from storage import catalog, pods

EX = "http://bench.example/"
PER_VIEW = 200  # triples of each view's predicates in the base data


@dataclass
class ManyViewsRow:
    views: int
    affected: int
    updates: int
    all_views_ms: float
    affected_only_ms: float
    ratio: float
    jobs_per_update: float
    equal: bool


def _query(i: int) -> str:
    """View i reads predicates p{i} and q{i} only; shapes vary by i."""
    p, q = f"<{EX}p{i}>", f"<{EX}q{i}>"
    return [f"SELECT ?s ?o WHERE {{ ?s {p} ?o }}",
            f"SELECT ?s ?x WHERE {{ ?s {p} ?o OPTIONAL {{ ?o {q} ?x }} }}",
            f"SELECT ?o (COUNT(?s) AS ?n) WHERE {{ ?s {p} ?o }} GROUP BY ?o",
            f"SELECT ?s WHERE {{ ?s {p} ?o FILTER NOT EXISTS {{ ?o {q} ?s }} }}"][i % 4]


def _triples(i: int, start: int, count: int) -> list[tuple]:
    return [(URIRef(f"{EX}s{j}"), URIRef(f"{EX}{'pq'[j % 2]}{i}"), URIRef(f"{EX}s{(j * 7) % 97}"))
            for j in range(start, start + count)]


def _timed(server_url: str, registered: list[int], touched: int, updates: int
           ) -> tuple[list[float], float, bool]:
    engine = fresh_engine(server_url, "many_views")
    router = bench_router("sql")
    with engine.begin() as c:
        pod, consumer = bench_pod(c, "many", {f"base-{i}": _triples(i, 0, PER_VIEW)
                                              for i in range(max(registered) + 1)})
        views = {i: register_view(c, consumer, f"v{i}", _query(i)) for i in registered}
    drain(engine, router)
    checks = checking(engine)
    times, jobs = [], 0
    equal = True
    with progress(f"{len(registered)} views: updates", updates) as advance:
        for u in range(updates):
            with engine.begin() as c:  # one write: 5 triples of each touched view in, 5 out
                for i in range(touched):
                    old = set(_triples(i, 0, PER_VIEW + 5 * u))
                    new = old - set(_triples(i, 5 * u, 5)) | set(_triples(i, PER_VIEW + 5 * u, 5))
                    pods.put_resource(c, pod, f"base-{i}", new)
            ran, took, _ = timed_drain(engine, router)
            jobs += ran
            times.append(took)
            with checks.connect() as c:
                equal &= all(catalog.view_results(c, views[i]) == verify.scratch(c, views[i])
                             for i in range(touched))
            advance()
    with checks.connect() as c:
        equal &= all(catalog.view_results(c, v) == verify.scratch(c, v) for v in views.values())
    checks.dispose()
    engine.dispose()
    return times, jobs / updates, equal


def run(server_url: str, views: int = 100, touched: int = 2, updates: int = 10) -> ManyViewsRow:
    all_ms, jobs, eq_all = _timed(server_url, list(range(views)), touched, updates)
    few_ms, _, eq_few = _timed(server_url, list(range(touched)), touched, updates)
    a, f = statistics.median(all_ms), statistics.median(few_ms)
    return ManyViewsRow(views, touched, updates, round(a, 1), round(f, 1), round(a / f, 2),
                        round(jobs, 1), eq_all and eq_few)

"""``podviews bench batch``: the fixed cost of one maintained small batch
(issue 21: ≤ 2 ms, statements counted and listed). A view over a pod of
1,000 triples (80 per triple of an update when updates are larger,
``size``), its tables analyzed as autovacuum would; each update replaces
the triples of a small resource (ΔG: ``size`` triples in, as many out) and
the worker's loop (``jobs.run_one``) runs the job it wakes. Per view and
path (one rendered statement, or the interpreter): the job's time, p50 and
p90 over the updates after a warm-up, the statements it sends
(SQLAlchemy's cursor events) with the median time of each, and the rest
(Python, the commit). The view equals its from-scratch evaluation after
the last update."""

from __future__ import annotations

import re
import statistics
import time
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from rdflib import URIRef

from server.api.views.service import register_view
from server.cli.progress import progress
from server.executors.sql import render as R
from server.maintenance import jobs, verify
from server.maintenance.router import Router
from server.tools.bench.pipeline import BENCH_LIMITS, bench_pod, drain, fresh_engine
from storage import catalog, pods

EX = "http://bench.example/"
BASE_TRIPLES = 1_000
WARM_UP = 10  # updates run before the timed ones: the session's statements prepared

VIEWS = {
    "one pattern": f"SELECT ?s ?o WHERE {{ ?s <{EX}p> ?o }}",
    "OPTIONAL": f"SELECT ?s ?x WHERE {{ ?s <{EX}p> ?o OPTIONAL {{ ?o <{EX}q> ?x }} }}",
    "COUNT": f"SELECT ?o (COUNT(?s) AS ?n) WHERE {{ ?s <{EX}p> ?o }} GROUP BY ?o",
    "NOT EXISTS": f"SELECT ?s WHERE {{ ?s <{EX}p> ?o FILTER NOT EXISTS {{ ?o <{EX}q> ?x }} }}",
    "MINUS": f"SELECT ?s ?o WHERE {{ ?s <{EX}p> ?o MINUS {{ ?o <{EX}q> ?x }} }}",
}


@dataclass
class BatchRow:
    view: str
    path: str  # "rendered": one statement a batch; "interpreter": the delta program in Python
    jobs: int
    job_ms_p50: float
    job_ms_p90: float
    statements: int  # a job's, the claim included
    statements_ms: float  # their median times, summed
    rest_ms: float  # the job's p50 less its statements: Python and the commit
    listed: str  # each statement, labelled, with its median time (ms)
    equal: bool


# a write's verb and table, or a FROM's table (a row lock's FOR [NO KEY] UPDATE is neither)
_TARGET = re.compile(r"(?<!FOR )(?<!KEY )\b(UPDATE|INSERT INTO|DELETE FROM|FROM)\s+\"?([\w.]+)",
                     re.IGNORECASE)


def label(sql: str) -> str:
    """A statement named by what it does: its first write's verb and table
    (``UPDATE jobs``, inside a CTE too), else the table its outermost query
    reads (``SELECT views``); the rendered statement ``rendered``; a
    prepared statement's ``EXECUTE``, a ``SET``'s setting, else its first
    word."""
    if f"FROM {R.DG} AS " in sql:  # the rendered statement: ΔG's table read in its first CTE
        return "rendered"
    words = sql.split()
    head = words[0].upper() if words else ""
    if head == "SET":
        return " ".join(words[:3])
    if head in ("DO", "EXECUTE", "PREPARE", "DEALLOCATE"):
        return head
    found = [(m.group(1).upper().split()[0], m.group(2).split(".")[-1],
              sql.count("(", 0, m.start()) - sql.count(")", 0, m.start()))
             for m in _TARGET.finditer(sql)]
    writes = [(verb, table) for verb, table, _ in found if verb != "FROM"]
    if writes:
        return " ".join(writes[0])
    if not found:
        return head
    return f"SELECT {min(found, key=lambda f: f[2])[1]}"


def _update(u: int, size: int) -> list[tuple[URIRef, URIRef, URIRef]]:
    """Update ``u``'s triples: new subjects, objects among the base's."""
    return [(URIRef(f"{EX}n{u}_{j}"), URIRef(f"{EX}p"), URIRef(f"{EX}s{(j * 7 + u) % 97}"))
            for j in range(size)]


def _measure(server_url: str, name: str, query: str, rendered: bool, updates: int,
             size: int = 1) -> BatchRow:
    engine = fresh_engine(server_url, "batch")
    router = Router("sql", render=rendered)
    base = [(URIRef(f"{EX}s{j}"), URIRef(f"{EX}{'pq'[j % 2]}"), URIRef(f"{EX}s{(j * 7) % 97}"))
            for j in range(max(BASE_TRIPLES, 80 * size))]
    with engine.begin() as c:
        pod, consumer = bench_pod(c, "batch", {"base": base, "small": _update(-1, size)})
        view = register_view(c, consumer, "v", query)
    drain(engine, router)
    with engine.begin() as c:  # statistics, as autovacuum keeps them: plans for the data
        c.execute(sa.text("ANALYZE"))
    sent: list[tuple[str, float]] = []

    def before(conn: Any, *_: Any) -> None:
        conn.info["bench_t0"] = time.perf_counter()

    def after(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        sent.append((statement, (time.perf_counter() - conn.info.pop("bench_t0")) * 1000))

    sa.event.listen(engine, "before_cursor_execute", before)
    sa.event.listen(engine, "after_cursor_execute", after)
    took: list[float] = []
    listed: list[list[tuple[str, float]]] = []
    ran = 0
    with progress(f"batch: {name}, {'rendered' if rendered else 'interpreter'}",
                  WARM_UP + updates) as advance:
        for u in range(WARM_UP + updates):
            with engine.begin() as c:
                pods.put_resource(c, pod, "small", _update(u, size))
            sent.clear()
            start = time.perf_counter()
            if not jobs.run_one(engine, "bench", router, BENCH_LIMITS):
                raise RuntimeError("the update woke no job")
            ms = (time.perf_counter() - start) * 1000
            job = list(sent)
            while jobs.run_one(engine, "bench", router, BENCH_LIMITS):
                ran += 1  # more than one job: counted, not timed
            if u >= WARM_UP:
                took.append(ms)
                listed.append(job)
            advance()
    sa.event.remove(engine, "before_cursor_execute", before)
    sa.event.remove(engine, "after_cursor_execute", after)
    with engine.begin() as c:
        dead = c.execute(sa.text("SELECT count(*) FROM jobs WHERE status <> 'done'")).scalar()
        equal = not dead and catalog.view_results(c, view) == verify.scratch(c, view)
    engine.dispose()
    common = statistics.mode(len(j) for j in listed)  # the usual job's statements
    same = [j for j in listed if len(j) == common]
    medians = [(label(same[0][i][0]), statistics.median(j[i][1] for j in same))
               for i in range(common)]
    p50 = statistics.median(took)
    spent = sum(ms for _, ms in medians)
    return BatchRow(name, "rendered" if rendered else "interpreter", len(took) + ran,
                    round(p50, 2), round(statistics.quantiles(took, n=10)[-1], 2), common,
                    round(spent, 2), round(p50 - spent, 2),
                    ", ".join(f"{what} {ms:.2f}" for what, ms in medians), equal)


def run(server_url: str, updates: int = 50, size: int = 1) -> list[BatchRow]:
    return [_measure(server_url, name, query, rendered, updates, size)
            for name, query in VIEWS.items() for rendered in (True, False)]

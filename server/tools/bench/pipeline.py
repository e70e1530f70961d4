"""``podviews bench``: measured side by side, printed as tables of ratios.

Scenario ``backfill-bsbm``: one BSBM dataset in a pod; explore query 1, the
path-shaped producer query of the paper's §5.2.3 and a SUM aggregate
registered as views and backfilled by each executor; every result compared
with pyoxigraph's from-scratch answer.

Scenario ``pipeline-bsbm``: BSBM data in a pod, a BSBM explore query as a
view, and the BSBM update stream applied one transaction at a time through
the pipeline (Postgres state, one worker job each). For each dataset size:
backfill time, median maintenance time per update, and the ratio between
sizes — cost must follow the delta, not the data.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
import statistics
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from rdflib import Graph

from server.api.consents.service import record_grant
from server.api.views.service import register_view
from server.cli.progress import progress
from server.maintenance import jobs, verify
from server.maintenance.limits import Limits
from server.maintenance.router import Router
from storage import catalog, db, krel, pods
from storage.migrate import upgrade
from storage.terms import TermTable

BSBM = "http://www4.wiwiss.fu-berlin.de/bizer/bsbm/v01/"
PREFIXES = f"""PREFIX bsbm: <{BSBM}vocabulary/>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>
"""


@dataclass
class Row:
    data: str
    triples: int
    backfill_s: float
    updates: int
    median_update_ms: float
    view_rows: int
    aux_rows: int
    equal: bool


def q1_params(data: Path) -> dict[str, str]:
    """Parameters of explore query 1 drawn from the data (as BSBM draws them
    per dataset), so that the view is not empty."""
    import pyoxigraph as ox

    from server.tools.oracle import ox_solutions

    store = ox.Store()
    with gzip.open(data, "rb") as f:
        store.bulk_load(f.read(), format=ox.RdfFormat.N_TRIPLES)
    q = PREFIXES + """SELECT ?type ?f1 ?f2 (MIN(?v) AS ?low) WHERE {
        ?p a ?type ; bsbm:productFeature ?f1, ?f2 ; bsbm:productPropertyNumeric1 ?v .
        ?type rdfs:subClassOf ?super . FILTER(str(?f1) < str(?f2)) }
        GROUP BY ?type ?f1 ?f2 ORDER BY DESC(COUNT(*)) ?type ?f1 ?f2 LIMIT 1"""
    sol = next(iter(ox_solutions(store, q)))
    low = sol["low"]
    assert isinstance(low, ox.Literal)
    return {"type": str(sol["type"]), "f1": str(sol["f1"]), "f2": str(sol["f2"]),
            "x": str(max(int(low.value) - 1, 0))}


def q1(p: dict[str, str]) -> str:
    return PREFIXES + f"""SELECT DISTINCT ?product ?label WHERE {{
    ?product rdfs:label ?label . ?product a {p['type']} .
    ?product bsbm:productFeature {p['f1']} . ?product bsbm:productFeature {p['f2']} .
    ?product bsbm:productPropertyNumeric1 ?value1 . FILTER (?value1 > {p['x']}) }}"""


PATH = PREFIXES + """SELECT ?feat WHERE {
    ?product1 bsbm:producer ?producer . ?product2 bsbm:producer ?producer .
    ?product2 bsbm:productFeature ?feat . FILTER (?product1 != ?product2) }"""

SUM = PREFIXES + """SELECT ?producer (SUM(?price) AS ?total) (COUNT(?offer) AS ?offers) WHERE {
    ?offer bsbm:product ?product . ?product bsbm:producer ?producer .
    ?offer bsbm:price ?price } GROUP BY ?producer"""

# not the paper's: the rendered MIN and MAX (design note 160), the least and
# greatest of a number and the latest date of each producer's products
EXTREMES = PREFIXES + """PREFIX dc: <http://purl.org/dc/elements/1.1/>
SELECT ?producer (MIN(?v) AS ?low) (MAX(?v) AS ?high) (MAX(?d) AS ?latest) WHERE {
    ?product bsbm:producer ?producer ; bsbm:productPropertyNumeric1 ?v ; dc:date ?d }
    GROUP BY ?producer"""


@dataclass
class BackfillRow:
    query: str
    executor: str
    backfill_s: float
    pyoxigraph_eval_ms: float  # iterating its solutions (oracle.ox_times)
    view_rows: int
    equal: bool


def run_backfill_bsbm(server_url: str, data: Path, executors: list[str]) -> list[BackfillRow]:
    import pyoxigraph as ox

    from server.cli.load import read_triples
    from server.tools.oracle import our_rows, ox_times, oxigraph_rows
    from views.compile import compile_query

    engine = fresh_engine(server_url, "backfill")
    with engine.begin() as c:
        _, consumer = bench_pod(c, "bsbm", {"dataset": read_triples(data)})
    store = ox.Store()
    with gzip.open(data, "rb") as f:
        store.bulk_load(f.read(), format=ox.RdfFormat.N_TRIPLES)
    rows = []
    for name, text in (("Q1", q1(q1_params(data))), ("path §5.2.3", PATH), ("SUM §5.3", SUM)):
        variables = compile_query(text).query.variables
        ox_ms = ox_times(store, text).eval_ms  # the engine's own time
        want = oxigraph_rows(store, text, variables)
        for executor in executors:
            with engine.begin() as c:
                view = register_view(c, consumer, f"{name} {executor}", text)
            t = time.perf_counter()
            jobs.run_one(engine, "bench", bench_router(executor))
            took = time.perf_counter() - t
            with engine.connect() as c:
                status = c.execute(sa.text("SELECT status, last_error FROM jobs WHERE view_id = :v"),
                                   {"v": view}).one()
                if status.status != "done":
                    raise RuntimeError(f"backfill of {name} on {executor}: {status.last_error}")
                got = our_rows(compile_query(text).query, catalog.view_results(c, view), variables)
            rows.append(BackfillRow(name, executor, round(took, 2), round(ox_ms, 1),
                                    sum(got.values()), got == want))
    engine.dispose()
    return rows


def update_stream(path: Path, count: int) -> list[list[tuple]]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        text = f.read()
    out = []
    for chunk in text.split("#__SEP__")[:count]:
        g = Graph()
        g.parse(data=chunk, format="nt")
        out.append(list(g))
    return out


def run_pipeline_bsbm(server_url: str, datasets: list[Path], updates: Path,
                      count: int) -> list[Row]:
    from server.cli.load import read_triples

    stream = update_stream(updates, count)
    rows = []
    for data in datasets:
        engine = fresh_engine(server_url, data.name.split(".")[0].replace("-", "_"))
        triples = read_triples(data)
        with engine.begin() as c:
            pod, consumer = bench_pod(c, "bsbm", {"dataset": triples})
            view = register_view(c, consumer, "q", q1(q1_params(data)))
        router = bench_router()
        t = time.perf_counter()
        jobs.run_one(engine, "bench", router)
        backfill = time.perf_counter() - t
        times = []
        equal = True
        checks = checking(engine)
        with progress(f"{data.name}: updates", len(stream)) as advance:
            for i, tx in enumerate(stream):
                with engine.begin() as c:
                    pods.put_resource(c, pod, f"update-{i}", tx)
                t = time.perf_counter()
                jobs.run_one(engine, "bench", router)
                times.append((time.perf_counter() - t) * 1000)
                with checks.connect() as c:
                    equal = equal and catalog.view_results(c, view) == verify.scratch(c, view)
                advance()
        checks.dispose()
        with engine.connect() as c:
            view_rows = len(catalog.view_results(c, view))
            aux_rows = krel.size(c, view)
        rows.append(Row(data.name, len(triples), round(backfill, 2), len(times),
                        round(statistics.median(times), 1), view_rows, aux_rows, equal))
        engine.dispose()
    return rows


def bench_pod(c: sa.Connection, name: str, resources: Mapping[str, Iterable[tuple] | TermTable],
              consumer: str = "urn:bench:consumer") -> tuple[int, int]:
    """A pod holding these resources (path -> triples) and a consumer it
    consents to: (pod, consumer)."""
    consumer_id = pods.create_agent(c, consumer, "consumer", b"c")
    owner = pods.create_agent(c, "urn:bench:owner", "owner", b"o")
    pod = pods.create_pod(c, name, owner)
    record_grant(c, pod, consumer_id)
    for path, triples in resources.items():
        pods.put_resource(c, pod, path, triples)
    return pod, consumer_id


# The benches measure views a server's default limits stop: the path view of
# bsbm-1000 five times over changes 4.3M rows in one node at its backfill
BENCH_LIMITS = Limits(max_view_rows=100_000_000, max_state_rows=1_000_000_000)


def bench_router(executor: str | None = None, **changes: Any) -> Router:
    """The router a worker runs with this process's settings (``PODVIEWS_*``:
    SQL rendering by the view's size and statement, Spark's thresholds), its
    executor forced to ``executor`` when given and ``changes`` made: a bench
    measures the placement a deployment picks, where ``Router()``'s own
    defaults turn SQL rendering off (design note 201)."""
    from server.config import Settings

    router = Settings().router()
    return dataclasses.replace(router, mode=executor or router.mode, **changes)


def checking(engine: sa.Engine) -> sa.Engine:
    """An engine for a bench's checks between its timed jobs, on sessions of
    its own: on the jobs' session (the pool hands back the one used last)
    the checks' reads evicted, and their rollback dropped, every statement
    the jobs had prepared, which a worker keeps (design note 203)."""
    return sa.create_engine(engine.url)


def drain(engine: sa.Engine, router: Router) -> int:
    """Run every due job, within ``BENCH_LIMITS``; how many ran. A job that
    failed is an error."""
    return timed_drain(engine, router)[0]


def timed_drain(engine: sa.Engine, router: Router) -> tuple[int, float, float]:
    """``drain``: how many jobs ran, the time they took (ms, from the first
    claim to the last job's commit: the views are fresh then; 0.0 when the
    write queued none), and the time of the poll that then found the queue
    empty (ms: a worker's, not the update's, cost; the benches until
    session 23 counted it in the first). The bench's own check that none
    failed comes after, untimed."""
    ran = 0
    start = last = time.perf_counter()
    while jobs.run_one(engine, "bench", router, BENCH_LIMITS):
        ran += 1
        last = time.perf_counter()
    end = time.perf_counter()
    took, poll = (last - start) * 1000, (end - last) * 1000
    with engine.begin() as c:  # committed: a rollback drops the session's prepared statements
        dead = c.execute(sa.text("SELECT kind, last_error FROM jobs WHERE status <> 'done'")).all()
    if dead:
        raise RuntimeError(f"a maintenance job failed: {dead[0].kind}: {dead[0].last_error}")
    return ran, took, poll


def fresh_engine(server_url: str, name: str) -> sa.Engine:
    """A worker's engine (``db.worker_engine``: a bench stands for a worker)
    on a new, migrated database (``fresh_database``)."""
    return db.worker_engine(fresh_database(server_url, name))


def fresh_database(server_url: str, name: str) -> str:
    """A new, migrated database on ``server_url``, named after ``name`` and
    this checkout: two checkouts benching on one server do not drop each
    other's database; a checkout's next run replaces its own."""
    admin = sa.create_engine(server_url, isolation_level="AUTOCOMMIT")
    checkout = hashlib.sha1(str(Path(__file__).resolve().parents[3]).encode()).hexdigest()[:6]
    db = f"podviews_bench_{name}_{checkout}"
    with admin.connect() as c:
        c.execute(sa.text(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)'))
        c.execute(sa.text(f'CREATE DATABASE "{db}"'))
    admin.dispose()
    url = sa.make_url(server_url).set(database=db).render_as_string(hide_password=False)
    upgrade(url)
    return url


def print_table(rows: list[Row], as_json: bool) -> None:
    if as_json:
        print(json.dumps({"rows": [asdict(r) for r in rows]}, indent=1))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title="pipeline-bsbm: maintenance through the SQL-state pipeline")
    for col in ("data", "triples", "backfill s", "updates", "median update ms", "view rows",
                "aux rows", "equal"):
        table.add_column(col)
    for r in rows:
        table.add_row(r.data, f"{r.triples:,}", str(r.backfill_s), str(r.updates),
                      str(r.median_update_ms), str(r.view_rows), str(r.aux_rows), str(r.equal))
    Console().print(table)
    if len(rows) == 2:
        ratio = rows[1].median_update_ms / rows[0].median_update_ms
        print(f"per-update cost ratio {rows[1].data} / {rows[0].data}: {ratio:.2f}")

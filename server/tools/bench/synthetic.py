"""``podviews bench paper-synthetic``: the counting paper's §5.2.1 experiment.

Four blobs of N nodes; a fraction p of the N² possible edges between
consecutive blobs; one update inserting 50 random new edges and deleting 50
existing ones. The path-3 query (with projection) and a star query are
maintained by each executor asked for — the engine in memory, or through the
pipeline (a pod in Postgres, the SQL or Spark executor; the maintenance job
timed, the write not) — and compared with our own from-scratch evaluation
and with pyoxigraph from scratch, on the same data.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

import pyoxigraph as ox
from rdflib import URIRef

from server.api.views.service import register_view
from server.maintenance import verify
from server.tools.bench.pipeline import bench_pod, bench_router, drain, fresh_engine, timed_drain
from server.tools.oracle import our_rows, ox_times, oxigraph_rows
from storage import catalog, krel, pods
from views.compile import compile_query
from views.dataset import Dataset
from views.interpret import Maintainer, evaluate

EX = "http://ex/"
LINK = URIRef(EX + "link")
QUERIES = {
    "path-3": "PREFIX : <http://ex/> SELECT ?x ?y WHERE { ?x :link ?z1 . ?z1 :link ?z2 . "
              "?z2 :link ?y }",
    "star-3": "PREFIX : <http://ex/> SELECT ?x WHERE { ?x :link ?a . ?x :link ?b . "
              "?x :link ?c }",
}


@dataclass
class SyntheticRow:
    query: str
    executor: str
    n: int
    p: float
    edges: int
    incremental_ms: float
    scratch_ms: float
    pyoxigraph_eval_ms: float  # iterating its solutions (oracle.ox_times)
    pyoxigraph_json_ms: float  # its SPARQL JSON results
    speedup_vs_scratch: float
    speedup_vs_pyoxigraph: float  # pyoxigraph_eval_ms / incremental_ms
    aux_rows: int
    view_rows: int
    equal: bool


@dataclass
class Maintained:
    """One executor's run of one query: the update's maintenance time, our
    from-scratch time afterwards, and the maintained view."""

    incremental_ms: float
    scratch_ms: float
    view: dict  # the maintained K-set
    aux_rows: int
    equal_to_scratch: bool


def graph(n: int, p: float, rng: random.Random) -> set[tuple]:
    edges = set()
    for layer in range(3):
        for i in range(n):
            for j in range(n):
                if rng.random() < p:
                    edges.add((URIRef(f"{EX}{layer}/{i}"), LINK, URIRef(f"{EX}{layer + 1}/{j}")))
    return edges


def update(edges: set[tuple], n: int, rng: random.Random, k: int = 50) -> list[tuple]:
    """k random new edges (+1) and k random existing ones (-1)."""
    inserts: set[tuple] = set()
    while len(inserts) < k:
        layer = rng.randrange(3)
        e = (URIRef(f"{EX}{layer}/{rng.randrange(n)}"), LINK,
             URIRef(f"{EX}{layer + 1}/{rng.randrange(n)}"))
        if e not in edges:
            inserts.add(e)
    deletes = rng.sample(sorted(edges), k)
    return [((None, *e), 1) for e in inserts] + [((None, *e), -1) for e in deletes]


def run(n: int, p: float, seed: int = 0, executors: tuple[str, ...] = ("memory",),
        server_url: str | None = None) -> list[SyntheticRow]:
    """``executors``: "memory", or "sql"/"spark"/"auto" through the pipeline
    on ``server_url`` (a Postgres server where a scratch database is made)."""
    rng = random.Random(seed)
    edges = graph(n, p, rng)
    changes = update(edges, n, rng)
    after = (edges | {q[1:] for q, s in changes if s > 0}) - {q[1:] for q, s in changes if s < 0}
    store = ox.Store()
    store.bulk_extend(ox.Quad(*(ox.NamedNode(str(x)) for x in t)) for t in after)  # type: ignore[misc]
    rows = []
    for executor in executors:
        runs = _in_memory(edges, changes) if executor == "memory" else \
            _pipeline(server_url, executor, edges, after)  # type: ignore[arg-type]
        for name, text in QUERIES.items():
            r, q = runs[name], compile_query(text).query
            oxi = ox_times(store, text)
            inc = r.incremental_ms
            rows.append(SyntheticRow(
                name, executor, n, p, len(edges), round(inc, 1), round(r.scratch_ms, 1),
                round(oxi.eval_ms, 1), round(oxi.json_ms, 1),
                round(r.scratch_ms / inc, 1) if inc else 0.0,
                round(oxi.eval_ms / inc, 1) if inc else 0.0, r.aux_rows, len(r.view),
                r.equal_to_scratch and our_rows(q, r.view, q.variables) == oxigraph_rows(
                    store, text, q.variables)))
    return rows


def _in_memory(edges: set[tuple], changes: list[tuple]) -> dict[str, Maintained]:
    out = {}
    for name, text in QUERIES.items():
        compiled = compile_query(text)
        ds = Dataset()
        ds.apply(((None, *e), 1) for e in edges)
        view = Maintainer(compiled.plan, ds)  # backfill, not timed
        t = time.perf_counter()
        view.apply(ds.apply(changes))
        inc = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        scratch = evaluate(compiled.plan, ds)
        scr = (time.perf_counter() - t) * 1000
        out[name] = Maintained(inc, scr, view.result, view.stored_rows(), view.result == scratch)
    return out


def _pipeline(server_url: str, executor: str, edges: set[tuple],
              after: set[tuple]) -> dict[str, Maintained]:
    """Each view alone over a pod holding the edges; the update is one write,
    maintained by the view's one job."""
    out = {}
    for name, text in QUERIES.items():
        engine = fresh_engine(server_url, f"synthetic_{executor}")
        router = bench_router(executor)
        with engine.begin() as c:
            pod, consumer = bench_pod(c, "synthetic", {"edges": edges})
            view = register_view(c, consumer, name, text)
        drain(engine, router)  # the backfill, not timed
        with engine.begin() as c:
            pods.put_resource(c, pod, "edges", after)
        inc = timed_drain(engine, router)[1]
        with engine.connect() as c:
            got = catalog.view_results(c, view)
            t = time.perf_counter()
            want = verify.scratch(c, view)
            scr = (time.perf_counter() - t) * 1000
            aux = krel.size(c, view)
        out[name] = Maintained(inc, scr, got, aux, got == want)
        engine.dispose()
    return out

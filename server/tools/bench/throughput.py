"""``podviews bench throughput``: a stream of small pod PATCHes through a real
``podviews serve`` process with 10 registered views. Reports the sustained
rate of triple changes (from the first PATCH until every view has caught up
with the last) and freshness: from a PATCH's answer to the moment a view
reflects it (``GET …/results?min_seq=``), sampled on one view per PATCH in
turn, p50 and p99. One writer sends its PATCHes one at a time, so its rate is
bounded by a PATCH's latency; ``writers`` clients, each writing a document
of its own in the pod (their triples disjoint) at an equal share of the
rate, measure what the server sustains under concurrent writes (design note
187). The views are ready (backfilled, the consent applied, nothing
pending) before the first PATCH: freshness is the maintenance of a stream,
not ten backfills racing its first second (design note 144)."""

from __future__ import annotations

import os
import statistics
import subprocess
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import httpx
import sqlalchemy as sa

from server.maintenance import verify
from server.tools.bench.pipeline import fresh_database
from server.tools.process import cpu_seconds, serving, working

ADMIN = "bench-admin-token"
EX = "PREFIX : <http://ex/>\n"
VIEWS = [
    "SELECT ?s ?o WHERE { ?s :p ?o }",
    "SELECT ?s (COUNT(?o) AS ?n) WHERE { ?s :p ?o } GROUP BY ?s",
    "SELECT ?s WHERE { ?s :p ?o FILTER NOT EXISTS { ?s :q ?x } }",
    "SELECT ?s ?x WHERE { ?s :p ?o OPTIONAL { ?s :q ?x } }",
    "SELECT ?a ?c WHERE { ?a :p ?b . ?b :q ?c }",
    "SELECT (SUM(?o) AS ?total) WHERE { ?s :p ?o FILTER(isNumeric(?o)) }",
    "SELECT DISTINCT ?o WHERE { ?s :q ?o }",
    "SELECT ?s WHERE { { ?s :p 1 } UNION { ?s :q 1 } }",
    "SELECT ?s WHERE { ?s :p ?o MINUS { ?s :r ?z } }",
    "SELECT ?s ?m WHERE { ?s :r ?m FILTER(?m > 5) }",
]


@dataclass
class ThroughputRow:
    patches: int
    writers: int
    target_per_s: float
    achieved_patch_per_s: float
    triple_changes_per_s: float
    freshness_p50_ms: float
    freshness_p99_ms: float
    caught_up_s: float
    equal: bool  # every view equals its from-scratch evaluation at the end
    # % of one core each used over the stream (None without /proc): where
    # the two cores go, so that a bound is read off the run (design note 187)
    cpu_api_pct: float | None = None
    cpu_workers_pct: float | None = None
    cpu_postgres_pct: float | None = None  # the backends connected to the bench's database
    cpu_bench_pct: float | None = None  # this process: the writers and the probes


def _patch(i: int, size: int = 4, writer: int = 0) -> str:
    """Every PATCH inserts ``size`` triples (a multiple of 4) and deletes
    those of its writer's PATCH 8 before; the triples of two writers are
    disjoint (the first writer's names are the bench's from before writers)."""
    def name(x: int) -> str:
        return f":s{x}" if writer == 0 else f":w{writer}s{x}"

    def triples(j: int) -> str:
        out = []
        for g in range(j * size // 4, (j + 1) * size // 4):
            s = name(g % 200)
            out.append(f"{s} :p {g % 10} . {s} :q {name((g * 7) % 200)} . {s} :r {g % 9} . "
                       f"{name(g)} :p {name(g % 50)} .")
        return " ".join(out)
    delete = f"DELETE DATA {{ {triples(i - 8)} }} ;\n" if i >= 8 else ""
    return EX + delete + f"INSERT DATA {{ {triples(i)} }}"


READY_WITHIN = 120.0  # seconds the views have to be ready before the stream


def run(server_url: str, patches: int = 500, rate: float = 50.0,
        worker_processes: int = 1, size: int = 4, writers: int = 1) -> ThroughputRow:
    """The API process serves only; maintenance runs in ``worker_processes``
    `podviews worker` processes beside it (the compose and Helm shape: on
    one process the workers' Python competes with the API's for the GIL)."""
    url = fresh_database(server_url, "throughput")
    env = {"PODVIEWS_DATABASE_URL": url,
           "PODVIEWS_ADMIN_TOKEN": ADMIN, "PODVIEWS_EXECUTOR": "sql", "PODVIEWS_WORKERS": "0"}
    server_log = os.environ.get("PODVIEWS_BENCH_LOG", os.devnull)  # the server's own log
    api: list[subprocess.Popen] = []  # type: ignore[type-arg]
    workers: list[subprocess.Popen] = []  # type: ignore[type-arg]
    engine = sa.create_engine(url)
    with open(server_log, "wb") as log, serving(env, log, started=api) as base, \
            working(env, worker_processes, log, started=workers):
        owner, consumer, views = _setup(base)
        groups = {"api": [p.pid for p in api], "workers": [p.pid for p in workers],
                  "postgres": _backends(engine), "bench": [os.getpid()]}
        before = {pid: cpu_seconds(pid) for pids in groups.values() for pid in pids}
        row = _stream(owner, consumer, views, patches, rate, size, writers)
        groups["postgres"] = sorted(set(groups["postgres"]) | set(_backends(engine)))
        for k, pids in groups.items():
            # a process gone meanwhile is left out; a backend new since counts from 0
            used = {pid: t for pid in pids if (t := cpu_seconds(pid)) is not None}
            if used:
                spent = sum(t - (before.get(pid) or 0.0) for pid, t in used.items())
                setattr(row, f"cpu_{k}_pct", round(100 * spent / row.caught_up_s))
    with engine.connect() as c:
        row.equal = all(differ == 0 for _, _, differ in verify.consistency(c))
    engine.dispose()
    return row


def _backends(engine: sa.Engine) -> list[int]:
    """The Postgres backends connected to the bench's database (on this
    machine: their CPU is read from /proc), this query's own left out."""
    with engine.connect() as c:
        return [int(pid) for pid in c.execute(sa.text(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()")).scalars()]


def _setup(base: str) -> tuple[httpx.Client, httpx.Client, list[str]]:
    admin = httpx.Client(base_url=base, headers={"authorization": f"Bearer {ADMIN}"})
    tokens = {}
    for who in ("owner", "consumer"):
        r = admin.post("/admin/agents", json={"webid": f"urn:bench:{who}", "role": who})
        r.raise_for_status()
        tokens[who] = r.json()["token"]
    admin.post("/admin/pods", json={"name": "stream", "owner": "urn:bench:owner"}).raise_for_status()
    owner, consumer = (httpx.Client(base_url=base, timeout=60, headers={
        "authorization": f"Bearer {tokens[w]}"}) for w in ("owner", "consumer"))
    views = []
    for i, q in enumerate(VIEWS):
        r = consumer.post("/views", json={"name": f"v{i}", "query": EX + q})
        r.raise_for_status()
        views.append(r.headers["location"])
    owner.post("/admin/consents", json={"pod": "stream", "consumer": "urn:bench:consumer"}
               ).raise_for_status()
    deadline = time.monotonic() + READY_WITHIN
    for view in views:  # each backfilled and its consent applied: the stream meets ready views
        while (state := consumer.get(view).json())["status"] != "ready" or state["pending"]:
            if time.monotonic() > deadline:
                raise RuntimeError(f"view {view} not ready within {READY_WITHIN} s: {state}")
            time.sleep(0.05)
    return owner, consumer, views


def _stream(owner: httpx.Client, consumer: httpx.Client, views: list[str], patches: int,
            rate: float, size: int, writers: int) -> ThroughputRow:
    freshness: list[float] = []
    seqs: list[int] = []
    lock = threading.Lock()

    def watch(view: str, seq: int, accepted: float) -> None:
        r = consumer.get(f"{view}/results", params={"min_seq": seq, "wait": 60})
        r.raise_for_status()
        with lock:
            freshness.append((time.perf_counter() - accepted) * 1000)

    def write(writer: int) -> None:
        """PATCH number n of the stream is writer n % writers's, due at n / rate."""
        for n in range(writer, patches, writers):
            time.sleep(max(0.0, start + n / rate - time.perf_counter()))
            r = owner.patch(f"/pods/stream/data{writer or ''}",
                            content=_patch(n // writers, size, writer),
                            headers={"content-type": "application/sparql-update"})
            r.raise_for_status()
            accepted = time.perf_counter()
            seq = int(r.headers["podviews-seq"])
            with lock:
                seqs.append(seq)
            watched.append(pool.submit(watch, views[n % len(views)], seq, accepted))

    watched: list[Future[None]] = []
    with ThreadPoolExecutor(max_workers=16) as pool, \
            ThreadPoolExecutor(max_workers=writers) as clients:
        start = time.perf_counter()
        for f in [clients.submit(write, w) for w in range(writers)]:
            f.result()
        sent = time.perf_counter() - start
        for f in watched:
            f.result()
    last = max(seqs)
    for view in views:  # every view has caught up with the last change
        consumer.get(f"{view}/results", params={"min_seq": last, "wait": 60}).raise_for_status()
    done = time.perf_counter() - start
    # each writer's first 8 PATCHes only insert
    changes = sum(size if n // writers < 8 else 2 * size for n in range(patches))
    q = statistics.quantiles(freshness, n=100)
    return ThroughputRow(patches, writers, rate, round(patches / sent, 1),
                         round(changes / done, 1), round(statistics.median(freshness), 1),
                         round(q[98], 1), round(done, 1), False)

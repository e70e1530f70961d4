"""``podviews bench paper-bsbm``: the counting paper's BSBM experiment
(§5.2.2–5.3) through the pipeline, side by side in one run.

For each query — explore queries 1–4 (parameters drawn from the data so the
results are not empty), the path-shaped producer query of §5.2.3 and the SUM
aggregate of §5.3 — a view is registered and backfilled on a pod holding the
data, then updates are applied one at a time as the paper does: delete every
triple of the products in the result, re-insert them, insert and delete an
irrelevant product, then transactions of the BSBM update stream (taken out
again after the query, so every query's updates change the same data: before
session 15 they stayed, and the later queries' BSBM updates changed nothing
and timed an empty queue). Per update:
the maintenance job's time on the chosen executor, and pyoxigraph answering
the query from scratch on the same data — evaluating it (iterating its
solutions, no Python term built) and serialising its SPARQL JSON results
itself (``oracle.ox_times``); after every update the maintained view (its
full solution multiset: ORDER BY/LIMIT are applied when read) is compared
with pyoxigraph's, outside the timings. Our read of the results as SPARQL
JSON and our own from-scratch evaluation are timed once per query, after its
updates (the data then differs from the start by the update stream alone).
Every speed-up is a ratio of two times of this run (``PaperRow``).

The pod's data is spread over 256 resources by subject, so a write touches
the resources of the products it changes, not the whole dataset; the write
itself is not part of the maintenance time.

``--scale N`` runs the same experiment on the dataset N times over
(``scaled``): the issue's "cost follows the data" check, with the growth of
each update kind's cost printed against the unscaled run of the same
invocation.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import statistics
import time
from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

import pyoxigraph as ox
import sqlalchemy as sa
from rdflib import RDF, RDFS, Literal, URIRef

from server.api.auth import Principal
from server.api.views.formats import select_json
from server.api.views.service import Results, read, register_view
from server.cli.progress import progress
from server.maintenance import jobs, verify
from server.maintenance.router import Router
from server.tools import paths
from server.tools.bench.pipeline import (
    BSBM,
    EXTREMES,
    PATH,
    PREFIXES,
    SUM,
    bench_pod,
    bench_router,
    drain,
    fresh_engine,
    q1_params,
    timed_drain,
    update_stream,
)
from server.tools.oracle import OxTimes, our_rows, ox_quad, ox_solutions, ox_times, oxigraph_rows
from storage import catalog, krel, pods, views_repo
from views.compile import compile_query

QUERIES_DIR = paths.BSBM / "explore-queries"
VOCAB = BSBM + "vocabulary/"
BUCKETS = 256
# the resources of producers, vendors and rating sites (their products,
# offers, reviews, reviewers …); product types, features and the vocabulary
# are shared by every copy of a scaled dataset
_OWNED = BSBM + "instances/dataFrom"


def scaled(triples: Collection[tuple], times: int) -> Collection[tuple]:
    """The dataset ``times`` times over, as BSBM's generator grows one: more
    producers, vendors and rating sites with as many products, offers and
    reviews each, over the same product types and features. Copy 0 is the
    data itself (the update stream applies to it); copy c renames every
    owned resource ``…/instances/dataFrom…`` to ``…/instances/copy<c>/dataFrom…``."""
    if times == 1:
        return triples
    out = set(triples)
    for c in range(1, times):
        def rename(t: object, c: int = c) -> object:
            if isinstance(t, URIRef) and t.startswith(_OWNED):
                return URIRef(f"{BSBM}instances/copy{c}/dataFrom{t[len(_OWNED):]}")
            return t
        out.update((rename(s), p, rename(o)) for s, p, o in triples)
    return out


@dataclass
class PaperRow:
    """One query's run. Every ratio is of two times measured side by side in
    this run: pyoxigraph evaluating the query (iterating its solutions) over
    our maintenance of one update; pyoxigraph answering it as SPARQL JSON
    over our maintenance plus a read of the results as SPARQL JSON; our
    engine from scratch over our maintenance."""

    query: str
    data: str
    executor: str
    updates: int
    incremental_ms: float  # median over the updates of their jobs' time (timed_drain)
    read_json_ms: float  # our results read as SPARQL JSON, once, after the updates
    pyoxigraph_eval_ms: float  # median over the updates
    pyoxigraph_json_ms: float  # median over the updates
    scratch_ms: float  # our engine, from scratch, once
    speedup_vs_pyoxigraph: float  # pyoxigraph_eval_ms / incremental_ms
    speedup_json: float  # pyoxigraph_json_ms / (incremental_ms + read_json_ms)
    speedup_vs_scratch: float  # scratch_ms / incremental_ms
    aux_rows: int
    view_rows: int
    equal: bool
    data_triples: int = 0  # the pod's triples after the updates (the data's size)
    by_update: dict[str, float] = field(default_factory=dict)  # kind -> ms
    pyoxigraph_by_update: dict[str, float] = field(default_factory=dict)  # kind -> eval ms
    changed_by_update: dict[str, int] = field(default_factory=dict)  # kind -> triples changed
    jobs_by_update: dict[str, int] = field(default_factory=dict)  # kind -> jobs run
    placement: str = ""  # where the view's batches ran, as GET /views/{id} says
    poll_ms: float = 0.0  # median over the updates: the worker's poll finding no job after them
    # kind -> ms of its first round alone: the process's first batch of that kind, whose
    # statement is planned then (note 200); by_update is the median of every round
    first_by_update: dict[str, float] = field(default_factory=dict)


def _value(t: object) -> str:
    assert t is not None and hasattr(t, "value"), "unbound"
    return str(t.value)


def _one(store: ox.Store, query: str) -> dict[str, str]:
    result = ox_solutions(store, PREFIXES + query)
    sol = next(iter(result))
    return {v.value: (f"<{t.value}>" if isinstance(t, ox.NamedNode) else t.value)
            for v in result.variables if (t := sol[v]) is not None}


def parameters(store: ox.Store, data: Path) -> dict[str, str]:
    """Explore-query parameters with non-empty results on this data."""
    p = q1_params(data)
    p["type"], p["f1"], p["f2"] = (x if x.startswith("<") else f"<{x}>"
                                   for x in (p["type"], p["f1"], p["f2"]))
    b = _one(store, f"""SELECT (MIN(?v1) AS ?lo1) (MAX(?v3) AS ?hi3) (MIN(?v2) AS ?lo2) WHERE {{
        ?p a {p['type']} ; bsbm:productFeature {p['f1']} ; bsbm:productPropertyNumeric1 ?v1 ;
           bsbm:productPropertyNumeric2 ?v2 ; bsbm:productPropertyNumeric3 ?v3 }}""")
    f3 = _one(store, f"""SELECT ?f3 WHERE {{ ?p a {p['type']} ; bsbm:productFeature {p['f1']},
        ?f3 FILTER(?f3 != {p['f1']} && ?f3 != {p['f2']}) }} ORDER BY ?f3 LIMIT 1""")
    lacking = _one(store, f"""SELECT ?f WHERE {{ ?p a {p['type']} ;
        bsbm:productFeature {p['f1']}, ?f . ?q a {p['type']} ; bsbm:productFeature {p['f1']} .
        FILTER NOT EXISTS {{ ?q bsbm:productFeature ?f }} }} ORDER BY ?f LIMIT 1""")
    xyz = _one(store, """SELECT ?p WHERE { ?p bsbm:productPropertyTextual4 ?t ;
        bsbm:producer ?pr ; <http://purl.org/dc/elements/1.1/publisher> ?pr ; rdfs:comment ?c ;
        bsbm:productFeature ?f . ?f rdfs:label ?fl } ORDER BY ?p LIMIT 1""")
    return {**p, "x3": str(int(float(b["lo1"])) - 1), "y3": str(int(float(b["hi3"])) + 1),
            "y4": str(int(float(b["lo2"])) - 1), "f3": f3["f3"], "xyz": xyz["p"],
            "f2q3": lacking["f"]}  # Q3 keeps products without it: some lack it


def queries(p: dict[str, str]) -> dict[str, str]:
    def explore(n: int, **subst: str) -> str:
        text = (QUERIES_DIR / f"query{n}.txt").read_text()
        for k, v in subst.items():
            text = text.replace(f"%{k}%", v)
        return text

    return {
        "Q1": explore(1, ProductType=p["type"], ProductFeature1=p["f1"],
                      ProductFeature2=p["f2"], x=p["x"]),
        "Q2": explore(2, ProductXYZ=p["xyz"]),
        "Q3": explore(3, ProductType=p["type"], ProductFeature1=p["f1"],
                      ProductFeature2=p["f2q3"], x=p["x3"], y=p["y3"]),
        "Q4": explore(4, ProductType=p["type"], ProductFeature1=p["f1"],
                      ProductFeature2=p["f2"], ProductFeature3=p["f3"], x=p["x"], y=p["y4"]),
        "path §5.2.3": PATH,
        "SUM §5.3": SUM,
        "MIN/MAX": EXTREMES,
    }


# products whose triples the delete/re-insert updates remove and restore
TOUCHED = {
    "Q2": None,  # its one product
    "path §5.2.3": "SELECT DISTINCT ?product WHERE { ?product bsbm:producer ?x }",
    "SUM §5.3": "SELECT DISTINCT ?product WHERE { ?o bsbm:product ?product }",
    "MIN/MAX": "SELECT DISTINCT ?product WHERE { ?product bsbm:producer ?x }",
}


def _unsliced(text: str) -> str:
    """The query without ORDER BY/LIMIT/OFFSET: the view's whole solution
    multiset, which is what is maintained (slicing happens on read)."""
    return re.sub(r"\bORDER\s+BY\b[\s\S]*$|\bLIMIT\s+\d+[\s\S]*$|\bOFFSET\s+\d+[\s\S]*$", "",
                  text, flags=re.IGNORECASE)


class Pod:
    """The dataset as a pod of 256 resources (by subject), kept equal to a
    pyoxigraph store."""

    def __init__(self, engine: sa.Engine, triples: Collection[tuple], consumer_name: str) -> None:
        self.engine = engine
        self.parts: dict[str, set[tuple]] = defaultdict(set)
        self.store = ox.Store()
        self.store.bulk_extend(ox_quad(t) for t in triples)
        for t in triples:
            self.parts[self._part(t[0])].add(t)
        with pods.loading(engine) as c:  # committed and settled as `podviews load` does
            self.pod, self.consumer = bench_pod(c, "bsbm", self.parts, consumer_name)

    @staticmethod
    def _part(s: object) -> str:
        return f"part-{hashlib.sha1(str(s).encode()).digest()[0] % BUCKETS:02x}"

    def change(self, add: set[tuple], remove: set[tuple]) -> None:
        touched = {self._part(t[0]) for t in add | remove}
        for t in remove:
            self.parts[self._part(t[0])].discard(t)
            self.store.remove(ox_quad(t))
        for t in add:
            self.parts[self._part(t[0])].add(t)
            self.store.add(ox_quad(t))
        with self.engine.begin() as c:
            for name in sorted(touched):
                pods.put_resource(c, self.pod, name,
                                                                self.parts[name])

    def holds(self, t: tuple) -> bool:
        return t in self.parts[self._part(t[0])]

    def subjects(self, products: list[str]) -> set[tuple]:
        want = {URIRef(p) for p in products}
        return {t for name in {self._part(p) for p in want} for t in self.parts[name]
                if t[0] in want}


def _irrelevant() -> set[tuple]:
    p = URIRef("urn:bench:irrelevant-product")
    return {(p, RDF.type, URIRef("urn:bench:NoSuchType")), (p, RDFS.label, Literal("unrelated"))}


def run(server_url: str, data: Path, updates: Path, count: int, executors: list[str],
        only: list[str] | None = None, render: bool = False, scale: int = 1,
        rounds: int = 1) -> list[PaperRow]:
    from server.cli.load import read_triples

    rows = []
    triples = scaled(read_triples(data), scale)
    stream = update_stream(updates, count)
    name = data.name.removesuffix(".nt.gz") + (f"×{scale}" if scale > 1 else "")
    tag = data.name.split(".")[0].replace("-", "_") + (f"_x{scale}" if scale > 1 else "")
    setups = []  # each executor its own database and pod, all of the same data
    for executor in executors:
        engine = fresh_engine(server_url, f"paper_{tag}_{executor}")
        setups.append((executor, engine, Pod(engine, triples, f"urn:bench:consumer:{executor}")))
    params = parameters(setups[0][2].store, data) if setups else {}
    # each query on every executor in turn, so that the ones compared run side by side
    # in time (one process, one JVM: warmed alike, note 199), not one executor's all first
    for query, text in queries(params).items() if setups else ():
        if only and query not in only:
            continue
        for executor, engine, pod in setups:
            router = bench_router(executor.removesuffix("-replace"),
                                  **({"render": True} if render else {}),
                                  **({"spark_delta_below": 0.0} if executor == "spark-replace"
                                     else {}))
            rows.append(_one_query(engine, pod, query, text, router, params, stream, name,
                                   executor + ("+render" if render else ""), rounds))
    for _, engine, _ in setups:
        engine.dispose()
    return rows


def _one_query(engine: sa.Engine, pod: Pod, name: str, text: str, router: Router,
               params: dict[str, str], stream: list[list[tuple]], data_name: str,
               executor: str, rounds: int = 1) -> PaperRow:
    """One view through the update sequence ``rounds`` times (the stream's
    triples taken out between rounds, untimed): each kind's time and
    pyoxigraph's the median of its rounds, the view compared with
    pyoxigraph's answer after every update."""
    q = compile_query(text).query
    whole = dataclasses.replace(q, order=(), limit=None, offset=0)
    oracle_text = _unsliced(text)
    with engine.begin() as c:
        view = register_view(c, pod.consumer, name, text)
    drain(engine, router)

    touched = TOUCHED.get(name)
    if touched is not None:
        found = ox_solutions(pod.store, PREFIXES + touched + " ORDER BY ?product LIMIT 10")
        products = [_value(s["product"]) for s in found]
    elif name == "Q2":
        products = [params["xyz"].strip("<>")]
    else:
        products = sorted({_value(s["product"]) for s in ox_solutions(pod.store, text)})
    gone = pod.subjects(products)
    streamed = {t for tx in stream for t in tx if not pod.holds(t)}  # taken out after
    steps: list[tuple[str, set[tuple], set[tuple]]] = [
        ("delete products", set(), gone), ("re-insert products", gone, set()),
        ("insert irrelevant", _irrelevant(), set()), ("delete irrelevant", set(), _irrelevant())]
    steps += [(f"BSBM update {i + 1}", set(tx), set()) for i, tx in enumerate(stream)]

    samples: dict[str, list[float]] = {}
    changed: dict[str, int] = {}
    ran: dict[str, int] = {}
    polls: list[float] = []
    ox_samples: dict[str, list[OxTimes]] = {}
    equal = True
    with progress(f"{name}, {data_name}, {executor}: updates", len(steps) * rounds) as advance:
        for round_ in range(rounds):
            if round_:
                pod.change(set(), streamed)
                drain(engine, router)
            for kind, add, remove in steps:
                changed[kind] = sum(not pod.holds(t) for t in add) + sum(map(pod.holds, remove))
                pod.change(add, remove)
                ran[kind], ms, poll = timed_drain(engine, router)
                samples.setdefault(kind, []).append(ms)
                polls.append(poll)
                ox_samples.setdefault(kind, []).append(ox_times(pod.store, text))
                with engine.begin() as c:  # as drain's: the worker's prepared statements kept
                    got = our_rows(whole, catalog.view_results(c, view), q.variables)
                equal = equal and got == oxigraph_rows(pod.store, oracle_text, q.variables)
                advance()
    times = {k: statistics.median(v) for k, v in samples.items()}
    theirs = {k: OxTimes(statistics.median(x.eval_ms for x in v),
                         statistics.median(x.json_ms for x in v)) for k, v in ox_samples.items()}
    read_ms = _read_json_ms(engine, view)
    with engine.connect() as c:
        t = time.perf_counter()
        verify.scratch(c, view)
        scratch_ms = (time.perf_counter() - t) * 1000
        view_rows = sum(k for k in catalog.view_results(c, view).values() if k > 0)
        aux_rows = krel.size(c, view)
        placement = c.execute(sa.text("SELECT placement FROM views WHERE id = :v"),
                              {"v": view}).scalar_one() or ""
    with engine.begin() as c:
        views_repo.drop_view(c, view)
    pod.change(set(), streamed)  # the next query's updates change the data as this one's did
    drain(engine, router)
    inc = statistics.median(times.values())
    oxe = statistics.median(x.eval_ms for x in theirs.values())
    oxj = statistics.median(x.json_ms for x in theirs.values())
    return PaperRow(name, data_name, executor, len(steps), round(inc, 1), round(read_ms, 1),
                    round(oxe, 1), round(oxj, 1), round(scratch_ms, 1), round(oxe / inc, 2),
                    round(oxj / (inc + read_ms), 2), round(scratch_ms / inc, 1), aux_rows,
                    view_rows, equal, len(pod.store), {k: round(v, 1) for k, v in times.items()},
                    {k: round(v.eval_ms, 1) for k, v in theirs.items()}, changed, ran, placement,
                    round(statistics.median(polls), 2),
                    {k: round(v[0], 1) for k, v in samples.items()})


def _read_json_ms(engine: sa.Engine, view: int) -> float:
    """Our read of the view's results as SPARQL JSON (all rows, one
    snapshot, its currency checked in it), as ``GET /views/{id}/results``
    makes it."""
    t = time.perf_counter()
    found = read(engine, Principal("admin"), view)
    assert isinstance(found, Results), found  # the bench reads caught-up views
    json.dumps(select_json(found.variables, found.rows)).encode()
    return (time.perf_counter() - t) * 1000


def queries_names() -> list[str]:
    return ["Q1", "Q2", "Q3", "Q4", "path §5.2.3", "SUM §5.3", "MIN/MAX"]


def print_table(rows: list[PaperRow], as_json: bool) -> None:
    from dataclasses import asdict

    if as_json:
        print(json.dumps({"rows": [asdict(r) for r in rows], "growth": [asdict(g) for g in growth(rows)],
                          "spark": [asdict(k) for k in spark_kinds(rows)]}, indent=1))
        return
    from rich.console import Console
    from rich.table import Table

    main = Table(title="paper-bsbm: one update maintained vs from scratch (ms; medians over "
                       "the updates; scratch: our engine once)")
    names = [f.name for f in dataclasses.fields(PaperRow)
             if not f.name.endswith("by_update") and f.name != "placement"]
    for name in names:
        main.add_column(name.replace("_", " "))
    for r in rows:
        main.add_row(*(str(getattr(r, n)) for n in names))
    kinds = list(dict.fromkeys(k for r in rows for k in r.by_update))
    per = Table(title="per update: maintenance ms (its jobs, to the last commit; 0: it woke "
                      "none) / pyoxigraph evaluating from scratch ms = speed-up (same run); "
                      "with --rounds, the first round's ms where it differs (its statement "
                      "planned then); triples the update changed, jobs it woke")
    for col in ("query", "data", "executor", *kinds):
        per.add_column(col)
    for r in rows:
        per.add_row(r.query, r.data, r.executor, *(_per_update(r, k) for k in kinds))
    console = Console(width=220)
    console.print(main)
    console.print(per)
    _print_ratios(rows)


def _per_update(r: PaperRow, kind: str) -> str:
    ours, theirs = r.by_update.get(kind), r.pyoxigraph_by_update.get(kind)
    if ours is None or theirs is None:
        return ""
    work = f" ({r.changed_by_update.get(kind, 0)} t, {r.jobs_by_update.get(kind, 0)} jobs)"
    first = r.first_by_update.get(kind, ours)
    cold = f" [first round {first}]" if first != ours else ""
    return (f"{ours} / {theirs} = {theirs / ours:.2f}×" if ours else f"{ours} / {theirs}") + \
        cold + work


@dataclass
class Growth:
    """One query's per-update cost on a larger dataset over a smaller one."""

    query: str
    executor: str
    data_from: str
    data_to: str
    median: float
    by_update: dict[str, float]  # kind -> cost on data_to / cost on data_from


def growth(rows: list[PaperRow]) -> list[Growth]:
    """Per query and executor run on several datasets (or scales): the cost of
    each update kind on the last over the first — the cost must follow the
    delta, not the data."""
    by: dict[tuple[str, str], list[PaperRow]] = defaultdict(list)
    for r in rows:
        by[(r.query, r.executor)].append(r)
    return [Growth(query, executor, a.data, b.data, round(b.incremental_ms / a.incremental_ms, 2),
                   {k: round(b.by_update[k] / v, 2) for k, v in a.by_update.items()
                    if v and k in b.by_update})
            for (query, executor), rs in by.items() if len(rs) >= 2
            for a, b in [(rs[0], rs[-1])]]


@dataclass
class SparkKind:
    """One update kind of one query on Spark: the delta program against
    evaluating every node and replacing the state, measured in this run."""

    query: str
    data: str
    kind: str
    delta_fraction: float  # triples the update changed / the data's triples
    delta_ms: float  # as the router ran it: see ``ran``
    replace_ms: float
    speedup: float  # replace_ms / delta_ms
    ran: str = ""  # "delta program", "replace" where the router keeps the view there, "no job"


def spark_kinds(rows: list[PaperRow]) -> list[SparkKind]:
    """Per query and update kind run by both ``spark`` and ``spark-replace``."""
    replaced = {(r.query, r.data): r for r in rows if r.executor == "spark-replace"}
    out = []
    for r in rows:
        other = replaced.get((r.query, r.data))
        if r.executor != "spark" or other is None:
            continue
        for kind, ms in r.by_update.items():
            if kind in other.by_update:
                out.append(SparkKind(r.query, r.data, kind,
                                     round(r.changed_by_update.get(kind, 0) / max(r.data_triples, 1), 5),
                                     ms, other.by_update[kind],
                                     round(other.by_update[kind] / ms, 2) if ms else 0.0,
                                     _ran(r, kind)))
    return out


def _ran(r: PaperRow, kind: str) -> str:
    """How the router ran an update of the view on Spark."""
    if not r.jobs_by_update.get(kind):
        return "no job"
    return "delta program" if r.placement.startswith(jobs.SPARK_PROGRAM) else "replace"


def _print_ratios(rows: list[PaperRow]) -> None:
    spark = spark_kinds(rows)
    if spark:
        from rich.console import Console
        from rich.table import Table

        t = Table(title="Spark: as the router runs it (the delta program, or evaluate-and-"
                        "replace where it keeps the view there) vs evaluate-and-replace, per "
                        "update (ms)")
        for c in ("query", "data", "update", "ΔG / data", "ran", "spark", "replace", "speed-up"):
            t.add_column(c)
        for k in spark:
            t.add_row(k.query, k.data, k.kind, f"{k.delta_fraction:.3%}", k.ran, str(k.delta_ms),
                      str(k.replace_ms), f"{k.speedup}×")
        Console(width=220).print(t)
    for g in growth(rows):
        kinds = ", ".join(f"{k} {v}" for k, v in g.by_update.items())
        print(f"{g.query} ({g.executor}): per-update cost {g.data_to} / {g.data_from}: "
              f"median {g.median}; {kinds}")

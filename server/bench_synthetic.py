"""``podviews bench paper-synthetic``: the counting paper's §5.2.1 experiment.

Four blobs of N nodes; a fraction p of the N² possible edges between
consecutive blobs; one update inserting 50 random new edges and deleting 50
existing ones. The path-3 query (with projection) and a star query are
maintained by the engine in memory and compared with our own from-scratch
evaluation and with pyoxigraph from scratch, on the same data.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass

import pyoxigraph as ox
from rdflib import URIRef

from views.compile import compile_query
from views.dataset import Dataset
from views.maintain import Maintainer
from views.reference import evaluate
from views.results import solutions

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
    n: int
    p: float
    edges: int
    incremental_ms: float
    scratch_ms: float
    pyoxigraph_ms: float
    speedup_vs_scratch: float
    speedup_vs_pyoxigraph: float
    aux_rows: int
    view_rows: int
    equal: bool


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


def run(n: int, p: float, seed: int = 0) -> list[SyntheticRow]:
    rng = random.Random(seed)
    edges = graph(n, p, rng)
    changes = update(edges, n, rng)
    rows = []
    for name, text in QUERIES.items():
        q = compile_query(text).query
        ds = Dataset()
        ds.apply(((None, *e), 1) for e in edges)
        view = Maintainer(q.pattern, ds)  # backfill, not timed
        t = time.perf_counter()
        view.apply(ds.apply(changes))
        inc = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        scratch = evaluate(q.pattern, ds)
        scr = (time.perf_counter() - t) * 1000
        store = ox.Store()
        for g, s, pr, o in ds.quads():
            store.add(ox.Quad(ox.NamedNode(str(s)), ox.NamedNode(str(pr)),
                              ox.NamedNode(str(o)), ox.DefaultGraph()))
        t = time.perf_counter()
        theirs = Counter(tuple(str(sol[v].value) for v in q.variables)
                         for sol in store.query(text))
        oxi = (time.perf_counter() - t) * 1000
        ours = Counter(tuple(str(r[v]) for v in q.variables) for r in solutions(q, view.result))
        rows.append(SyntheticRow(
            name, n, p, len(edges), round(inc, 1), round(scr, 1), round(oxi, 1),
            round(scr / inc, 1) if inc else 0.0, round(oxi / inc, 1) if inc else 0.0,
            view.aux_rows(), len(view.result),
            view.result == scratch and ours == theirs))
    return rows

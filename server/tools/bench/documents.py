"""``podviews bench documents``: a stored document read back whole, as a
Solid client's GET reads it, in each RDF type the server writes — our read
(the document's rows and their terms from Postgres, then written:
``pods.resource_table`` and ``rdf.write``, what the GET runs) against
pyoxigraph writing the same triples from memory, in the same run. Each
body is parsed back by pyoxigraph and compared with the file's graph (as
graphs: the stored blank nodes have labels of their own, design note 206)."""

from __future__ import annotations

import gzip
import statistics
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, cast

import pyoxigraph as ox

from server.api.ldp import rdf
from server.cli.load import read_table
from server.cli.progress import progress
from server.tools.bench.pipeline import bench_pod, fresh_engine
from storage import pods

SAMPLES = 5  # reads of each type; the median is shown


@dataclass
class DocumentRow:
    data: str
    media: str
    triples: int
    bytes: int
    ours_ms: float  # the rows and terms read, then written (median)
    read_ms: float  # of which the rows and their terms from Postgres
    pyoxigraph_ms: float  # pyoxigraph writing the triples it holds (median)
    ratio: float  # ours / pyoxigraph's
    same: bool  # our body, parsed by pyoxigraph, is the file's graph


def run(server_url: str, data: Path) -> list[DocumentRow]:
    name = data.name.removesuffix(".nt.gz")
    table = read_table(data)
    with gzip.open(data, "rb") as f:
        theirs = [q.triple for q in ox.parse(cast(IO[bytes], f), format=ox.RdfFormat.N_TRIPLES)]
    graph = _canonical(theirs)
    engine = fresh_engine(server_url, f"documents_{name.replace('-', '_')}")
    with engine.begin() as c:
        pod, _ = bench_pod(c, "bench", {"doc": table})
        rid = int(pods.resource(c, pod, "doc").id)
    rows = []
    with progress(f"documents: {name}", len(rdf.FORMATS)) as advance:
        for media, form in rdf.FORMATS.items():
            ours, reads, oxs = [], [], []
            for _ in range(SAMPLES):
                t0 = time.perf_counter()
                with engine.connect() as c:
                    stored = pods.resource_table(c, rid)
                    c.commit()
                t1 = time.perf_counter()
                body = rdf.write(stored, media)
                t2 = time.perf_counter()
                ox.serialize(theirs, format=form)
                t3 = time.perf_counter()
                ours.append((t2 - t0) * 1000)
                reads.append((t1 - t0) * 1000)
                oxs.append((t3 - t2) * 1000)
            back = _canonical(q.triple for q in ox.parse(body, format=form))
            mine, them = statistics.median(ours), statistics.median(oxs)
            rows.append(DocumentRow(name, media, len(theirs), len(body), round(mine, 1),
                                    round(statistics.median(reads), 1), round(them, 1),
                                    round(mine / them, 1), back == graph))
            advance()
    engine.dispose()
    return rows


def _canonical(triples: Iterable[ox.Triple]) -> set[ox.Triple] | set[ox.Quad]:
    """The graph with its blank nodes named canonically: two graphs are
    isomorphic when these sets are equal (a graph without blank nodes is
    its own: canonicalising bsbm-1000 took 5 s)."""
    found = list(triples)
    if not any(isinstance(x, ox.BlankNode) for t in found for x in (t.subject, t.object)):
        return set(found)
    graph = ox.Dataset(ox.Quad(t.subject, t.predicate, t.object) for t in found)
    graph.canonicalize(ox.CanonicalizationAlgorithm.UNSTABLE)
    return set(graph)

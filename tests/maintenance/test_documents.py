"""Named graphs over documents in the pipeline (issue 19): every resource of
a pod is a named graph named by its IRI, the default graph the union of the
pods' resources. Views over GRAPH, FROM and FROM NAMED, kept by workers on
the SQL executor through random writes, deletions of resources and a
consent revoked and granted again, compared after every step with
pyoxigraph from scratch over the same documents as named graphs (its
default graph their union as a set: pyoxigraph's own union default graph
keeps a triple once per graph)."""

from __future__ import annotations

import random
from collections import Counter
from urllib.parse import quote

import pyoxigraph as ox
import sqlalchemy as sa
from rdflib import Literal, URIRef

from server.api.consents.service import record_grant, record_revoke
from server.api.views.service import register_view
from server.maintenance import jobs
from server.maintenance.router import Router
from server.tools.oracle import canon, our_rows, ox_quad
from storage import catalog, pods, queue
from storage.pods_graph import DEFAULT_BASE
from views.compile import compile_query

EX = "http://ex/"
POD_NAMES = ("ann", "bob")
DOC = f"{DEFAULT_BASE}/ann/r1"  # a document named by the queries
QUERIES = {
    "graph-var": "SELECT ?doc ?x ?y WHERE { GRAPH ?doc { ?x :p ?y } }",
    "graph-join": "SELECT * WHERE { ?x :q ?y GRAPH ?doc { ?y :p ?z } }",
    "graph-iri": f"SELECT * WHERE {{ GRAPH <{DOC}> {{ ?x ?r ?y }} }}",
    "graph-names": "SELECT DISTINCT ?doc WHERE { GRAPH ?doc { } }",
    "graph-path": "SELECT ?doc ?x ?y WHERE { GRAPH ?doc { ?x :p+ ?y } }",
    "graph-count": "SELECT ?doc (COUNT(*) AS ?n) WHERE { GRAPH ?doc { ?x ?r ?y } } "
                   "GROUP BY ?doc",
    "from": f"SELECT ?x ?y FROM <{DOC}> FROM <{DEFAULT_BASE}/bob/r2> WHERE {{ ?x :p ?y }}",
    "from-named": f"SELECT * FROM NAMED <{DOC}> FROM NAMED <{DEFAULT_BASE}/bob/r1> "
                  "WHERE { { ?x :p ?y } UNION { GRAPH ?doc { ?x :q ?y } } }",
    "union-default": "SELECT ?x ?y WHERE { ?x :p ?y }",
    "graph-minus": "SELECT * WHERE { GRAPH ?doc { ?x :p ?y MINUS { ?y :q ?z } } }",
    "exists-graph": "SELECT * WHERE { ?x :q ?y FILTER EXISTS { GRAPH ?doc { ?y :p ?z } } }",
}
PREFIX = f"PREFIX : <{EX}>\n"


def _write(c: sa.Connection, pod: int, rng: random.Random) -> None:
    nodes = [URIRef(EX + n) for n in "abcd"]
    objects = nodes + [Literal(1)]
    preds = [URIRef(EX + p) for p in "pq"]
    path = rng.choice(["r1", "r2", "r3"])
    if rng.random() < 0.2:
        try:
            pods.delete_resource(c, pod, path)
        except pods.PodsError:
            pass
        return
    pods.put_resource(c, pod, path, {(rng.choice(nodes), rng.choice(preds),
                                      rng.choice(objects)) for _ in range(rng.randint(0, 6))})


def _store(c: sa.Connection, readable: list[int]) -> ox.Store:
    """The readable pods' documents as pyoxigraph named graphs."""
    store = ox.Store()
    rows = c.execute(sa.text("SELECT r.id, p.name, r.path FROM resources r JOIN pods p "
                             "ON p.id = r.pod_id WHERE p.id = ANY(:p)"), {"p": readable})
    for rid, name, path in rows:
        iri = f"{DEFAULT_BASE}/{quote(name)}/{path}"
        for t in pods.resource_triples(c, rid):
            store.add(ox_quad((URIRef(iri), *t)))
            store.add(ox_quad(t))  # the default graph: their union, a set (decision 5)
    return store


def _ox_rows(store: ox.Store, query: str, variables: tuple[str, ...]) -> Counter:
    rows: Counter = Counter()
    found = store.query(query)
    assert isinstance(found, ox.QuerySolutions)
    for sol in found:
        rows[tuple(sorted((v, canon(sol[v])) for v in variables if sol[v] is not None))] += 1
    return rows


def test_document_views_agree_with_pyoxigraph(migrated: str) -> None:
    engine = sa.create_engine(migrated)
    rng = random.Random(19)
    with engine.begin() as c:
        owner = pods.create_agent(c, "https://owner.example/#me", "owner", b"o")
        consumer = pods.create_agent(c, "https://consumer.example/#it", "consumer", b"c")
        ids = [pods.create_pod(c, n, owner) for n in POD_NAMES]
        consent = {p: record_grant(c, p, consumer)[0] for p in ids}
        for _ in range(4):
            _write(c, rng.choice(ids), rng)
        views = {n: register_view(c, consumer, n, PREFIX + q) for n, q in QUERIES.items()}
    readable = list(ids)
    for step in range(10):
        with engine.begin() as c:
            if step == 4:  # bob's consent revoked: his documents vanish from every view
                record_revoke(c, consent[ids[1]])
                readable = [ids[0]]
            elif step == 7:
                consent[ids[1]] = record_grant(c, ids[1], consumer)[0]
                readable = list(ids)
            for _ in range(rng.randint(1, 3)):
                _write(c, rng.choice(ids), rng)
        while jobs.run_one(engine, "test", Router(mode="sql", render=True)):
            pass
        with engine.connect() as c:
            assert c.execute(sa.text("SELECT count(*) FROM jobs WHERE status <> 'done'")
                             ).scalar_one() == 0
            store = _store(c, readable)
            for name, text in QUERIES.items():
                q = compile_query(PREFIX + text).query
                got = our_rows(q, catalog.view_results(c, views[name]), q.variables)
                want = _ox_rows(store, PREFIX + text, q.variables)
                assert got == want, (step, name, got - want, want - got)
    with engine.begin() as c:  # the stored states against the engine from scratch
        for view in views.values():
            queue.enqueue(c, "verify", view)
    while jobs.run_one(engine, "test"):
        pass
    with engine.connect() as c:
        assert c.execute(sa.text("SELECT count(*) FROM jobs WHERE status <> 'done'")
                         ).scalar_one() == 0
    engine.dispose()

"""The maintenance pipeline on a real Postgres: views whose state lives in
K-relation tables stay equal to a from-scratch evaluation through batches of
mixed inserts and deletes."""

from __future__ import annotations

import random

import sqlalchemy as sa
from rdflib import Literal, URIRef

from server.api.consents.service import record_grant
from server.api.views.service import register_view
from server.maintenance import jobs, verify
from server.maintenance.router import Router
from storage import catalog, pods, queue

EX = "http://ex/"
QUERIES = {
    "optional-filter": "PREFIX : <http://ex/> SELECT * WHERE { ?x :p ?y OPTIONAL { ?y :q ?z "
                       "FILTER(?z != ?x) } }",
    "not-exists": "PREFIX : <http://ex/> SELECT ?x ?y WHERE { ?x :p ?y "
                  "FILTER NOT EXISTS { ?y :r ?x } }",
    "minus-union": "PREFIX : <http://ex/> SELECT * WHERE { { ?x :p ?y } UNION { ?x :q ?y } "
                   "MINUS { ?x :r ?y } }",
    "min-max-count": "PREFIX : <http://ex/> SELECT ?x (MIN(?y) AS ?lo) (MAX(?y) AS ?hi) "
                     "(COUNT(DISTINCT ?y) AS ?n) WHERE { ?x :p ?y } GROUP BY ?x",
    "distinct-bind": "PREFIX : <http://ex/> SELECT DISTINCT ?x ?s WHERE { ?x ?pr ?y "
                     "BIND(STR(?y) AS ?s) }",
}


def _vocab() -> tuple[list, list, list]:
    nodes = [URIRef(EX + n) for n in "abcde"]
    preds = [URIRef(EX + p) for p in "pqr"]
    return nodes, preds, nodes + [Literal(i) for i in range(3)]


def setup(engine: sa.Engine) -> tuple[int, int]:
    with engine.begin() as c:
        consumer = pods.create_agent(c, "https://hospital.example/#it", "consumer", b"c")
        owner = pods.create_agent(c, "https://alice.example/#me", "owner", b"o")
        pod = pods.create_pod(c, "alice", owner)
        record_grant(c, pod, consumer)
    return pod, consumer


def drain(engine: sa.Engine, router: Router | None = None) -> None:
    while jobs.run_one(engine, "test", router):
        pass
    with engine.connect() as c:
        assert queue.depth(c) == 0
        failed = c.execute(sa.text("SELECT kind, last_error FROM jobs WHERE status <> 'done'")).all()
        assert failed == []


def random_write(engine: sa.Engine, pod: int, rng: random.Random) -> None:
    nodes, preds, objects = _vocab()
    path = rng.choice(["r1", "r2", "r3"])
    with engine.begin() as c:
        if rng.random() < 0.15:
            try:
                pods.delete_resource(c, pod, path)
            except pods.PodsError:
                return
        else:
            triples = {(rng.choice(nodes), rng.choice(preds), rng.choice(objects))
                       for _ in range(rng.randint(0, 8))}
            pods.put_resource(c, pod, path, triples)


def test_views_equal_scratch_through_mixed_batches(migrated: str) -> None:
    engine = sa.create_engine(migrated)
    pod, consumer = setup(engine)
    rng = random.Random(11)
    for _ in range(5):
        random_write(engine, pod, rng)
    with engine.begin() as c:
        views = {name: register_view(c, consumer, name, q) for name, q in QUERIES.items()}
    drain(engine)
    for batch in range(50):
        random_write(engine, pod, rng)
        if batch % 5 == 4:
            drain(engine)
            with engine.connect() as c:
                for name, v in views.items():
                    assert catalog.view_results(c, v) == verify.scratch(c, v), (name, batch)


def test_a_view_sees_only_consenting_pods(migrated: str) -> None:
    engine = sa.create_engine(migrated)
    pod, consumer = setup(engine)
    with engine.begin() as c:
        other_owner = pods.create_agent(c, "https://bob.example/#me", "owner", b"b")
        other = pods.create_pod(c, "bob", other_owner)
        pods.put_resource(c, other, "x", [(URIRef(EX + "b"), URIRef(EX + "p"), URIRef(EX + "c"))])
        pods.put_resource(c, pod, "x", [(URIRef(EX + "a"), URIRef(EX + "p"), URIRef(EX + "c"))])
        view = register_view(c, consumer, "all", "SELECT ?s WHERE { ?s ?p ?o }")
    drain(engine)
    with engine.connect() as c:
        got = {dict(m)["s"] for m in catalog.view_results(c, view)}
    assert got == {URIRef(EX + "a")}


def test_backfill_records_its_progress(migrated: str) -> None:
    engine = sa.create_engine(migrated)
    pod, consumer = setup(engine)
    random_write(engine, pod, random.Random(3))
    with engine.begin() as c:
        register_view(c, consumer, "q", QUERIES["optional-filter"])
    drain(engine)
    with engine.connect() as c:
        done, total = c.execute(sa.text(
            "SELECT p.done, p.total FROM job_progress p JOIN jobs j ON j.id = p.job_id "
            "WHERE j.kind = 'backfill'")).one()
    assert done == total and total >= 3


def test_a_write_wakes_only_the_views_it_can_change(migrated: str) -> None:
    engine = sa.create_engine(migrated)
    pod, consumer = setup(engine)
    queries = {"p": "SELECT * WHERE { ?s <http://ex/p> ?o }",
               "exists-q": "SELECT * WHERE { ?s <http://ex/r> ?o "
                           "FILTER EXISTS { ?o <http://ex/q> ?z } }",
               "any": "SELECT * WHERE { ?s ?p ?o }"}
    with engine.begin() as c:
        views = {n: register_view(c, consumer, n, q) for n, q in queries.items()}
    drain(engine)
    q = (URIRef(EX + "b"), URIRef(EX + "q"), URIRef(EX + "c"))
    with engine.begin() as c:
        pods.put_resource(c, pod, "x", [q])
        woken = {r[0] for r in c.execute(sa.text(
            "SELECT view_id FROM jobs WHERE kind = 'apply_changes' AND status = 'queued'"))}
    assert woken == {views["exists-q"], views["any"]}
    drain(engine)
    with engine.connect() as c:
        for v in views.values():
            assert catalog.view_results(c, v) == verify.scratch(c, v)


def test_done_jobs_pruned_keep_what_the_metrics_read(migrated: str) -> None:
    """Done jobs older than the age given leave the queue; the metrics read
    the same counts, failed attempts and sizes after as before, twice over
    (the second pruning adds to the first's totals)."""
    from server.maintenance import worker
    from storage import ops

    engine = sa.create_engine(migrated)
    pod, consumer = setup(engine)
    rng = random.Random(11)
    with engine.begin() as c:
        for i, q in enumerate(list(QUERIES.values())[:3]):
            register_view(c, consumer, f"v{i}", q)
    drain(engine)

    def metrics() -> tuple[list, list, list]:
        with engine.connect() as c:
            return (sorted(tuple(r) for r in ops.jobs_done(c)),
                    sorted(tuple(r) for r in ops.job_sizes(c)),
                    sorted(tuple(r) for r in ops.job_failures(c)))

    for _ in range(2):
        for _ in range(4):
            random_write(engine, pod, rng)
        drain(engine)
        with engine.begin() as c:  # a failed attempt before a job was done
            c.execute(sa.text("UPDATE jobs SET attempts = attempts + 1 WHERE id = "
                              "(SELECT max(id) FROM jobs WHERE status = 'done' AND attempts > 0)"))
        before = metrics()
        assert before[0] and before[1] and any(r[2] for r in before[2])
        worker.prune(engine, 0.0)
        with engine.connect() as c:
            left = c.execute(sa.text("SELECT count(*) FROM jobs WHERE status = 'done'")).scalar()
        assert left == 0 and metrics() == before
    engine.dispose()

"""Consent is data (decision 6): a grant adds a pod's triples to a view's
input, a revocation removes them, and afterwards no K-relation of the view
holds anything the pod alone contributed."""

from __future__ import annotations

import random

import sqlalchemy as sa
from rdflib import URIRef

from server.api.consents.service import record_grant, record_revoke
from server.api.views.service import register_view
from server.maintenance import verify
from storage import catalog, krel, pods
from storage.codec import Codec
from storage.krel import PgRel
from tests.maintenance.test_pipeline import QUERIES, _vocab, drain
from views.compile import compile_query
from views.dataset import Dataset
from views.interpret import Maintainer


def _write(engine: sa.Engine, pod: int, rng: random.Random, path: str) -> None:
    nodes, preds, objects = _vocab()
    triples = {(rng.choice(nodes), rng.choice(preds), rng.choice(objects)) for _ in range(10)}
    with engine.begin() as c:
        pods.put_resource(c, pod, path, triples)


def _node_states(engine: sa.Engine, view: int, query: str) -> list[dict]:
    with engine.connect() as c:
        codec, tables = Codec(c), krel.tables(c, view)
        m = Maintainer(compile_query(query).plan, Dataset(), backfill=False,
                       relations=lambda n: PgRel(c, codec, view, n.id, tables.get(n.id, {})))
        return _stored(m)


def _backfilled_states(engine: sa.Engine, pod_ids: list[int], query: str) -> list[dict]:
    ds = Dataset()
    with engine.connect() as c:
        for p in pod_ids:
            ds.apply(((None, *t), 1) for t in pods.default_graph(c, p))
    m = Maintainer(compile_query(query).plan, ds)
    return _stored(m)


def _stored(m: Maintainer) -> list[dict]:
    """What each stored node holds (a BGP below the root stores nothing)."""
    return [dict(m.state[n.id].rows) for n in m.plan.nodes if m.plan.stored(n)]


def test_grant_then_revoke_leaves_no_trace(migrated: str) -> None:
    engine = sa.create_engine(migrated)
    rng = random.Random(2)
    with engine.begin() as c:
        consumer = pods.create_agent(c, "https://lab.example/#it", "consumer", b"c")
        alice = pods.create_pod(c, "alice", pods.create_agent(c, "urn:a", "owner", b"a"))
        bob = pods.create_pod(c, "bob", pods.create_agent(c, "urn:b", "owner", b"b"))
        shared = (URIRef("http://ex/a"), URIRef("http://ex/p"), URIRef("http://ex/b"))
        for p in (alice, bob):  # one triple both pods hold: it must survive either leaving
            pods.put_resource(c, p, "shared", [shared])
        consent_alice, _ = record_grant(c, alice, consumer)
        views = {n: register_view(c, consumer, n, q) for n, q in QUERIES.items()}
    for i in range(4):
        _write(engine, alice, rng, f"r{i % 2}")
        _write(engine, bob, rng, f"r{i % 2}")
    drain(engine)
    with engine.begin() as c:
        record_grant(c, bob, consumer)
    _write(engine, alice, rng, "r0")
    _write(engine, bob, rng, "r1")
    drain(engine)
    with engine.connect() as c:
        for name, v in views.items():
            assert catalog.view_results(c, v) == verify.scratch(c, v), name
    with engine.begin() as c:
        record_revoke(c, consent_alice)
    _write(engine, alice, rng, "r1")  # alice keeps writing; no view may see it
    _write(engine, bob, rng, "r0")
    drain(engine)
    for name, v in views.items():
        assert _node_states(engine, v, QUERIES[name]) == \
            _backfilled_states(engine, [bob], QUERIES[name]), name


def test_a_view_registered_after_consent_sees_the_pod(migrated: str) -> None:
    engine = sa.create_engine(migrated)
    with engine.begin() as c:
        consumer = pods.create_agent(c, "urn:c", "consumer", b"c")
        pod = pods.create_pod(c, "alice", pods.create_agent(c, "urn:a", "owner", b"a"))
        pods.put_resource(c, pod, "x", [(URIRef("http://ex/s"), URIRef("http://ex/p"),
                                         URIRef("http://ex/o"))])
        record_grant(c, pod, consumer)
        view = register_view(c, consumer, "all", "SELECT * WHERE { ?s ?p ?o }")
    drain(engine)
    with engine.connect() as c:
        assert len(catalog.view_results(c, view)) == 1


def test_verify_job_passes_on_a_maintained_view(migrated: str) -> None:
    engine = sa.create_engine(migrated)
    with engine.begin() as c:
        consumer = pods.create_agent(c, "urn:c", "consumer", b"c")
        pod = pods.create_pod(c, "alice", pods.create_agent(c, "urn:a", "owner", b"a"))
        record_grant(c, pod, consumer)
        view = register_view(c, consumer, "q", QUERIES["not-exists"])
    _write(engine, pod, random.Random(1), "r")
    drain(engine)
    with engine.begin() as c:
        from storage import queue

        queue.enqueue(c, "verify", view)
    drain(engine)  # a drift would leave the job failed (drain asserts none is)

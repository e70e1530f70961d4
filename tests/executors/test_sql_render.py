"""The rendered SQL executor (server/executors/sql/render.py): views whose plan
renders are maintained by one SQL statement per batch, and stay equal to the
interpreter's from-scratch evaluation through mixed batches written to two
pods that share triples (a triple in both is one triple, decision 5).
``PODVIEWS_SQL_RENDER_BATCHES`` sets the number of batches (12)."""

from __future__ import annotations

import os
import random

import sqlalchemy as sa
from rdflib import XSD, Literal, URIRef

from server.api.consents.service import record_grant
from server.api.views.service import register_view
from server.executors.sql.run import placement
from server.maintenance import verify
from storage import catalog, pods
from tests.maintenance.test_pipeline import drain
from views.compile import compile_query

EX = "http://ex/"
BATCHES = int(os.environ.get("PODVIEWS_SQL_RENDER_BATCHES", "12"))
P = "PREFIX : <http://ex/> "
RENDERED = {
    "bgp-join": P + "SELECT * WHERE { ?x :p ?y . ?y :q ?z }",
    "repeated-var": P + "SELECT ?x WHERE { ?x :p ?x }",
    "path-filter": P + "SELECT ?z WHERE { ?a :p ?x . ?b :p ?x . ?b :q ?z FILTER(?a != ?b) }",
    "distinct": P + "SELECT DISTINCT ?y WHERE { ?x ?p ?y }",
    "numeric": P + "SELECT ?x ?y WHERE { ?x :p ?y FILTER(?y > 1 || ?y <= -0.5) }",
    "numeric-not": P + "SELECT ?x ?y WHERE { ?x :q ?y FILTER(!(?y >= 2)) }",
    "union": P + "SELECT * WHERE { { ?x :p ?y } UNION { ?x :q ?z } }",
    "optional": P + "SELECT * WHERE { ?x :p ?y OPTIONAL { ?y :q ?z } }",
    "optional-filter": P + "SELECT * WHERE { ?x :p ?y OPTIONAL { ?y :q ?z FILTER(?z != ?x) } }",
    "optional-bound": P + "SELECT ?x WHERE { ?x :p ?y OPTIONAL { ?x :q ?t } FILTER(!bound(?t)) }",
    "optional-2": P + "SELECT * WHERE { ?x :p ?y OPTIONAL { ?x :q ?a } OPTIONAL { ?x :r ?b } }",
    "minus": P + "SELECT * WHERE { { ?x :p ?y } UNION { ?x :q ?y } MINUS { ?x :r ?y } }",
    "minus-disjoint": P + "SELECT * WHERE { ?x :p ?y MINUS { ?a :r ?b } }",
    "join-optionals": P + "SELECT * WHERE { { ?x :p ?y OPTIONAL { ?y :r ?w } } "
                          "{ ?x :q ?z OPTIONAL { ?z :r ?v } } }",
    "project-distinct": P + "SELECT DISTINCT ?x WHERE { ?x :p ?y OPTIONAL { ?y :q ?z } }",
}
OBJECTS = [Literal(1), Literal(2), Literal("1.5", datatype=XSD.decimal),
           Literal("-1", datatype=XSD.integer), Literal("2.0E0", datatype=XSD.double),
           Literal("INF", datatype=XSD.double), Literal("NaN", datatype=XSD.double),
           Literal("x", datatype=XSD.integer), Literal("7"), Literal("a", lang="en")]


def test_these_views_render() -> None:
    for name, q in RENDERED.items():
        assert placement(compile_query(q).plan) == "sql", name


def _write(engine: sa.Engine, pod: int, rng: random.Random) -> None:
    nodes = [URIRef(EX + n) for n in "abcd"]
    preds = [URIRef(EX + p) for p in "pqr"]
    with engine.begin() as c:
        triples = {(rng.choice(nodes), rng.choice(preds), rng.choice(nodes + OBJECTS))
                   for _ in range(rng.randint(0, 10))}
        pods.put_resource(c, pod, rng.choice(["r1", "r2"]), triples)


def test_rendered_views_equal_scratch(migrated: str, pod_count: int = 2) -> None:
    engine = sa.create_engine(migrated)
    with engine.begin() as c:
        consumer = pods.create_agent(c, "urn:c", "consumer", b"c")
        owned = []
        for i in range(pod_count):
            owner = pods.create_agent(c, f"urn:o{i}", "owner", f"o{i}".encode())
            owned.append(pods.create_pod(c, f"pod{i}", owner))
            record_grant(c, owned[-1], consumer)
        views = {name: register_view(c, consumer, name, q) for name, q in RENDERED.items()}
    drain(engine)
    rng = random.Random(pod_count)
    for batch in range(BATCHES):
        _write(engine, rng.choice(owned), rng)
        if batch % 3 == 2:
            drain(engine)
            with engine.connect() as c:
                for name, v in views.items():
                    assert catalog.view_results(c, v) == verify.scratch(c, v), (name, batch)
    engine.dispose()

"""Named graphs over documents in the pipeline (issue 19): every resource of
a pod is a named graph named by its IRI, the default graph the union of the
pods' resources. Views over GRAPH, FROM and FROM NAMED, kept by workers on
the SQL executor through random writes, deletions of resources and a
consent revoked and granted again, compared after every step with
pyoxigraph from scratch over the same documents as named graphs (its
default graph their union as a set: pyoxigraph's own union default graph
keeps a triple once per graph). The structural grammar's queries
(tests/engine/grammar.py, GRAPH under nested operators) kept the same way
over three documents a triple may share."""

from __future__ import annotations

import dataclasses
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from urllib.parse import quote

import pyoxigraph as ox
import sqlalchemy as sa
from hypothesis import assume, event, given, note
from hypothesis import strategies as st
from rdflib import Literal, URIRef
from rdflib.term import Identifier

from server.api.consents.service import record_grant, record_revoke
from server.api.views.service import register_view
from server.maintenance import jobs
from server.maintenance.router import Router
from server.tools.oracle import our_rows, ox_quad, oxigraph_rows
from storage import catalog, pods, queue
from storage.pods_graph import DEFAULT_BASE
from tests.engine import grammar
from tests.engine.test_fuzz_terms import fuzz_settings
from tests.engine.test_properties import EXAMPLES as PROPERTY_EXAMPLES
from tests.maintenance.test_feed import Follower
from tests.maintenance.test_fuzz_pipeline import SQL, drain, exact, feed_rows, granted_pod
from views import algebra as A
from views.compile import compile_query
from views.dataset import Dataset
from views.errors import UnsupportedFeature
from views.reference import evaluate

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
# GRAPH's scoping (§18.6), read otherwise by pyoxigraph: compared with the
# reference evaluator over the same documents (design note 230)
SCOPED = {
    "graph-var-inside": "SELECT * WHERE { GRAPH ?doc { ?x :p ?y OPTIONAL { ?y :q ?doc } "
                        "BIND(?doc AS ?unbound) } }",
    "graph-in-graph": "SELECT * WHERE { GRAPH ?doc { ?x :p ?y GRAPH ?other { ?y :q ?z } } }",
    "count-in-graph": "SELECT * WHERE { GRAPH ?doc { SELECT (COUNT(*) AS ?n) "
                      "WHERE { ?x :q ?y } } }",
    "count-in-named": f"SELECT * FROM <{DOC}> FROM NAMED <{DOC}> FROM NAMED "
                      f"<{DEFAULT_BASE}/bob/r1> WHERE {{ ?x :p ?y GRAPH ?doc {{ "
                      "SELECT (COUNT(*) AS ?n) WHERE { ?y :q ?z } } }",
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


def dataset_quads(docs: Mapping[Identifier, set[tuple]],
                  clause: tuple[Iterable[Identifier], Iterable[Identifier]] | None = None
                  ) -> set[tuple]:
    """Documents as a dataset by SPARQL 1.1 §13.2: with a clause (FROM, FROM
    NAMED), the default graph (graph None) the merge of the FROM documents —
    a set, empty with FROM NAMED alone — and the named graphs the FROM NAMED
    ones; without, every document a named graph and their union the default
    graph (decision 5)."""
    froms, named = clause or (docs, docs)
    out = {(iri, *t) for iri in named for t in docs.get(iri, ())}
    return out | {(None, *t) for iri in froms for t in docs.get(iri, ())}


def _documents(c: sa.Connection, readable: list[int]) -> dict[Identifier, set[tuple]]:
    """The readable pods' documents' triples, by IRI."""
    rows = c.execute(sa.text("SELECT r.id, p.name, r.path FROM resources r JOIN pods p "
                             "ON p.id = r.pod_id WHERE p.id = ANY(:p)"), {"p": readable})
    return {URIRef(f"{DEFAULT_BASE}/{quote(name)}/{path}"): set(pods.resource_triples(c, rid))
            for rid, name, path in rows}


def _store(quads: set[tuple]) -> ox.Store:
    store = ox.Store()
    for quad in quads:
        store.add(ox_quad(quad))
    return store


def _reference(quads: set[tuple]) -> Dataset:
    ds = Dataset()
    ds.apply([(quad, 1) for quad in quads])
    return ds


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
        views = {n: register_view(c, consumer, n, PREFIX + q)
                 for n, q in (QUERIES | SCOPED).items()}
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
            docs = _documents(c, readable)
            store = _store(dataset_quads(docs))
            for name, text in QUERIES.items():
                q = compile_query(PREFIX + text).query
                got = our_rows(q, catalog.view_results(c, views[name]), q.variables)
                want = oxigraph_rows(store, PREFIX + text, q.variables)
                assert got == want, (step, name, got - want, want - got)
            for name, text in SCOPED.items():
                q = compile_query(PREFIX + text).query
                got = our_rows(q, catalog.view_results(c, views[name]), q.variables)
                clause = (q.from_graphs, q.from_named) if q.from_graphs or q.from_named else None
                want = our_rows(q, evaluate(q.pattern, _reference(dataset_quads(docs, clause))),
                                q.variables)
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


DOCUMENTS = {None: "d0", ":g1": "g1", ":g2": "g2"}  # the grammar's graphs as a pod's documents


@dataclasses.dataclass(frozen=True)
class DocumentCase:
    query: str  # of the structural grammar, its graphs named :g1, :g2 (documents g1, g2)
    batches: list  # of (±1, (graph, s, p, o)) by grammar.streams
    # FROM and FROM NAMED documents, or None: every document a named graph, their union
    # the default graph
    dataset: tuple[tuple[str, ...], tuple[str, ...]] | None = None
    revoked: int | None = None  # the consent revoked after this batch's writes, granted after the next's

    def text(self, pod: str) -> str:
        """The query over ``pod``'s documents, with its dataset clause."""
        iri = lambda doc: f"<{DEFAULT_BASE}/{pod}/{doc}>"
        query = re.sub(r":(g[12])\b", lambda m: iri(m[1]), self.query)
        if self.dataset is None:
            return query
        froms, named = self.dataset
        clause = " ".join([f"FROM {iri(d)}" for d in froms] + [f"FROM NAMED {iri(d)}" for d in named])
        return query.replace(" WHERE ", f" {clause} WHERE ", 1)

    def quads(self, pod: str, held: dict[str, set[tuple]]) -> set[tuple]:
        """The documents as the query's dataset (``dataset_quads``)."""
        iri = lambda doc: URIRef(f"{DEFAULT_BASE}/{pod}/{doc}")
        clause = None if self.dataset is None else (
            [iri(doc) for doc in self.dataset[0]], [iri(doc) for doc in self.dataset[1]])
        docs: dict[Identifier, set[tuple]] = {iri(doc): triples for doc, triples in held.items()}
        return dataset_quads(docs, clause)


@st.composite
def dataset_clauses(draw: st.DrawFn) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """In a third of the cases, FROM and FROM NAMED documents."""
    if draw(st.integers(0, 2)):
        return None
    docs = st.lists(st.sampled_from(list(DOCUMENTS.values())), max_size=2, unique=True)
    froms, named = tuple(draw(docs)), tuple(draw(docs))
    return (froms, named) if froms or named else None  # no clause: no dataset


@st.composite
def document_cases(draw: st.DrawFn, graphs: int = 4, scoped: bool = False) -> DocumentCase:
    """A query of the structural grammar (GRAPH ?g and GRAPH :g1 under nested
    OPTIONAL, UNION, MINUS, EXISTS, sub-SELECTs, aggregates; ``scoped``: its
    GRAPH's group naming the GRAPH's variable, a GRAPH inside another, an
    aggregate without GROUP BY), a third of them with FROM and FROM NAMED
    documents, with its stream of batches over three documents, the same
    triple in several of them; in about half, the consumer's consent revoked
    after one batch and granted again after the next."""
    query, batches = draw(grammar.cases(graphs=graphs, scoped=scoped))
    try:
        compile_query(query)
    except UnsupportedFeature:
        assume(False)
    revoked = draw(st.sampled_from([None, None, *range(len(batches))]))
    return DocumentCase(query, batches, draw(dataset_clauses()), revoked)


@fuzz_settings(max(PROPERTY_EXAMPLES // 20, 1))
@given(case=document_cases())
def test_document_views_of_nested_operators_agree_with_pyoxigraph(
        cases_engine: sa.Engine, case: DocumentCase) -> None:
    """Each batch is written as PUTs of the documents it touches; the view,
    kept by workers (GRAPH views run interpreted over Postgres state), equals
    pyoxigraph from scratch over the same dataset (an empty one while the
    consent is revoked), and its change feed followed agrees."""
    def pyoxigraph(q: A.Query, name: str, held: dict[str, set[tuple]] | None) -> Counter:
        # the store holds the dataset (pyoxigraph's FROM would keep a triple once per
        # document); pyoxigraph's sub-SELECTs under GRAPH ?g project ?g
        theirs = grammar.for_pyoxigraph(dataclasses.replace(case, dataset=None).text(name))
        return oxigraph_rows(_store(set() if held is None else case.quads(name, held)), theirs,
                             q.variables)

    _kept(cases_engine, case, pyoxigraph)


@fuzz_settings(max(PROPERTY_EXAMPLES // 20, 1))
@given(case=document_cases(graphs=6, scoped=True))
def test_document_views_of_scoped_graphs_agree_with_the_reference(
        cases_engine: sa.Engine, case: DocumentCase) -> None:
    """GRAPH scoped as §18.6 says (design note 230), kept by workers over a
    pod's documents, equals the reference evaluator from scratch over the
    same documents (pyoxigraph reads these otherwise)."""
    def reference(q: A.Query, name: str, held: dict[str, set[tuple]] | None) -> Counter:
        return our_rows(q, evaluate(q.pattern, _reference(set() if held is None else
                                               case.quads(name, held))), q.variables)

    _kept(cases_engine, case, reference)


def _kept(engine: sa.Engine, case: DocumentCase,
          oracle: Callable[[A.Query, str, dict[str, set[tuple]] | None], Counter]) -> None:
    """``case`` written batch by batch as PUTs of the documents it touches,
    its view drained after each, compared with ``oracle(query, pod name,
    documents held)`` (None while the consent is revoked) and with its change
    feed, followed."""
    note(repr(case))
    name, pod, consumer, consent = granted_pod(engine, "docs")
    text = case.text(name)
    with engine.begin() as c:
        view = register_view(c, consumer, "docs", text)
    drain(engine, view, SQL)
    feed = Follower(engine, view, budget=1_000, key=exact)
    feed.start()
    q = compile_query(text).query
    held: dict[str, set[tuple]] = {d: set() for d in DOCUMENTS.values()}
    graphs = {grammar.term(g): URIRef(f"{DEFAULT_BASE}/{name}/{DOCUMENTS[g]}")
              for g in DOCUMENTS if g is not None}
    seen = False
    for step, batch in enumerate(case.batches):
        touched = set()
        for sign, (g, *triple) in batch:
            doc = DOCUMENTS[g]
            # a graph's name in a triple (a scoped query's ?g bound by a pattern) is its document's
            t = tuple(graphs.get(x, x) for x in grammar.to_quad((None, *triple))[1:])
            (held[doc].add if sign > 0 else held[doc].discard)(t)
            touched.add(doc)
        with engine.begin() as c:
            for doc in sorted(touched):
                pods.put_resource(c, pod, doc, held[doc])
            if step == case.revoked:  # the pod's documents leave every view
                record_revoke(c, consent)
            elif case.revoked is not None and step == case.revoked + 1:
                consent = record_grant(c, pod, consumer)[0]
        drain(engine, view, SQL)
        with engine.connect() as c:
            got = catalog.view_results(c, view)
        want = oracle(q, name, None if step == case.revoked else held)
        assert our_rows(q, got, q.variables) == want, step
        seen = seen or bool(got)
        feed.follow()
        assert feed.rows == feed_rows(got), (step, "the feed")
    event(("GRAPH" if "GRAPH" in case.query else "no GRAPH")
          + (", FROM" if case.dataset else "") + (", rows" if seen else ", empty"))

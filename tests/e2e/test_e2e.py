"""End to end: a real ``podviews serve`` process (uvicorn, its worker
thread) over real HTTP and a real Postgres database. The scripted session of
a pod owner and a consumer: BSBM explore query 1 over a pod, kept equal to
pyoxigraph evaluating the query on the pod's data after every step; after
revocation the view and every one of its K-relations hold nothing. Then
(issue 19) views over the pods' documents (``GRAPH ?doc``) and a CONSTRUCT
view, through consent and revocation, equal to pyoxigraph on the documents
as the pods serve them, each a named graph named by its IRI."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pyoxigraph as ox
import pytest
import sqlalchemy as sa
from rdflib import Graph
from rdflib.compare import isomorphic

from server.tools import paths
from server.tools.bench.pipeline import q1_params
from server.tools.process import serving
from storage.embedded import Embedded
from tests.conftest import scratch_database

BSBM = paths.BSBM
ADMIN = "e2e-admin-token"


@pytest.fixture(scope="module")
def served(pg_server: str) -> Iterator[tuple[str, str]]:
    """(base URL, database URL) of a server process on a fresh database."""
    with scratch_database(pg_server, "pv_e2e") as url, serving(
            {"PODVIEWS_DATABASE_URL": url, "PODVIEWS_EXECUTOR": "sql",
             "PODVIEWS_ADMIN_TOKEN": ADMIN}) as base:
        yield base, url


def _explore_query_1(p: dict[str, str]) -> str:
    text = (BSBM / "explore-queries" / "query1.txt").read_text()
    return (text.replace("%ProductType%", p["type"]).replace("%ProductFeature1%", p["f1"])
            .replace("%ProductFeature2%", p["f2"]).replace("%x%", p["x"]))


def _oracle(pod_nt: bytes, query: str) -> list[tuple[str, str]]:
    store = ox.Store()
    store.load(pod_nt, format=ox.RdfFormat.N_TRIPLES)
    return [(s["product"].value, s["label"].value) for s in store.query(query)]


def _ours(c: httpx.Client, view: str, seq: int) -> list[tuple[str, str]]:
    r = c.get(f"{view}/results", params={"min_seq": seq, "wait": 60})
    assert r.status_code == 200, r.text
    return [(b["product"]["value"], b["label"]["value"]) for b in r.json()["results"]["bindings"]]


def _check(owner: httpx.Client, consumer: httpx.Client, view: str, seq: int, query: str) -> int:
    """Ours equals pyoxigraph's on the pod's data as the pod serves it now;
    ORDER BY ?label LIMIT 10 may cut between equal labels, so the labels are
    compared in order and the rows as sets below the last label."""
    data = owner.get("/pods/shop/catalogue", headers={"accept": "application/n-triples"})
    got = _ours(consumer, view, seq)
    want = _oracle(data.content, query)
    assert [lab for _, lab in got] == [lab for _, lab in want]
    if want:
        last = want[-1][1]
        assert {r for r in got if r[1] != last} == {r for r in want if r[1] != last}
    return len(got)


def _agents(base: str, roles: dict[str, str], domain: str) -> tuple[httpx.Client, dict]:
    """An admin client, and the agents made by it: who → their JSON (webid, token)."""
    admin = httpx.Client(base_url=base, headers={"authorization": f"Bearer {ADMIN}"}, timeout=120)
    made = {}
    for who, role in roles.items():
        r = admin.post("/admin/agents", json={"webid": f"https://{who}.{domain}/#me", "role": role})
        assert r.status_code == 201
        made[who] = r.json()
    return admin, made


@pytest.mark.skipif(not (BSBM / "bsbm-100.nt.gz").exists(), reason="BSBM data not in ../shared")
def test_scripted_session_follows_pyoxigraph(served: tuple[str, str]) -> None:
    base, db = served
    admin, made = _agents(base, {"owner": "owner", "consumer": "consumer"}, "e2e")
    assert admin.post("/admin/pods", json={"name": "shop",
                                           "owner": made["owner"]["webid"]}).status_code == 201
    owner, consumer = (httpx.Client(base_url=base, timeout=120, headers={
        "authorization": f"Bearer {made[w]['token']}"}) for w in ("owner", "consumer"))

    data = BSBM / "bsbm-100.nt.gz"
    with gzip.open(data) as f:  # N-Triples is Turtle
        r = owner.put("/pods/shop/catalogue", content=f.read(),
                      headers={"content-type": "text/turtle"})
    assert r.status_code == 201, r.text
    seq = int(r.headers["podviews-seq"])
    p = q1_params(data)
    query = _explore_query_1(p)
    r = consumer.post("/views", json={"name": "explore-1", "query": query})
    assert r.status_code == 201, r.text
    view = r.headers["location"]
    assert _ours(consumer, view, seq) == []  # no consent yet
    r = owner.post("/admin/consents", json={"pod": "shop", "consumer": made["consumer"]["webid"]})
    assert r.status_code == 201
    consent = r.json()["id"]
    seq = int(r.headers["podviews-seq"])  # the grant's position: the PUT's could be read before it
    assert _check(owner, consumer, view, seq, query) > 0

    # N3 Patch: the first product loses a required feature, so leaves the view
    first = _ours(consumer, view, seq)[0][0]
    n3 = (f"@prefix solid: <http://www.w3.org/ns/solid/terms#>.\n"
          f"_:p a solid:InsertDeletePatch;\n"
          f"  solid:where {{ <{first}> <http://www.w3.org/2000/01/rdf-schema#label> ?l }};\n"
          f"  solid:deletes {{ <{first}> <{_BSBM_VOCAB}productFeature> {p['f1']} }};\n"
          f"  solid:inserts {{ <{first}> <http://www.w3.org/2000/01/rdf-schema#comment> ?l }}.")
    r = owner.patch("/pods/shop/catalogue", content=n3, headers={"content-type": "text/n3"})
    assert r.status_code == 204, r.text
    seq = int(r.headers["podviews-seq"])
    _check(owner, consumer, view, seq, query)
    assert first not in {prod for prod, _ in _ours(consumer, view, seq)}

    # SPARQL Update: a new product that sorts first, and the old one comes back
    update = (f"PREFIX bsbm: <{_BSBM_VOCAB}>\n"
              f"PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>\n"
              f"INSERT DATA {{ <urn:new:product> rdfs:label \"  aaa first\" ; a {p['type']} ;\n"
              f"  bsbm:productFeature {p['f1']}, {p['f2']} ;\n"
              f"  bsbm:productPropertyNumeric1 {int(p['x']) + 1} .\n"
              f"  <{first}> bsbm:productFeature {p['f1']} }}")
    r = owner.patch("/pods/shop/catalogue", content=update,
                    headers={"content-type": "application/sparql-update"})
    assert r.status_code == 204, r.text
    seq = int(r.headers["podviews-seq"])
    _check(owner, consumer, view, seq, query)
    assert _ours(consumer, view, seq)[0][0] == "urn:new:product"

    # revocation: nothing of the pod is left, in the results or in any K-relation
    assert owner.delete(f"/admin/consents/{consent}").status_code == 204
    r = owner.put("/pods/shop/other", content="<#a> <#b> <#c> .",
                  headers={"content-type": "text/turtle"})  # a later change to wait for
    assert _ours(consumer, view, int(r.headers["podviews-seq"])) == []
    engine = sa.create_engine(db)
    with engine.connect() as c:
        tables = c.execute(sa.text("SELECT table_name FROM krel_tables WHERE view_id = "
                                   ":v"), {"v": int(view.rsplit("/", 1)[1])}).scalars().all()
        assert tables
        held = {t: c.execute(sa.text(f'SELECT count(*) FROM "{t}"')).scalar_one() for t in tables}
    engine.dispose()
    assert held == dict.fromkeys(tables, 0)


_BSBM_VOCAB = "http://www4.wiwiss.fu-berlin.de/bizer/bsbm/v01/vocabulary/"


def test_healthz_and_openapi(served: tuple[str, str]) -> None:
    base, _ = served
    assert httpx.get(f"{base}/healthz").json() == {"status": "ok"}
    spec = httpx.get(f"{base}/openapi.json").json()
    assert {"/views", "/admin/consents", "/pods/{pod}/{path}"} <= set(spec["paths"])


def test_serve_with_no_database_keeps_an_embedded_one(tmp_path: Path) -> None:
    """`podviews serve` with nothing configured: its own Postgres under the
    data directory, kept across restarts."""
    admin = {"authorization": "Bearer dev-admin-token"}
    for run in range(2):
        with serving({"PODVIEWS_DATA_DIR": str(tmp_path)}, inherit=False) as base:
            r = httpx.post(f"{base}/admin/agents", headers=admin,
                           json={"webid": "https://me.example/#i", "role": "owner"})
            assert r.status_code == (201 if run == 0 else 409)  # the agent outlived the restart
            if run == 0:  # another command on the same data directory shares the cluster
                env = {k: v for k, v in os.environ.items() if not k.startswith("PODVIEWS_")}
                done = subprocess.run([sys.executable, "-m", "server.cli", "check",
                                       "consistency"], env={**env, "PODVIEWS_DATA_DIR":
                                                            str(tmp_path)},
                                      capture_output=True, text=True, timeout=120, check=False)
                assert done.returncode == 0, done.stdout + done.stderr
                assert httpx.get(f"{base}/healthz").status_code == 200  # still running
                # a user's database: an acknowledged write survives a power cut
                shared = sa.create_engine(Embedded(tmp_path / "postgres").start())
                with shared.connect() as c:
                    assert c.execute(sa.text("SHOW fsync")).scalar_one() == "on"
                shared.dispose()


# ------------------------------------------------- documents (issue 19)

DOC_PREFIX = "PREFIX : <http://ex/>\n"
WHERE = "WHERE { GRAPH ?doc { ?s :p ?o } }"
SELECT = f"{DOC_PREFIX}SELECT ?doc ?s ?o {WHERE}"
CONSTRUCT = f"{DOC_PREFIX}CONSTRUCT {{ ?s :from ?doc ; :knows [ :value ?o ] }} {WHERE}"


def _documents(owner: httpx.Client, base: str, docs: list[str]) -> ox.Store:
    """The documents as the pods serve them, each a named graph."""
    store = ox.Store()
    for doc in docs:
        r = owner.get(f"/pods/{doc}", headers={"accept": "application/n-triples"})
        assert r.status_code == 200, r.text
        store.load(r.content, format=ox.RdfFormat.N_TRIPLES,
                   to_graph=ox.NamedNode(f"{base}/pods/{doc}"))
    return store


def _check_documents(owner: httpx.Client, consumer: httpx.Client, base: str,
                     views: tuple[str, str], seq: int, docs: list[str]) -> None:
    store = _documents(owner, base, docs)
    r = consumer.get(f"{views[0]}/results", params={"min_seq": seq, "wait": 60})
    assert r.status_code == 200, r.text
    got = sorted(tuple(b[v]["value"] for v in ("doc", "s", "o"))
                 for b in r.json()["results"]["bindings"])
    solutions = store.query(SELECT)
    assert isinstance(solutions, ox.QuerySolutions)
    want = sorted(tuple(s[v].value for v in ("doc", "s", "o")) for s in solutions)  # type: ignore[union-attr]
    assert got == want
    r = consumer.get(f"{views[1]}/results", params={"min_seq": seq, "wait": 60},
                     headers={"accept": "application/n-triples"})
    assert r.status_code == 200, r.text
    ours, theirs = Graph(), Graph()
    ours.parse(data=r.text, format="nt")
    triples = store.query(CONSTRUCT)
    assert isinstance(triples, ox.QueryTriples)
    theirs.parse(data=triples.serialize(format=ox.RdfFormat.N_TRIPLES), format="nt")
    assert len(ours) == len(theirs) and isomorphic(ours, theirs)


def test_document_views_through_the_server(served: tuple[str, str]) -> None:
    base, _ = served
    admin, made = _agents(base, {"writer": "owner", "reader": "consumer"}, "docs")
    for pod in ("notes", "diary"):
        assert admin.post("/admin/pods", json={"name": pod, "owner": made["writer"]["webid"]}
                          ).status_code == 201
    owner, consumer = (httpx.Client(base_url=base, timeout=120, headers={
        "authorization": f"Bearer {made[w]['token']}"}) for w in ("writer", "reader"))
    turtle = {"content-type": "text/turtle"}
    docs = {"notes/a": ":x :p 1, 2 .", "notes/b": ":x :p 2 . :y :p :x .", "diary/c": ":y :p 3 ."}
    for doc, body in docs.items():
        r = owner.put(f"/pods/{doc}", content=f"@prefix : <http://ex/> .\n{body}", headers=turtle)
        assert r.status_code == 201, r.text
    views = []
    for name, query in (("docs", SELECT), ("derived", CONSTRUCT)):
        r = consumer.post("/views", json={"name": name, "query": query})
        assert r.status_code == 201, r.text
        views.append(r.headers["location"])
    consents = {}
    for pod in ("notes", "diary"):
        r = owner.post("/admin/consents", json={"pod": pod, "consumer": made["reader"]["webid"]})
        assert r.status_code == 201
        consents[pod] = r.json()["id"]
    r = owner.put("/pods/notes/d", content="@prefix : <http://ex/> .\n:z :p :x .",
                  headers=turtle)
    seq = int(r.headers["podviews-seq"])
    both = [*docs, "notes/d"]
    _check_documents(owner, consumer, base, (views[0], views[1]), seq, both)

    r = owner.patch("/pods/notes/b", content="PREFIX : <http://ex/>\nDELETE DATA { :x :p 2 } ;"
                    " INSERT DATA { :w :p 4 }", headers={"content-type": "application/sparql-update"})
    assert r.status_code == 204, r.text
    assert owner.delete("/pods/notes/a").status_code == 204
    r = owner.put("/pods/diary/c", content="@prefix : <http://ex/> .\n:y :p 3, 5 .",
                  headers=turtle)
    seq = int(r.headers["podviews-seq"])
    both.remove("notes/a")
    _check_documents(owner, consumer, base, (views[0], views[1]), seq, both)

    # the diary's consent revoked: its documents leave both views
    assert owner.delete(f"/admin/consents/{consents['diary']}").status_code == 204
    r = owner.put("/pods/notes/e", content="@prefix : <http://ex/> .\n:v :p 6 .", headers=turtle)
    seq = int(r.headers["podviews-seq"])
    _check_documents(owner, consumer, base, (views[0], views[1]), seq,
           [d for d in [*both, "notes/e"] if d.startswith("notes/")])

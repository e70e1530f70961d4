"""The HTTP API in process (real Postgres, the worker thread running): LDP
semantics, views, consent — each answer checked against what a client of a
Solid server and a SPARQL endpoint expects."""

from __future__ import annotations

import csv
import io

import pyoxigraph as ox
import pytest

from tests.api.api_helpers import TURTLE, World, world

EX = "@prefix : <http://ex/> .\n"


@pytest.fixture
def w(migrated: str):  # type: ignore[no-untyped-def]
    with world(migrated) as w:
        yield w


def _view(w: World, query: str, who: str = "consumer") -> str:
    r = w.client.post("/views", json={"name": "v", "query": "PREFIX : <http://ex/>\n" + query},
                      headers=w.as_(who))
    assert r.status_code == 201, r.text
    return r.headers["location"]


def _grant(w: World, pod: str = "alice", consumer: str = "consumer") -> int:
    r = w.client.post("/admin/consents", json={"pod": pod, "consumer": w.webids[consumer]},
                      headers=w.as_("owner" if pod == "alice" else "other_owner"))
    assert r.status_code == 201, r.text
    return int(r.json()["id"])


def _rows(w: World, view: str, seq: int, who: str = "consumer") -> list[dict[str, str]]:
    r = w.client.get(f"{view}/results", params={"min_seq": seq}, headers=w.as_(who))
    assert r.status_code == 200, r.text
    return [{k: v["value"] for k, v in b.items()} for b in r.json()["results"]["bindings"]]


def test_writes_reach_the_view_in_order_of_their_sequence(w: World) -> None:
    view = _view(w, "SELECT ?s (COUNT(?o) AS ?n) WHERE { ?s :p ?o } GROUP BY ?s ORDER BY ?s")
    _grant(w)
    r = w.client.put("/pods/alice/data", content=EX + ":a :p 1, 2 . :b :p 3 .",
                     headers={**TURTLE, **w.as_("owner")})
    assert r.status_code == 201 and r.headers["location"] == "http://pods.test/pods/alice/data"
    assert _rows(w, view, int(r.headers["podviews-seq"])) == [
        {"s": "http://ex/a", "n": "2"}, {"s": "http://ex/b", "n": "1"}]
    r = w.client.put("/pods/alice/data", content=EX + ":a :p 1 .",
                     headers={**TURTLE, **w.as_("owner")})
    assert r.status_code == 204
    assert _rows(w, view, int(r.headers["podviews-seq"])) == [{"s": "http://ex/a", "n": "1"}]


def test_patches_n3_and_sparql_update(w: World) -> None:
    h = w.as_("owner")
    w.client.put("/pods/alice/p", content=EX + ":a :name \"Garcia\" ; :given \"Claudia\" .",
                 headers={**TURTLE, **h})
    n3 = ("@prefix solid: <http://www.w3.org/ns/solid/terms#>. @prefix : <http://ex/>.\n"
          "_:r a solid:InsertDeletePatch; solid:where { ?p :name \"Garcia\" };\n"
          "  solid:inserts { ?p :given \"Alex\" }; solid:deletes { ?p :given \"Claudia\" }.")
    r = w.client.patch("/pods/alice/p", content=n3, headers={"content-type": "text/n3", **h})
    assert r.status_code == 204 and int(r.headers["podviews-seq"]) > 0
    update = "PREFIX : <http://ex/> DELETE { ?s :name ?n } INSERT { ?s :name \"G.\" } " \
             "WHERE { ?s :name ?n }"
    r = w.client.patch("/pods/alice/p", content=update,
                       headers={"content-type": "application/sparql-update", **h})
    assert r.status_code == 204
    got = _store(w.client.get("/pods/alice/p", headers={"accept": "application/n-triples", **h}))
    assert got == {('<http://ex/a>', '<http://ex/given>', '"Alex"'),
                   ('<http://ex/a>', '<http://ex/name>', '"G."')}
    # where matching twice, and a deletion that is not there: 409, nothing changed
    two = n3.replace('?p :name "Garcia"', "?p ?q ?o")
    assert w.client.patch("/pods/alice/p", content=two,
                          headers={"content-type": "text/n3", **h}).status_code == 409
    gone = n3.replace('?p :name "Garcia"', '?p :name "G."')
    assert w.client.patch("/pods/alice/p", content=gone,
                          headers={"content-type": "text/n3", **h}).status_code == 409
    for body, ct in (("not n3 {", "text/n3"), ("CLEAR ALL", "application/sparql-update"),
                     ("INSERT DATA { GRAPH <g> { <a> <b> <c> } }", "application/sparql-update")):
        r = w.client.patch("/pods/alice/p", content=body, headers={"content-type": ct, **h})
        assert r.status_code == 400 and r.headers["content-type"] == "application/problem+json"
    assert w.client.patch("/pods/alice/p", content="x",
                          headers={"content-type": "text/plain", **h}).status_code == 415
    after = _store(w.client.get("/pods/alice/p", headers={"accept": "application/n-triples", **h}))
    assert after == got


def _store(r) -> set[tuple[str, str, str]]:  # type: ignore[no-untyped-def]
    assert r.status_code == 200, r.text
    return {(str(q.subject), str(q.predicate), str(q.object))
            for q in ox.parse(r.content, format=ox.RdfFormat.N_TRIPLES)}


def test_etags_and_conditional_requests(w: World) -> None:
    h = {**TURTLE, **w.as_("owner")}
    r = w.client.put("/pods/alice/c", content=EX + ":a :p 1 .", headers={**h, "if-none-match": "*"})
    assert r.status_code == 201
    etag = r.headers["etag"]
    assert w.client.put("/pods/alice/c", content=EX + ":a :p 2 .",
                        headers={**h, "if-none-match": "*"}).status_code == 412
    assert w.client.put("/pods/alice/c", content=EX + ":a :p 2 .",
                        headers={**h, "if-match": '"stale"'}).status_code == 412
    r = w.client.put("/pods/alice/c", content=EX + ":a :p 2 .", headers={**h, "if-match": etag})
    assert r.status_code == 204 and r.headers["etag"] != etag
    got = w.client.get("/pods/alice/c", headers=w.as_("owner"))
    assert got.status_code == 200 and got.headers["content-type"].startswith("text/turtle")
    assert "ldp#Resource" in got.headers["link"] and "text/n3" in got.headers["accept-patch"]
    again = w.client.get("/pods/alice/c", headers={"if-none-match": got.headers["etag"],
                                                   **w.as_("owner")})
    assert again.status_code == 304
    head = w.client.head("/pods/alice/c", headers=w.as_("owner"))
    assert head.status_code == 200 and head.content == b""
    jsonld = w.client.get("/pods/alice/c", headers={"accept": "application/ld+json",
                                                    **w.as_("owner")})
    assert jsonld.headers["content-type"].startswith("application/ld+json")
    assert jsonld.headers["etag"] != got.headers["etag"]  # a representation each
    assert w.client.delete("/pods/alice/c", headers={"if-match": '"stale"',
                                                     **w.as_("owner")}).status_code == 412
    assert w.client.delete("/pods/alice/c", headers=w.as_("owner")).status_code == 204
    assert w.client.get("/pods/alice/c", headers=w.as_("owner")).status_code == 404


def test_containers_list_members_and_take_posts(w: World) -> None:
    h = {**TURTLE, **w.as_("owner")}
    w.client.put("/pods/alice/notes/one", content=EX + ":a :p 1 .", headers=h)
    w.client.put("/pods/alice/notes/deep/two", content=EX + ":a :p 2 .", headers=h)
    r = w.client.post("/pods/alice/notes/", content="<> <http://ex/p> 3 .",
                      headers={**h, "slug": "my note!"})
    assert r.status_code == 201
    made = r.headers["location"]
    assert made == "http://pods.test/pods/alice/notes/my-note-"
    posted = _store(w.client.get(made.removeprefix("http://pods.test"),
                                 headers={"accept": "application/n-triples", **w.as_("owner")}))
    assert posted == {(f"<{made}>", "<http://ex/p>", '"3"^^<http://www.w3.org/2001/XMLSchema#integer>')}
    listing = _store(w.client.get("/pods/alice/notes/",
                                  headers={"accept": "application/n-triples", **w.as_("owner")}))
    contains = {o for s, p, o in listing if p == "<http://www.w3.org/ns/ldp#contains>"}
    base = "http://pods.test/pods/alice/notes/"
    assert contains == {f"<{base}one>", f"<{base}deep/>", f"<{base}my-note->"}
    root = w.client.get("/pods/alice/", headers=w.as_("owner"))
    assert root.status_code == 200 and "BasicContainer" in root.headers["link"]
    assert w.client.delete("/pods/alice/notes/", headers=w.as_("owner")).status_code == 409
    assert w.client.delete("/pods/alice/", headers=w.as_("owner")).status_code == 405
    assert w.client.put("/pods/alice/notes/", content=EX, headers=h).status_code == 409
    assert w.client.post("/pods/alice/notes/one", content=EX, headers=h).status_code == 405
    assert w.client.get("/pods/alice/nothing/", headers=w.as_("owner")).status_code == 404


def test_malformed_rdf_stores_nothing(w: World) -> None:
    r = w.client.put("/pods/alice/x", content="this is not turtle",
                     headers={**TURTLE, **w.as_("owner")})
    assert r.status_code == 400 and r.headers["content-type"] == "application/problem+json"
    assert "turtle" in r.json()["detail"]
    assert w.client.get("/pods/alice/x", headers=w.as_("owner")).status_code == 404


def test_bad_queries_are_problem_documents_and_store_nothing(w: World) -> None:
    r = w.client.post("/views", json={"name": "bad", "query": "SELECT * WHERE {\n ?s ?p }"},
                      headers=w.as_("consumer"))
    assert r.status_code == 400 and r.headers["content-type"] == "application/problem+json"
    assert r.json()["line"] >= 1 and r.json()["column"] >= 1
    r = w.client.post("/views", json={"name": "p",
                                      "query": "SELECT * { SERVICE <http://e/> { ?s ?p ?o } }"},
                      headers=w.as_("consumer"))
    assert r.status_code == 400 and r.json()["feature"] == "SERVICE"
    for query, rule in (("SELECT * { ?s ?p ?o BIND(1 AS ?o) }", "§18.2.1"),  # note 209
                        ("SELECT ?o { ?s ?p ?o } GROUP BY ?s", "§11.4"),
                        ("SELECT ?s { ?s ?p ?o VALUES (?o ?s) { (1) } }", "§10.2.1")):
        r = w.client.post("/views", json={"name": "rule", "query": query},
                          headers=w.as_("consumer"))
        assert r.status_code == 400 and rule in r.json()["detail"], r.text
    assert w.client.get("/views", headers=w.as_("consumer")).json() == []


def test_results_as_csv_tsv_ask_and_304(w: World) -> None:
    view = _view(w, "SELECT ?s ?o WHERE { ?s :p ?o } ORDER BY ?o LIMIT 2")
    ask = _view(w, "ASK { ?s :p 2 }")
    _grant(w)
    seq = w.client.put("/pods/alice/d", content=EX + ':a :p 3, "x,y"@en . :b :p 1 .',
                       headers={**TURTLE, **w.as_("owner")}).headers["podviews-seq"]
    h = w.as_("consumer")
    r = w.client.get(f"{view}/results", params={"min_seq": seq}, headers={"accept": "text/csv", **h})
    assert r.headers["content-type"].startswith("text/csv")
    assert list(csv.reader(io.StringIO(r.text))) == [["s", "o"], ["http://ex/b", "1"],
                                                    ["http://ex/a", "3"]]
    r = w.client.get(f"{view}/results", headers={"accept": "text/tab-separated-values", **h})
    assert r.text.splitlines()[0] == "?s\t?o"
    assert r.text.splitlines()[1] == '<http://ex/b>\t"1"^^<http://www.w3.org/2001/XMLSchema#integer>'
    r = w.client.get(f"{view}/results", headers=h)
    assert w.client.get(f"{view}/results", headers={"if-none-match": r.headers["etag"],
                                                    **h}).status_code == 304
    assert w.client.get(f"{ask}/results", headers=h).json()["boolean"] is False
    status = w.client.get(view, headers=h).json()
    assert status["status"] == "ready" and status["rows"] == 3 and status["plan"]
    assert status["watermark"] >= int(seq)
    assert w.client.get(f"{view}/results", params={"min_seq": 10**6},
                        headers=h).status_code == 409  # no such change yet


def test_revocation_removes_the_pod_and_deletion_drops_the_view(w: World) -> None:
    view = _view(w, "SELECT ?s WHERE { ?s :p ?o }")
    consent = _grant(w)
    seq = int(w.client.put("/pods/alice/d", content=EX + ":a :p 1 .",
                           headers={**TURTLE, **w.as_("owner")}).headers["podviews-seq"])
    assert _rows(w, view, seq) == [{"s": "http://ex/a"}]
    assert w.client.delete(f"/admin/consents/{consent}", headers=w.as_("owner")).status_code == 204
    assert w.client.delete(f"/admin/consents/{consent}", headers=w.as_("owner")).status_code == 409
    r = w.client.get(f"{view}/results", params={"min_seq": seq}, headers=w.as_("consumer"))
    assert r.json()["results"]["bindings"] == []
    audit = w.client.get("/admin/consents", headers=w.as_("owner")).json()
    assert [e["action"] for e in audit[0]["events"]] == ["grant", "revoke"]
    assert audit[0]["events"][0]["actor"] == w.webids["owner"]
    assert w.client.delete(view, headers=w.as_("consumer")).status_code == 204
    assert w.client.get(view, headers=w.as_("consumer")).status_code == 404


def test_a_dead_job_fails_the_view_and_readers_are_told(w: World, migrated: str) -> None:
    import sqlalchemy as sa

    from storage import queue

    view = _view(w, "SELECT ?s WHERE { ?s :p ?o }")
    assert _rows(w, view, 0) == []
    engine = sa.create_engine(migrated)
    with engine.begin() as c:  # a job the worker cannot run, with no retries left
        queue.enqueue(c, "grant", int(view.rsplit("/", 1)[1]), {"consent": "none"},
                      max_attempts=1)
    engine.dispose()
    h = w.as_("consumer")
    r = w.client.get(f"{view}/results", params={"wait": 10}, headers=h)
    assert r.status_code == 409 and "failed" in r.json()["detail"], r.text
    status = w.client.get(view, headers=h).json()
    assert status["status"] == "failed"
    assert status["pending"][0]["status"] == "dead" and status["pending"][0]["error"]


def test_graph_and_construct_views(w: World) -> None:
    """Issue 19: ``GRAPH ?doc`` names the document a fact came from; a
    CONSTRUCT view is a graph, in Turtle, N-Triples or JSON-LD by Accept,
    with ETags — each compared with pyoxigraph over the same documents."""
    where = "WHERE { GRAPH ?doc { ?s :p ?o } }"
    docs = _view(w, f"SELECT ?doc ?s {where}")
    derived = _view(w, f"CONSTRUCT {{ ?s :in ?doc ; :seen [ :value ?o ] }} {where}")
    _grant(w)
    h = {**TURTLE, **w.as_("owner")}
    w.client.put("/pods/alice/a", content=EX + ":x :p 1, 2 .", headers=h)
    seq = w.client.put("/pods/alice/b", content=EX + ":x :p 2 . :y :p 3 .",
                       headers=h).headers["podviews-seq"]
    store = ox.Store()
    for doc in ("a", "b"):
        iri = f"http://pods.test/pods/alice/{doc}"
        store.load(w.client.get(f"/pods/alice/{doc}", headers=w.as_("owner")).content,
                   format=ox.RdfFormat.TURTLE, base_iri=iri, to_graph=ox.NamedNode(iri))
    prefix = "PREFIX : <http://ex/>\n"
    want = sorted((str(s["doc"].value), str(s["s"].value))
                  for s in store.query(f"{prefix}SELECT ?doc ?s {where}"))  # type: ignore[union-attr]
    assert sorted((r["doc"], r["s"]) for r in _rows(w, docs, int(seq))) == want
    expected = ox.Store()
    for t in store.query(f"{prefix}CONSTRUCT {{ ?s :in ?doc ; :seen [ :value ?o ] }} {where}"):
        expected.add(ox.Quad(*t))  # type: ignore[misc]
    c = w.as_("consumer")
    for media, fmt in (("text/turtle", ox.RdfFormat.TURTLE),
                       ("application/n-triples", ox.RdfFormat.N_TRIPLES),
                       ("application/ld+json", ox.RdfFormat.JSON_LD)):
        r = w.client.get(f"{derived}/results", params={"min_seq": seq},
                         headers={"accept": media, **c})
        assert r.status_code == 200 and r.headers["content-type"].startswith(media)
        got = ox.Store()
        got.load(r.content, format=fmt)
        assert len(got) == len(expected) == 11, (len(got), len(expected))
        assert _isomorphic(got, expected)
        assert w.client.get(f"{derived}/results", headers={
            "accept": media, "if-none-match": r.headers["etag"], **c}).status_code == 304
    # a dataset of documents elsewhere is refused: no other document is fetched
    r = w.client.post("/views", json={"name": "far", "query": "SELECT * FROM "
                                      "<http://elsewhere.example/d> { ?s ?p ?o }"}, headers=c)
    assert r.status_code == 400 and "FROM <http://elsewhere.example/d>" in r.text


def _isomorphic(a: ox.Store, b: ox.Store) -> bool:
    from rdflib import Graph
    from rdflib.compare import isomorphic

    ga, gb = Graph(), Graph()
    for g, store in ((ga, a), (gb, b)):
        g.parse(data=store.dump(format=ox.RdfFormat.N_TRIPLES, from_graph=ox.DefaultGraph()),
                format="nt")
    return isomorphic(ga, gb)


def test_construct_view_writes_its_graph_into_a_resource(w: World) -> None:
    """Issue 19: a CONSTRUCT view's graph written into a resource the
    consumer may write; other views read it; the view never reads its own
    output (its template feeds its pattern: reading it would grow forever)."""
    h = {**TURTLE, **w.as_("owner")}
    assert w.client.put("/pods/alice/derived/readme", content="<#a> <#b> <#c> .",
                        headers=h).status_code == 201
    acl = ("@prefix acl: <http://www.w3.org/ns/auth/acl#>.\n"
           f"<#w> a acl:Authorization; acl:agent <{w.webids['consumer']}>;"
           " acl:mode acl:Write, acl:Append, acl:Read; acl:accessTo <./>; acl:default <./>.\n")
    assert w.client.put("/pods/alice/derived/.acl", content=acl, headers=h).status_code == 201
    c = w.as_("consumer")
    target = "http://pods.test/pods/alice/derived/out"
    construct = "PREFIX : <http://ex/>\nCONSTRUCT { [] :p ?o } WHERE { ?s :p ?o }"
    r = w.client.post("/views", json={"name": "copy", "query": construct, "target": target},
                      headers=c)
    assert r.status_code == 201, r.text
    derived = r.headers["location"]
    reader = _view(w, "SELECT ?s ?o WHERE { ?s :p ?o }")
    for bad, status in (("http://pods.test/pods/bob/x", 404), (target + "/", 400)):
        r = w.client.post("/views", json={"name": "x", "query": construct, "target": bad},
                          headers=c)
        assert r.status_code == status, r.text
    _grant(w)
    data = EX + ":a :p 1, 2 . :b :p 2 ."
    seq = w.client.put("/pods/alice/data", content=data, headers=h).headers["podviews-seq"]
    assert w.client.get(f"{derived}/results", params={"min_seq": seq}, headers=c).status_code == 200
    # a later write: every job its write-back woke (the view's own too) is done by then
    later = w.client.put("/pods/alice/other", content=EX + ":z :q 1 .",
                         headers=h).headers["podviews-seq"]
    assert w.client.get(f"{derived}/results", params={"min_seq": later},
                        headers=c).status_code == 200
    store = ox.Store()
    store.load(data.encode(), format=ox.RdfFormat.TURTLE)
    expected = ox.Store()
    for t in store.query(construct):
        expected.add(ox.Quad(*t))  # type: ignore[misc]
    written = ox.Store()
    r = w.client.get("/pods/alice/derived/out", headers={"accept": "text/turtle", **w.as_("owner")})
    written.load(r.content, format=ox.RdfFormat.TURTLE, base_iri=target)
    assert len(written) == len(expected) == 3 and _isomorphic(written, expected)
    for t in written:  # the other view reads the derived document in the pod's union
        store.add(ox.Quad(t.subject, t.predicate, t.object))
    want = sorted((s["s"].value, s["o"].value) for s in  # type: ignore[union-attr]
                  store.query("PREFIX : <http://ex/> SELECT ?s ?o { ?s :p ?o }"))
    got = sorted((r["s"], r["o"]) for r in _rows(w, reader, int(later)))
    assert len(got) == len(want) == 6 and sorted(o for _, o in got) == sorted(o for _, o in want)
    assert [r for r in got if r[0].startswith("http")] == [r for r in want if r[0].startswith(
        "http")]  # the blank nodes' labels are each engine's own


def test_two_construct_views_write_blank_nodes_of_their_own(w: World) -> None:
    """Two CONSTRUCT views of one query, each writing its graph into its own
    resource, write two blank nodes per solution, not one: each document's
    blank nodes are its own (design note 206), and a view reading both
    counts them apart."""
    h = {**TURTLE, **w.as_("owner")}
    acl = ("@prefix acl: <http://www.w3.org/ns/auth/acl#>.\n"
           f"<#w> a acl:Authorization; acl:agent <{w.webids['consumer']}>;"
           " acl:mode acl:Write, acl:Append, acl:Read; acl:accessTo <./>; acl:default <./>.\n")
    assert w.client.put("/pods/alice/derived/.acl", content=acl, headers=h).status_code == 201
    construct = "PREFIX : <http://ex/>\nCONSTRUCT { [] :tag ?o } WHERE { ?s :p ?o }"
    views = [w.client.post("/views", json={"name": name, "query": construct, "target": (
        f"http://pods.test/pods/alice/derived/{name}")}, headers=w.as_("consumer"))
        for name in ("one", "two")]
    assert [r.status_code for r in views] == [201, 201], [r.text for r in views]
    reader = _view(w, "SELECT (COUNT(DISTINCT ?x) AS ?n) WHERE { ?x :tag ?o }")
    _grant(w)
    seq = w.client.put("/pods/alice/data", content=EX + ":a :p 1, 2 .",
                       headers=h).headers["podviews-seq"]
    for r in views:  # each view's graph written by then (CONSTRUCT results are Turtle)
        assert w.client.get(f"{r.headers['location']}/results", params={"min_seq": seq},
                            headers=w.as_("consumer")).status_code == 200
    later = w.client.put("/pods/alice/other", content=EX + ":z :q 1 .",
                         headers=h).headers["podviews-seq"]
    assert _rows(w, reader, int(later)) == [{"n": "4"}]


def test_signed_numbers_in_a_query_are_the_terms_they_spell(w: World) -> None:
    """``-0``, ``+1.50``, ``-0010.50`` and ``-1.0e0`` in a pattern or VALUES
    are the literals their tokens spell (SPARQL 1.1 §19.8; RDF 1.1 term
    equality is by lexical form): rdflib negated the number (``-0`` matched
    ``"0"``, not ``"-0"``), dropped the sign of ``+1.50`` and raised on
    ``-0010.50``. Not against pyoxigraph: its store keeps numbers by value
    (``"-0"`` and ``"0"`` are one term there), so the rows are the spec's."""
    data = (EX + ':a :p -0, -0010.50, -1.0e0 ; :q +1.50 . :b :p 0, "-10.5"^^<http://www.w3.org/'
            '2001/XMLSchema#decimal>, "-1.0"^^<http://www.w3.org/2001/XMLSchema#double> ; '
            ':q 1.50 .')
    view = _view(w, "SELECT ?s ?o WHERE { { ?s :p -0 } UNION { ?s :p -0010.50 } UNION "
                    "{ ?s :p -1.0e0 } UNION { ?s :q +1.50 } UNION { VALUES ?o { -0 } ?s :p ?o } }")
    _grant(w)
    seq = w.client.put("/pods/alice/data", content=data,
                       headers={**TURTLE, **w.as_("owner")}).headers["podviews-seq"]
    got = sorted((r["s"], r.get("o", "")) for r in _rows(w, view, int(seq)))
    assert got == [("http://ex/a", "")] * 4 + [("http://ex/a", "-0")]

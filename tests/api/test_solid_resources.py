"""The Solid Protocol's resource model in process: containers as resources,
non-RDF resources and their descriptions, one namespace, ETags that round
trip, the protocol's headers, CORS — and the regressions of issue 16 (the
ETag GET gave never matched a write's, a space in a name was a 500, ``d1``
and ``d1/`` could both exist)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from rdflib import Graph
from rdflib.compare import isomorphic

from server.api.ldp import rdf
from storage.terms import TermTable
from tests.api.api_helpers import TURTLE, World, world

EX = "@prefix : <http://ex/> .\n"
LDP = "http://www.w3.org/ns/ldp#"


@pytest.fixture
def w(migrated: str):  # type: ignore[no-untyped-def]
    with world(migrated) as w:
        yield w


def _nt(w: World, path: str) -> set[str]:
    r = w.client.get(path, headers={"accept": "application/n-triples", **w.as_("owner")})
    assert r.status_code == 200, r.text
    return {line for line in r.text.splitlines() if line.strip()}


def test_etag_of_get_is_what_writes_compare(w: World) -> None:
    """Regression: GET's ETag (of any representation) satisfies If-Match on
    PUT, PATCH and DELETE; a stale one is 412; HEAD gives GET's ETag."""
    h = {**TURTLE, **w.as_("owner")}
    assert w.client.put("/pods/alice/doc", content=EX + ":a :p 1 .", headers=h).status_code == 201
    for accept in ("text/turtle", "application/ld+json", "application/n-triples"):
        got = w.client.get("/pods/alice/doc", headers={"accept": accept, **w.as_("owner")})
        head = w.client.head("/pods/alice/doc", headers={"accept": accept, **w.as_("owner")})
        assert head.headers["etag"] == got.headers["etag"]
        r = w.client.put("/pods/alice/doc", content=EX + f":a :p <{accept}> .",
                         headers={**h, "if-match": got.headers["etag"]})
        assert r.status_code == 204, r.text
        assert w.client.put("/pods/alice/doc", content=EX + ":a :p 0 .",
                            headers={**h, "if-match": got.headers["etag"]}).status_code == 412
        assert r.headers["etag"] == w.client.get("/pods/alice/doc", headers=w.as_(
            "owner")).headers["etag"]  # the write's ETag is the default representation's
    etag = w.client.get("/pods/alice/doc", headers=w.as_("owner")).headers["etag"]
    n3 = ("@prefix solid: <http://www.w3.org/ns/solid/terms#>.\n"
          "_:p a solid:InsertDeletePatch; solid:inserts { <#a> <#b> <#c> }.")
    r = w.client.patch("/pods/alice/doc", content=n3,
                       headers={"content-type": "text/n3", "if-match": etag, **w.as_("owner")})
    assert r.status_code == 204
    assert w.client.delete("/pods/alice/doc", headers={"if-match": etag,
                                                       **w.as_("owner")}).status_code == 412
    assert w.client.delete("/pods/alice/doc", headers={"if-match": r.headers["etag"],
                                                       **w.as_("owner")}).status_code == 204


ODD_TERMS = EX + (
    ':a :p "plain", "tagged"@en-gb, "1.50"^^<http://www.w3.org/2001/XMLSchema#decimal>, '
    '"quote \\" and\\nline", "été 😀", _:b .\n'
    '_:b :q _:c . _:c :q _:b . <http://ex/with#frag> a :T . :a :p <http://ex/deep/er> .\n')


def _graph(body: bytes, media: str) -> Graph:
    """A body parsed by rdflib (not the writer's pyoxigraph)."""
    return Graph().parse(data=body, format={"text/turtle": "turtle", "application/ld+json":
                                            "json-ld", "application/n-triples": "nt"}[media])


def test_a_document_reads_back_as_written_in_every_type(w: World) -> None:
    """A GET writes the stored triples in each type it offers (pyoxigraph's
    writer, rdflib as the reader here): the same graph as the PUT's, blank
    nodes and their cycle, escapes, language and datatypes kept; Turtle's
    prefixes never stand for a namespace a longer IRI extends (design note
    204). A term pyoxigraph will not make (a language subtag of more than
    eight letters) is refused by a PATCH as by a PUT (design note 218); one
    an earlier server stored is still written (rdflib's writer)."""
    h = {**TURTLE, **w.as_("owner")}
    assert w.client.put("/pods/alice/odd", content=ODD_TERMS.encode(), headers=h).status_code == 201
    odd = "<http://ex/a> <http://ex/r> \"x\"@en-abcdefghijk ."
    refused = w.client.patch("/pods/alice/refused", content=f"INSERT DATA {{ {odd} }}", headers={
        "content-type": "application/sparql-update", **w.as_("owner")})
    assert refused.status_code == 400 and "not BCP 47" in refused.text
    assert w.client.get("/pods/alice/refused", headers=w.as_("owner")).status_code == 404
    written = _graph(ODD_TERMS.encode(), "text/turtle")
    for accept in ("text/turtle", "application/ld+json", "application/n-triples"):
        got = w.client.get("/pods/alice/odd", headers={"accept": accept, **w.as_("owner")})
        assert got.status_code == 200 and got.headers["content-type"].startswith(accept)
        assert isomorphic(_graph(got.content, accept), written), (accept, got.text)
        assert b"\\/" not in got.content  # no prefixed name escaping a slash
        stored = _graph(odd.encode(), "application/n-triples")
        assert isomorphic(_graph(rdf.write(TermTable.of(set(stored)), accept), accept), stored)


def test_a_turtle_body_names_a_bounded_number_of_namespaces(w: World) -> None:
    """A document whose 200 predicates each have a namespace of their own is
    written with at most ``PREFIXES`` and ``MORE_PREFIXES`` prefixes
    (pyoxigraph's writer tries each on every IRI), and reads back whole."""
    body = "".join(f"<http://ex/s> <http://ex/{i}/p> {i} .\n" for i in range(200))
    assert w.client.put("/pods/alice/wide", content=body.encode(),
                        headers={**TURTLE, **w.as_("owner")}).status_code == 201
    got = w.client.get("/pods/alice/wide", headers={"accept": "text/turtle", **w.as_("owner")})
    assert got.status_code == 200
    assert got.text.count("@prefix") <= len(rdf.PREFIXES) + rdf.MORE_PREFIXES
    assert isomorphic(_graph(got.content, "text/turtle"), _graph(body.encode(), "text/turtle"))


def test_a_conditional_get_answered_304_reads_no_content(w: World) -> None:
    """If-None-Match naming the representation's ETag is 304 without the
    resource's triples (or bytes) read; another type's is a 200 with them."""
    h = w.as_("owner")
    assert w.client.put("/pods/alice/cond", content=ODD_TERMS.encode(),
                        headers={**TURTLE, **h}).status_code == 201
    assert w.client.put("/pods/alice/file", content=b"bytes",
                        headers={"content-type": "text/plain", **h}).status_code == 201
    sent: list[str] = []
    engine = w.client.app.state.engine  # type: ignore[attr-defined]

    def seen(conn, cursor, statement, *_) -> None:  # type: ignore[no-untyped-def]
        sent.append(statement)

    sa.event.listen(engine, "before_cursor_execute", seen)
    try:
        for path, accept in (("cond", "text/turtle"), ("file", "text/plain")):
            asked = {"accept": accept, **h}
            etag = w.client.get(f"/pods/alice/{path}", headers=asked).headers["etag"]
            sent.clear()
            r = w.client.get(f"/pods/alice/{path}", headers={**asked, "if-none-match": etag})
            assert r.status_code == 304 and r.headers["etag"] == etag and not r.content
            assert not [s for s in sent if "FROM quads" in s or s.startswith("SELECT body")], sent
        sent.clear()
        r = w.client.get("/pods/alice/cond", headers={
            "accept": "application/n-triples", "if-none-match": etag, **h})
        assert r.status_code == 200 and any("FROM quads" in s for s in sent)
    finally:
        sa.event.remove(engine, "before_cursor_execute", seen)


def test_a_space_in_a_name(w: World) -> None:
    """Regression: ``with%20space`` is created, listed, read and deleted; its
    container keeps answering 200."""
    h = {**TURTLE, **w.as_("owner")}
    r = w.client.put("/pods/alice/dir/with%20space", content=EX + ":a :p 1 .", headers=h)
    assert r.status_code == 201, r.text
    assert r.headers["location"] == "http://pods.test/pods/alice/dir/with%20space"
    assert "<http://pods.test/pods/alice/dir/with%20space>" in " ".join(
        _nt(w, "/pods/alice/dir/"))
    assert _nt(w, "/pods/alice/dir/with%20space") == {("<http://ex/a> <http://ex/p> "
                                                     '"1"^^<http://www.w3.org/2001/XMLSchema#integer> .')}
    assert w.client.get("/pods/alice/", headers=w.as_("owner")).status_code == 200
    assert w.client.delete("/pods/alice/dir/with%20space",
                           headers=w.as_("owner")).status_code == 204


def test_a_document_and_a_container_never_share_a_name(w: World) -> None:
    """Regression: ``d1`` and ``d1/`` cannot both exist (Solid Protocol §3.1),
    nor can a document stand where a container is needed."""
    h = {**TURTLE, **w.as_("owner")}
    assert w.client.put("/pods/alice/d1", content=EX, headers=h).status_code == 201
    assert w.client.put("/pods/alice/d1/", content=EX, headers=h).status_code == 409
    assert w.client.put("/pods/alice/d1/x", content=EX, headers=h).status_code == 409
    assert w.client.put("/pods/alice/d2/", content="", headers=h).status_code == 201
    assert w.client.put("/pods/alice/d2", content=EX, headers=h).status_code == 409
    r = w.client.post("/pods/alice/", content="", headers={**h, "slug": "d2"})
    assert r.status_code == 201 and r.headers["location"] != "http://pods.test/pods/alice/d2"


def test_containers_are_resources(w: World) -> None:
    h = {**TURTLE, **w.as_("owner")}
    r = w.client.put("/pods/alice/empty/", content="", headers=h)
    assert r.status_code == 201
    got = w.client.get("/pods/alice/empty/", headers=w.as_("owner"))
    assert got.status_code == 200 and f"<{LDP}BasicContainer>" in got.headers["link"]
    assert set(got.headers["allow"].split(", ")) == {"OPTIONS", "HEAD", "GET", "POST", "DELETE"}
    r = w.client.post("/pods/alice/empty/", content="", headers={
        **w.as_("owner"), "slug": "sub", "link": f'<{LDP}BasicContainer>; rel="type"'})
    assert r.status_code == 201 and r.headers["location"].endswith("/empty/sub/")
    assert w.client.delete("/pods/alice/empty/", headers=w.as_("owner")).status_code == 409
    assert w.client.delete("/pods/alice/empty/sub/", headers=w.as_("owner")).status_code == 204
    assert w.client.delete("/pods/alice/empty/", headers=w.as_("owner")).status_code == 204
    assert w.client.get("/pods/alice/empty/", headers=w.as_("owner")).status_code == 404
    # intermediate containers, and containment triples the server's own
    assert w.client.put("/pods/alice/a/b/c", content=EX, headers=h).status_code == 201
    assert w.client.get("/pods/alice/a/b/", headers=w.as_("owner")).status_code == 200
    r = w.client.put("/pods/alice/new/", content=f"<> <{LDP}contains> <x> .", headers=h)
    assert r.status_code == 409
    assert w.client.post("/pods/alice/missing/", content=EX, headers=h).status_code == 404
    root = w.client.get("/pods/alice/", headers=w.as_("owner"))
    assert '<http://www.w3.org/ns/pim/space#Storage>; rel="type"' in root.headers["link"]
    assert f'<{w.webids["owner"]}>; rel="http://www.w3.org/ns/solid/terms#owner"' in \
        root.headers["link"]
    assert "DELETE" not in root.headers["allow"]


def test_non_rdf_resources_and_their_descriptions(w: World) -> None:
    png = bytes(range(256)) * 10
    r = w.client.put("/pods/alice/pic.png", content=png,
                     headers={"content-type": "image/png", **w.as_("owner")})
    assert r.status_code == 201
    got = w.client.get("/pods/alice/pic.png", headers=w.as_("owner"))
    assert got.content == png and got.headers["content-type"] == "image/png"
    assert got.headers["etag"] == r.headers["etag"]
    assert '<http://pods.test/pods/alice/pic.png.meta>; rel="describedby"' in got.headers["link"]
    n3 = ("@prefix solid: <http://www.w3.org/ns/solid/terms#>.\n"
          "_:p a solid:InsertDeletePatch; solid:inserts { <pic.png> <http://ex/p> 1 }.")
    r = w.client.patch("/pods/alice/pic.png.meta", content=n3,
                       headers={"content-type": "text/n3", **w.as_("owner")})
    assert r.status_code == 204, r.text
    assert _nt(w, "/pods/alice/pic.png.meta") == {
        ("<http://pods.test/pods/alice/pic.png> <http://ex/p> "
        '"1"^^<http://www.w3.org/2001/XMLSchema#integer> .')}
    assert w.client.patch("/pods/alice/pic.png", content=n3, headers={
        "content-type": "text/n3", **w.as_("owner")}).status_code == 409
    r = w.client.post("/pods/alice/", content=b"%PDF-1.4", headers={
        "content-type": "application/pdf", "slug": "doc.pdf", **w.as_("owner")})
    assert r.status_code == 201
    assert w.client.get(r.headers["location"].removeprefix("http://pods.test"),
                        headers=w.as_("owner")).content == b"%PDF-1.4"
    assert w.client.delete("/pods/alice/pic.png", headers=w.as_("owner")).status_code == 204
    assert w.client.get("/pods/alice/pic.png.meta", headers=w.as_("owner")).status_code == 404


def test_headers_methods_and_cors(w: World) -> None:
    h = w.as_("owner")
    assert w.client.put("/pods/alice/x", content=b"x", headers=h).status_code == 400  # no type
    missing = w.client.get("/pods/alice/nothing", headers=h)
    assert missing.status_code == 404
    assert set(missing.headers["allow"].split(", ")) == {"PUT", "PATCH"}
    assert missing.headers["accept-put"] == "*/*" and "text/n3" in missing.headers["accept-patch"]
    w.client.put("/pods/alice/doc", content=EX + ":a :p 1 .", headers={**TURTLE, **h})
    got = w.client.get("/pods/alice/doc", headers=h)
    head = w.client.head("/pods/alice/doc", headers=h)
    assert head.content == b"" and head.headers["content-length"] == str(len(got.content))
    assert got.headers["wac-allow"] == 'user="read write append control",public=""'
    assert "rel=\"http://www.w3.org/ns/solid/terms#storageDescription\"" in got.headers["link"]
    description = w.client.get("/pods/alice/.well-known/solid", headers=h)
    assert description.status_code == 200
    assert "<http://pods.test/pods/alice/> a <http://www.w3.org/ns/pim/space#Storage>" in \
        description.text
    assert w.client.get("/pods/alice/.well-known/solid").status_code == 401
    assert w.client.get("/pods/alice/.well-known/solid",
                        headers=w.as_("other_owner")).status_code == 404
    r = w.client.options("/pods/alice/doc", headers=h)
    assert r.status_code == 204 and "PATCH" in r.headers["allow"]
    pre = w.client.options("/pods/alice/doc", headers={
        "origin": "https://app.example", "access-control-request-method": "PUT",
        "access-control-request-headers": "authorization, content-type"})
    assert pre.status_code == 204
    assert pre.headers["access-control-allow-origin"] == "https://app.example"
    assert "PUT" in pre.headers["access-control-allow-methods"]
    cors = w.client.get("/pods/alice/doc", headers={"origin": "https://app.example", **h})
    assert cors.headers["access-control-allow-origin"] == "https://app.example"
    assert "WAC-Allow" in cors.headers["access-control-expose-headers"]
    assert w.client.get("/pods/alice/doc").status_code == 401


def test_a_files_description_feeds_views(w: World) -> None:
    r = w.client.post("/views", json={"name": "v", "query": "SELECT ?s ?o { ?s <http://ex/p> ?o }"},
                      headers=w.as_("consumer"))
    view = r.headers["location"]
    assert w.client.post("/admin/consents", json={"pod": "alice", "consumer": w.webids[
        "consumer"]}, headers=w.as_("owner")).status_code == 201
    w.client.put("/pods/alice/pic.png", content=b"\x89PNG",
                 headers={"content-type": "image/png", **w.as_("owner")})
    r = w.client.patch("/pods/alice/pic.png.meta", headers={
        "content-type": "application/sparql-update", **w.as_("owner")},
        content="INSERT DATA { <pic.png> <http://ex/p> <http://ex/photo> }")
    assert r.status_code == 204, r.text
    rows = w.client.get(f"{view}/results", params={"min_seq": r.headers["podviews-seq"]},
                        headers=w.as_("consumer")).json()["results"]["bindings"]
    assert [(b["s"]["value"], b["o"]["value"]) for b in rows] == [
        ("http://pods.test/pods/alice/pic.png", "http://ex/photo")]
    r = w.client.delete("/pods/alice/pic.png", headers=w.as_("owner"))
    rows = w.client.get(f"{view}/results", params={"min_seq": r.headers["podviews-seq"]},
                        headers=w.as_("consumer")).json()["results"]["bindings"]
    assert rows == []


def test_each_documents_blank_nodes_are_its_own(w: World) -> None:
    """Two documents writing ``_:b0`` — in Turtle, JSON-LD, a POST — write
    three nodes, not one (RDF 1.1 Concepts §3.4: blank node identifiers are
    local to their document; a pod's graph merges its documents): a view
    joining on the node finds no row, each document still reads back as
    written, and the same body PUT again holds new nodes."""
    r = w.client.post("/views", json={"name": "v", "query": (
        "SELECT ?n ?a ?c { ?x <http://ex/name> ?n . ?x <http://ex/age> ?a . "
        "OPTIONAL { ?x <http://ex/city> ?c } }")}, headers=w.as_("consumer"))
    view = r.headers["location"]
    assert w.client.post("/admin/consents", json={"pod": "alice", "consumer": w.webids[
        "consumer"]}, headers=w.as_("owner")).status_code == 201
    owner = w.as_("owner")
    bodies = {"/pods/alice/a": ('_:b0 <http://ex/name> "Alice" .', TURTLE),
              "/pods/alice/b": ('{"@id": "_:b0", "http://ex/age": 30}',
                                {"content-type": "application/ld+json"})}
    for path, (body, media) in bodies.items():
        assert w.client.put(path, content=body, headers={**media, **owner}).status_code == 201
    r = w.client.post("/pods/alice/", content='_:b0 <http://ex/city> "Gent" .',
                      headers={**TURTLE, "slug": "c", **owner})
    assert r.status_code == 201, r.text
    rows = w.client.get(f"{view}/results", params={"min_seq": r.headers["podviews-seq"]},
                        headers=w.as_("consumer")).json()["results"]["bindings"]
    assert rows == []
    nodes = {line.split()[0] for path in ("/pods/alice/a", "/pods/alice/b", "/pods/alice/c")
             for line in _nt(w, path)}
    assert len(nodes) == 3 and all(n.startswith("_:") for n in nodes)
    before = _nt(w, "/pods/alice/a")
    r = w.client.put("/pods/alice/a", content=bodies["/pods/alice/a"][0], headers={**TURTLE, **owner})
    again = _nt(w, "/pods/alice/a")
    assert r.status_code == 204 and len(again) == 1 and again != before


def test_a_file_over_the_body_limit_is_413_and_stores_nothing(migrated: str) -> None:
    with world(migrated, max_body_bytes=1000) as w:
        h = {"content-type": "application/octet-stream", **w.as_("owner")}
        assert w.client.put("/pods/alice/big", content=b"x" * 1001, headers=h).status_code == 413
        assert w.client.put("/pods/alice/big", content=iter([b"x" * 600] * 2),
                            headers=h).status_code == 413  # streamed, no length declared
        assert w.client.get("/pods/alice/big", headers=w.as_("owner")).status_code == 404
        assert w.client.put("/pods/alice/big", content=b"x" * 1000, headers=h).status_code == 201


def test_the_answers_the_protocol_fuzzer_found_wrong(w: World) -> None:
    """Each class of difference from CSS that ``tests/e2e/test_protocol_fuzz.py``
    found where the specs side with CSS (session 56), in process: 412 for a
    GET's, a POST's and a DELETE's failed precondition; a name another
    resource holds is 409 before any precondition; POST to a missing
    resource is 404; an N3 Patch without formulas is a no-op, one that
    breaks §5.3.1's constraints 422 (blank nodes in its insertions too); a
    file's Content-Type as stored; a patch's numbers as written."""
    owner = w.as_("owner")
    n3 = {"content-type": "text/n3", **owner}
    head = "@prefix solid: <http://www.w3.org/ns/solid/terms#>.\n_:p a solid:InsertDeletePatch"
    assert w.client.put("/pods/alice/d", content="<#a> <#b> -0 .",
                        headers={**TURTLE, **owner}).status_code == 201
    stale = {"if-match": '"stale"', **owner}
    assert w.client.get("/pods/alice/d", headers=stale).status_code == 412
    assert w.client.head("/pods/alice/d", headers=stale).status_code == 412
    assert w.client.delete("/pods/alice/d", headers={"if-none-match": "*", **owner}
                           ).status_code == 412
    assert w.client.post("/pods/alice/", content="<#a> <#b> 1 .",
                         headers={**TURTLE, "if-none-match": "*", **owner}).status_code == 412
    assert w.client.post("/pods/alice/nothing", content="<#a> <#b> 1 .",
                         headers={**TURTLE, **owner}).status_code == 404
    assert w.client.put("/pods/alice/c/", content="", headers={**TURTLE, **owner}
                        ).status_code == 201
    assert w.client.put("/pods/alice/c", content="<#a> <#b> 1 .",
                        headers={**TURTLE, **stale}).status_code == 409
    assert w.client.patch("/pods/alice/d", content=head + ".", headers=n3).status_code == 204
    for broken in ("; solid:inserts { <#a> <#b> ?x }.", "; solid:inserts { <#a> <#b> _:x }.",
                   "; solid:deletes { _:x <#b> 1 }."):
        assert w.client.patch("/pods/alice/d", content=head + broken,
                              headers=n3).status_code == 422, broken
    r = w.client.patch("/pods/alice/d", content=head + "; solid:deletes { <#a> <#b> -0 };"
                       " solid:inserts { <#a> <#b> 0010.0100, +5 }.", headers=n3)
    assert r.status_code == 204, r.text
    assert sorted(line.split()[2] for line in _nt(w, "/pods/alice/d")) == [
        '"+5"^^<http://www.w3.org/2001/XMLSchema#integer>',
        '"0010.0100"^^<http://www.w3.org/2001/XMLSchema#decimal>']
    assert w.client.put("/pods/alice/t.txt", content=b"caf\xe9", headers={
        "content-type": "text/plain", **owner}).status_code == 201
    assert w.client.get("/pods/alice/t.txt", headers=owner).headers["content-type"] == \
        "text/plain"

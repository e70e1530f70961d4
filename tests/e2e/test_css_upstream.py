"""A real Community Solid Server (``@solid/community-server`` from npm, on
loopback) as the pods' upstream: our server forwards every write there and
maintains views from the same deltas. After every write, the resource as the
Solid server holds it equals ours, and the view equals pyoxigraph evaluating
the query over the pod as the Solid server holds it."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pyoxigraph as ox
import pytest

from server.tools.process import serving
from tests.conftest import scratch_database
from tests.e2e.conftest import NODE, owned_pod
from tests.e2e.test_e2e import ADMIN

pytestmark = pytest.mark.skipif(not NODE, reason="Node.js is not installed: no Community "
                                                   "Solid Server")


@pytest.fixture(scope="module")
def front(css: str, pg_server: str, migrated_template: str) -> Iterator[str]:
    with scratch_database(pg_server, "pv_css", template=migrated_template) as url, serving(
            {"PODVIEWS_DATABASE_URL": url, "PODVIEWS_EXECUTOR": "sql",
             "PODVIEWS_UPSTREAM_URL": css, "PODVIEWS_ADMIN_TOKEN": ADMIN}) as base:
        yield base


QUERY = """PREFIX foaf: <http://xmlns.com/foaf/0.1/>
SELECT ?p ?name (COUNT(?friend) AS ?friends) WHERE {
  ?p foaf:name ?name OPTIONAL { ?p foaf:knows ?friend }
  FILTER NOT EXISTS { ?p foaf:nick "hidden" } } GROUP BY ?p ?name"""


def _nt(r: httpx.Response) -> set[str]:
    assert r.status_code == 200, r.text
    return {line for line in r.text.splitlines() if line.strip()}


def _canon(v: dict[str, str]) -> str:
    return v["value"]


def test_writes_go_upstream_and_views_follow(css: str, front: str) -> None:
    admin = httpx.Client(base_url=front, headers={"authorization": f"Bearer {ADMIN}"}, timeout=60)
    made = {w: admin.post("/admin/agents", json={"webid": f"https://{w}.css/#me", "role": w}).json()
            for w in ("owner", "consumer")}
    assert admin.post("/admin/pods", json={"name": "shop", "owner": made["owner"]["webid"]}
                      ).status_code == 201
    owner, consumer = (httpx.Client(base_url=front, timeout=60, headers={
        "authorization": f"Bearer {made[w]['token']}"}) for w in ("owner", "consumer"))
    upstream = httpx.Client(base_url=css, timeout=60)
    view = consumer.post("/views", json={"name": "people", "query": QUERY}).headers["location"]
    assert owner.post("/admin/consents", json={"pod": "shop", "consumer": made["consumer"][
        "webid"]}).status_code == 201
    paths: set[str] = set()

    def check(r: httpx.Response, path: str) -> None:
        assert r.status_code in (201, 204), r.text
        paths.add(path)
        live = set()
        for p in sorted(paths):
            ours = owner.get(f"/pods/shop/{p}", headers={"accept": "application/n-triples"})
            theirs = upstream.get(f"shop/{p}", headers={"accept": "application/n-triples"})
            if theirs.status_code == 404:
                assert ours.status_code == 404
                continue
            assert _nt(ours) == _nt(theirs), p  # the same triples on both servers
            live |= _nt(theirs)
        store = ox.Store()
        store.load("\n".join(live).encode(), format=ox.RdfFormat.N_TRIPLES)
        want = sorted((s["p"].value, s["name"].value, s["friends"].value)
                      for s in store.query(QUERY))
        got = consumer.get(f"{view}/results",
                           params={"min_seq": r.headers["podviews-seq"], "wait": 30}).json()
        assert sorted((b["p"]["value"], b["name"]["value"], b["friends"]["value"])
                      for b in got["results"]["bindings"]) == want

    foaf = "@prefix foaf: <http://xmlns.com/foaf/0.1/> .\n"
    check(owner.put("/pods/shop/people", headers={"content-type": "text/turtle"}, content=foaf +
                    '<#a> foaf:name "Ann" ; foaf:knows <#b>, <#c> . <#b> foaf:name "Bob" .'),
          "people")
    check(owner.patch("/pods/shop/people", headers={"content-type": "text/n3"}, content=(
        "@prefix solid: <http://www.w3.org/ns/solid/terms#>. " + foaf +
        '_:p a solid:InsertDeletePatch; solid:where { ?x foaf:name "Bob" };'
        ' solid:inserts { ?x foaf:knows <#a> }; solid:deletes { <#a> foaf:knows <#c> }.')),
        "people")
    check(owner.patch("/pods/shop/people", headers={"content-type": "application/sparql-update"},
                      content='PREFIX foaf: <http://xmlns.com/foaf/0.1/> INSERT DATA { '
                              '<#c> foaf:name "Cy" ; foaf:nick "hidden" }'), "people")
    posted = owner.post("/pods/shop/", headers={"content-type": "text/turtle", "slug": "more"},
                        content=foaf + '<#d> foaf:name "Dee" ; foaf:knows <people#a> .')
    check(posted, posted.headers["location"].split("/pods/shop/", 1)[1])
    check(owner.delete("/pods/shop/people"), "people")
    # a patch that cannot apply is refused here and never reaches the Solid server
    r = owner.patch(f"/pods/shop/{posted.headers['location'].split('/pods/shop/', 1)[1]}",
                    headers={"content-type": "text/n3"}, content=(
        "@prefix solid: <http://www.w3.org/ns/solid/terms#>. " + foaf +
        '_:p a solid:InsertDeletePatch; solid:deletes { <#d> foaf:name "Nobody" }.'))
    assert r.status_code == 409


def test_containers_files_and_descriptions_go_upstream(css: str, front: str) -> None:
    """The resource kinds of the Solid Protocol reach the upstream as written:
    a container (PUT and POST), a file and its description, deletes."""
    pod = owned_pod(front, "files", ADMIN)
    upstream = httpx.Client(base_url=css, timeout=60)
    assert pod.client.put("/pods/files/box/", content="",
                          headers={"content-type": "text/turtle"}).status_code == 201
    r = pod.client.post("/pods/files/box/", content="", headers={
        "content-type": "text/turtle", "slug": "sub",
        "link": '<http://www.w3.org/ns/ldp#BasicContainer>; rel="type"'})
    assert r.status_code == 201 and r.headers["location"].endswith("/pods/files/box/sub/")
    png = bytes(range(256))
    assert pod.client.put("/pods/files/box/pic.png", content=png,
                          headers={"content-type": "image/png"}).status_code == 201
    assert upstream.get("files/box/pic.png").content == png
    r = pod.client.patch("/pods/files/box/pic.png.meta", headers={
        "content-type": "application/sparql-update"},
        content="INSERT DATA { <pic.png> <http://ex/p> <http://ex/o> }")
    assert r.status_code == 204, r.text
    assert _nt(pod.client.get("/pods/files/box/pic.png.meta", headers={
        "accept": "application/n-triples"})) <= _nt(upstream.get(
            "files/box/pic.png.meta", headers={"accept": "application/n-triples"}))
    listing = _nt(upstream.get("files/box/", headers={"accept": "application/n-triples"}))
    contains = {line for line in listing if "ldp#contains" in line}
    assert contains == {line for line in _nt(pod.client.get("/pods/files/box/", headers={
        "accept": "application/n-triples"})) if "ldp#contains" in line}
    for path in ("box/pic.png", "box/sub/", "box/"):
        assert pod.client.delete(f"/pods/files/{path}").status_code == 204
        assert upstream.get(f"files/{path}").status_code == 404

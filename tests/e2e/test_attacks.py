"""Attacks on a real `podviews serve` process, each bounded in time and sent to
loopback only. Every case asserts its documented 4xx, that the pod's stored
data is unchanged (read back), and that /healthz keeps answering meanwhile.

/healthz is probed every 25 ms for the whole module, by a process of its own
(``server.tools.probe``: the test process's pauses are not the server's). The
issue's target is 100 ms; `podviews bench attack` measures p50/p99 against it. The test
asserts a bound ten times looser (``HEALTHZ_BOUND``): it catches the stalls
that were found (7.9 s to 17 minutes) without failing on this shared machine's
load (tests never fail on timing alone)."""

from __future__ import annotations

import http.server
import json
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.tools.process import Healthz, serving
from tests.conftest import scratch_database

ADMIN = "attack-admin-token"
HEALTHZ_BOUND = 1.0  # seconds; see the module's docstring
LIMITS = {"PODVIEWS_MAX_BODY_BYTES": str(4 << 20), "PODVIEWS_MAX_PATCH_BYTES": str(1 << 20),
          "PODVIEWS_MAX_LITERAL_BYTES": str(1 << 18), "PODVIEWS_MAX_RESOURCE_TRIPLES": "50000",
          "PODVIEWS_MAX_PATCH_STEPS": "20000", "PODVIEWS_MAX_PATCH_SECONDS": "2",
          "PODVIEWS_MAX_VIEW_ROWS": "100000"}
KNOWN = "<http://ex/a> <http://ex/b> \"kept\" .\n<http://ex/a> <http://ex/c> <http://ex/d> .\n"


def worst(healthz: Healthz, mark: float) -> float:
    """The slowest /healthz answer (seconds) since ``mark``."""
    return max(healthz.since(mark), default=0.0)


@dataclass
class Site:
    base: str
    owner: httpx.Client
    consumer: httpx.Client
    other: httpx.Client  # an owner of another pod
    healthz: Healthz
    owner_token: str = ""
    views: list[str] = field(default_factory=list)

    def known(self) -> tuple[int, str, str]:
        """The target resource and the container as stored now."""
        r = self.owner.get("/pods/p/known", headers={"accept": "application/n-triples"})
        listing = self.owner.get("/pods/p/", headers={"accept": "application/n-triples"})
        return r.status_code, r.text, listing.text


@pytest.fixture(scope="module")
def site(pg_server: str, migrated_template: str) -> Iterator[Site]:
    with scratch_database(pg_server, "pv_attack", template=migrated_template) as url, serving(
            {"PODVIEWS_DATABASE_URL": url, "PODVIEWS_EXECUTOR": "sql",
             "PODVIEWS_ADMIN_TOKEN": ADMIN, **LIMITS}) as base:
        admin = httpx.Client(base_url=base, headers={"authorization": f"Bearer {ADMIN}"})
        made = {}
        for who, role in (("owner", "owner"), ("consumer", "consumer"), ("other", "owner")):
            r = admin.post("/admin/agents", json={"webid": f"https://{who}.example/#me",
                                                  "role": role})
            made[who] = r.json()
        for pod, who in (("p", "owner"), ("q", "other")):
            assert admin.post("/admin/pods", json={
                "name": pod, "owner": f"https://{who}.example/#me"}).status_code == 201
        owner, consumer, other = (httpx.Client(base_url=base, timeout=60, headers={
            "authorization": f"Bearer {made[w]['token']}"}) for w in ("owner", "consumer",
                                                                     "other"))
        assert owner.put("/pods/p/known", content=KNOWN,
                         headers={"content-type": "text/turtle"}).status_code == 201
        assert owner.post("/admin/consents", json={
            "pod": "p", "consumer": "https://consumer.example/#me"}).status_code == 201
        healthz = Healthz(base)
        try:
            yield Site(base, owner, consumer, other, healthz, made["owner"]["token"])
        finally:
            healthz.close()


@pytest.fixture
def attack(site: Site) -> Iterator[Site]:
    """The attack's site; afterwards the pod is as before and /healthz kept up."""
    before, mark = site.known(), time.monotonic()
    yield site
    assert site.known() == before
    slowest = worst(site.healthz, mark)
    assert slowest < HEALTHZ_BOUND, f"/healthz took {slowest:.2f} s during the attack"


def _problem(r: httpx.Response, status: int | tuple[int, ...]) -> dict:
    wanted = status if isinstance(status, tuple) else (status,)
    assert r.status_code in wanted, (r.status_code, r.text[:500])
    assert r.headers["content-type"].startswith("application/problem+json"), r.headers
    return r.json()  # type: ignore[no-any-return]


# ----------------------------------------------------------------- bodies


def test_a_body_over_the_limit_is_413_by_its_declared_length(attack: Site) -> None:
    body = b"<http://ex/s> <http://ex/p> \"" + b"x" * (5 << 20) + b"\" .\n"
    r = attack.owner.put("/pods/p/big", content=body, headers={"content-type": "text/turtle"})
    assert "4194304" in _problem(r, 413)["detail"]


def test_a_streamed_body_over_the_limit_is_413_without_reading_the_rest(attack: Site) -> None:
    def chunks() -> Iterator[bytes]:
        yield b"<http://ex/s> <http://ex/p> \""
        for _ in range(80):  # 80 MB, never sent whole
            yield b"y" * (1 << 20)
    try:
        r = attack.owner.put("/pods/p/big", content=chunks(),
                             headers={"content-type": "text/turtle"})
    except httpx.WriteError:  # the server answered and closed while we were still sending
        return
    _problem(r, 413)


def test_one_long_line_is_parsed_in_linear_time_and_a_long_literal_refused(attack: Site) -> None:
    line = b"<http://ex/s> <http://ex/p> \"" + b"z" * (3 << 20) + b"\" .\n"  # under 4 MB
    r = attack.owner.put("/pods/p/line", content=line,
                         headers={"content-type": "application/n-triples"})
    assert "literal" in _problem(r, 413)["detail"]


def test_too_many_triples_in_one_resource(attack: Site) -> None:
    body = "".join(f"<http://ex/s{i}> <http://ex/p> {i} .\n" for i in range(60_000))
    r = attack.owner.put("/pods/p/many", content=body, headers={"content-type": "text/turtle"})
    assert "50000" in _problem(r, 413)["detail"]


def test_a_write_to_a_pod_the_caller_cannot_reach_is_refused_before_its_body(
        attack: Site) -> None:
    """Headers promise 50 MB that never come: the 404 arrives anyway."""
    host, port = attack.base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(f"PUT /pods/p/stolen HTTP/1.1\r\nHost: {host}\r\n"
                  f"Authorization: Bearer {attack.other.headers['authorization'][7:]}\r\n"
                  f"Content-Type: text/turtle\r\nContent-Length: {50 << 20}\r\n\r\n".encode())
        head = s.recv(4096).decode()
    assert head.startswith("HTTP/1.1 404"), head


@pytest.mark.parametrize("body", [
    "<http://ex/a b> <http://ex/p> 1 .",  # a space in an IRI
    "<http://ex/a> <http://ex/p> \"open",  # an unterminated literal
    "<http://ex/a> <http://ex/p> \"x\"^^<not an iri> .",
    "@prefix : <http://ex/> . :a :b :c",  # no final dot
])
def test_invalid_turtle_is_400(attack: Site, body: str) -> None:
    r = attack.owner.put("/pods/p/known", content=body, headers={"content-type": "text/turtle"})
    _problem(r, 400)


@pytest.mark.parametrize("doc", [
    {"@id": "http://ex/a b", "http://ex/p": "v"},  # an invalid @id
    {"@context": {"p": "http://ex/p"}, "@id": "http://ex/a", "p": {"@id": "http://ex/[x]"}},
    [1, 2, 3],
])
def test_invalid_json_ld_is_400_never_an_empty_graph(attack: Site, doc: object) -> None:
    r = attack.owner.put("/pods/p/known", content=json.dumps(doc),
                         headers={"content-type": "application/ld+json"})
    _problem(r, 400)


# ----------------------------------------------------------------- paths


@pytest.mark.parametrize(("path", "status"), [
    ("/pods/p/../q/x", (400, 404)),
    ("/pods/p/%2e%2e/q/x", (400, 404)),
    ("/pods/p/a%2F..%2F..%2Fq%2Fx", (400, 404)),
    ("/pods/p//x", (400, 404)),
    ("/pods/p/" + "a" * 5000, (400, 404, 414)),
    ("/pods/p/%ED%A0%80", 400),  # a lone surrogate, UTF-8 encoded
    ("/pods/p/%FF", 400),  # no UTF-8 at all
    ("/pods/p/a%00b", 400),
    ("/pods/p/a%0Ab", (400, 404)),  # no route matches a line break
])
def test_path_tricks_are_4xx(attack: Site, path: str, status: int | tuple[int, ...]) -> None:
    r = attack.owner.put(path, content=KNOWN, headers={"content-type": "text/turtle"})
    wanted = status if isinstance(status, tuple) else (status,)
    assert r.status_code in wanted, (path, r.status_code, r.text[:300])
    assert attack.owner.get("/pods/q/x").status_code == 404  # nothing landed in pod q


def test_a_non_latin_1_path_is_stored_and_named_in_location(site: Site) -> None:
    r = site.owner.put("/pods/p/caf%C3%A9/%E6%97%A5%E8%A8%98", content=KNOWN,
                       headers={"content-type": "text/turtle"})
    assert r.status_code == 201, r.text
    assert r.headers["location"].endswith("/pods/p/caf%C3%A9/%E6%97%A5%E8%A8%98")
    assert site.owner.get("/pods/p/café/日記").status_code == 200
    assert site.owner.delete("/pods/p/café/日記").status_code == 204


# ----------------------------------------------------------------- patches


def test_an_n3_patch_matching_everything_stops_at_its_second_match(attack: Site) -> None:
    body = "".join(f"<http://ex/s{i}> <http://ex/p> {i} .\n" for i in range(200))
    assert attack.owner.put("/pods/p/two-hundred", content=body,
                            headers={"content-type": "text/turtle"}).status_code == 201
    patch = ("@prefix solid: <http://www.w3.org/ns/solid/terms#>.\n"
             "_:p a solid:InsertDeletePatch; solid:where { ?a ?b ?c. ?d ?e ?f. ?g ?h ?i };\n"
             "  solid:inserts { <http://ex/x> <http://ex/y> <http://ex/z> }.")
    r = attack.owner.patch("/pods/p/two-hundred", content=patch,
                           headers={"content-type": "text/n3"})
    assert "more than once" in _problem(r, 409)["detail"]
    assert attack.owner.delete("/pods/p/two-hundred").status_code == 204


def test_a_sparql_update_whose_where_explodes_is_refused(attack: Site) -> None:
    body = "".join(f"<http://ex/s{i}> <http://ex/p> {i} .\n" for i in range(200))
    assert attack.owner.put("/pods/p/two-hundred", content=body,
                            headers={"content-type": "text/turtle"}).status_code == 201
    r = attack.owner.patch("/pods/p/two-hundred", headers={
        "content-type": "application/sparql-update"},
        content="DELETE { ?a ?b ?c } WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }")
    assert "match steps" in _problem(r, 422)["detail"]
    assert len(attack.owner.get("/pods/p/two-hundred", headers={
        "accept": "application/n-triples"}).text.splitlines()) == 200
    assert attack.owner.delete("/pods/p/two-hundred").status_code == 204


def test_a_sparql_update_comparing_every_pair_meets_its_deadline(attack: Site) -> None:
    """A filter across a product reads 4,000 triples and keeps no pair: the
    step budget does not stop it, ``PODVIEWS_MAX_PATCH_SECONDS`` does."""
    body = "".join(f"<http://ex/s{i}> <http://ex/p> {i} .\n" for i in range(2_000))
    assert attack.owner.put("/pods/p/pairs", content=body,
                            headers={"content-type": "text/turtle"}).status_code == 201
    r = attack.owner.patch("/pods/p/pairs", headers={
        "content-type": "application/sparql-update"},
        content="INSERT { <http://ex/a> <http://ex/b> 1 } "
                "WHERE { ?a ?b ?c OPTIONAL { ?d ?e ?f FILTER(?c = ?f + 5000) } }")
    assert "more than 2 s" in _problem(r, 422)["detail"]
    assert len(attack.owner.get("/pods/p/pairs", headers={
        "accept": "application/n-triples"}).text.splitlines()) == 2_000
    assert attack.owner.delete("/pods/p/pairs").status_code == 204


# ----------------------------------------------------------------- views


def test_a_backtracking_regex_view_does_not_stall_the_server(attack: Site) -> None:
    r = attack.owner.put("/pods/p/evil", content=f'<http://ex/e> <http://ex/t> "{"a" * 50}!" .',
                         headers={"content-type": "text/turtle"})
    seq = r.headers["podviews-seq"]
    r = attack.consumer.post("/views", json={"name": "regex", "query": (
        'SELECT ?x WHERE { ?s <http://ex/t> ?x FILTER REGEX(?x, "^(a+)+$") }')})
    assert r.status_code == 201, r.text
    view = r.headers["location"]
    r = attack.consumer.get(f"{view}/results", params={"min_seq": seq, "wait": 60})
    assert r.status_code == 200 and r.json()["results"]["bindings"] == []
    assert attack.consumer.delete(view).status_code == 204
    assert attack.owner.delete("/pods/p/evil").status_code == 204


def test_a_cartesian_view_is_refused_at_registration(attack: Site) -> None:
    body = "".join(f"<http://ex/s{i}> <http://ex/p> {i} .\n" for i in range(1000))
    assert attack.owner.put("/pods/p/thousand", content=body,
                            headers={"content-type": "text/turtle"}).status_code == 201
    r = attack.consumer.post("/views", json={"name": "cross", "query": (
        "SELECT * WHERE { ?a ?b ?c . ?d ?e ?f }")})
    _problem(r, 422)
    assert attack.owner.delete("/pods/p/thousand").status_code == 204


@pytest.mark.parametrize("query", [
    "SELECT * WHERE { ?s ?p ?o FILTER(" + "(" * 200 + "?o" + ")" * 200 + ") }",
    "SELECT * WHERE " + "{" * 2000 + " ?s ?p ?o " + "}" * 2000,
    "SELECT * WHERE { ?s ?p ?o } VALUES ?x { " + " ".join(str(i) for i in range(200_000)) + " }",
])
def test_deep_or_huge_queries_are_4xx(attack: Site, query: str) -> None:
    r = attack.consumer.post("/views", json={"name": "deep", "query": query})
    _problem(r, (400, 413, 422))


def test_45_concurrent_waits_do_not_hold_healthz(attack: Site) -> None:
    """45 readers wait for a change the worker has yet to apply (a new view's
    backfill, then a write); each answers 200 once it is applied, or 503
    when its wait runs out — none holds a thread meanwhile."""
    r = attack.consumer.post("/views", json={"name": "waited",
                                             "query": "SELECT * WHERE { ?s <http://ex/b> ?o }"})
    view = r.headers["location"]
    r = attack.owner.put("/pods/p/waited", content="<http://ex/w> <http://ex/b> 1 .",
                         headers={"content-type": "text/turtle"})
    seq = r.headers["podviews-seq"]

    def wait() -> int:
        return attack.consumer.get(f"{view}/results", params={"min_seq": seq, "wait": 3},
                                   timeout=30).status_code
    with ThreadPoolExecutor(45) as pool:
        statuses = list(pool.map(lambda _: wait(), range(45)))
    assert set(statuses) <= {200, 503}, statuses
    assert attack.consumer.delete(view).status_code == 204
    assert attack.owner.delete("/pods/p/waited").status_code == 204


# ----------------------------------------------------------------- SSRF


class Listener:
    """A loopback HTTP server that counts what reaches it."""

    def __init__(self) -> None:
        hits = self.hits = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hits.append(self.path)
                self.send_response(200)
                self.send_header("content-type", "application/ld+json")
                self.end_headers()
                self.wfile.write(b'{"@context": {"p": "http://ex/p"}}')

            do_POST = do_GET

            def log_message(self, *_: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def test_no_request_reaches_a_loopback_listener(attack: Site) -> None:
    listener = Listener()
    try:
        cases = [
            ("application/sparql-update",
             (f"INSERT {{ <http://ex/a> <http://ex/got> ?o }} WHERE {{ SERVICE <{listener.url}/s> "
              "{ ?s ?p ?o } }"), 400),
            ("application/sparql-update",
             (f"INSERT {{ <http://ex/a> <http://ex/got> ?o }} WHERE {{ OPTIONAL {{ SERVICE SILENT "
              f"<{listener.url}/t> {{ ?s ?p ?o }} }} }}"), 400),
            ("application/sparql-update", f"LOAD <{listener.url}/load>", 400),
        ]
        for media, body, status in cases:
            r = attack.owner.patch("/pods/p/known", content=body, headers={"content-type": media})
            _problem(r, status)
        for ctx in (f"{listener.url}/ctx", [f"{listener.url}/ctx"],
                    {"@import": f"{listener.url}/ctx"}):
            doc = {"@context": ctx, "@id": "http://ex/a", "p": "v"}
            r = attack.owner.put("/pods/p/known", content=json.dumps(doc),
                                 headers={"content-type": "application/ld+json"})
            _problem(r, 400)
        r = attack.consumer.post("/views", json={"name": "service", "query": (
            f"SELECT * WHERE {{ SERVICE <{listener.url}/q> {{ ?s ?p ?o }} }}")})
        _problem(r, 400)
    finally:
        listener.server.shutdown()
    assert listener.hits == []


def test_a_bundled_context_is_used_without_fetching(site: Site) -> None:
    doc = {"@context": "https://www.w3.org/ns/activitystreams", "id": "http://ex/note",
           "type": "Note", "content": "hello"}
    r = site.owner.put("/pods/p/note", content=json.dumps(doc),
                       headers={"content-type": "application/ld+json"})
    assert r.status_code == 201, r.text
    got = site.owner.get("/pods/p/note", headers={"accept": "application/n-triples"}).text
    assert '<https://www.w3.org/ns/activitystreams#content> "hello"' in got
    assert site.owner.delete("/pods/p/note").status_code == 204


# ----------------------------------------------------------------- races


def test_eight_concurrent_conditional_creates_make_one_resource(site: Site) -> None:
    def create(i: int) -> int:
        with httpx.Client(base_url=site.base, timeout=60, headers={
                "authorization": f"Bearer {site.owner_token}"}) as c:
            return c.put("/pods/p/race", content=f"<http://ex/w> <http://ex/by> {i} .",
                         headers={"content-type": "text/turtle", "if-none-match": "*"}).status_code
    for _ in range(3):
        with ThreadPoolExecutor(8) as pool:
            statuses = sorted(pool.map(create, range(8)))
        assert statuses == [201] + [412] * 7
        body = site.owner.get("/pods/p/race", headers={"accept": "application/n-triples"}).text
        assert len(body.strip().splitlines()) == 1
        assert site.owner.delete("/pods/p/race").status_code == 204


# ----------------------------------------------------------------- mutated inputs

SEEDS = {
    "text/turtle": "@prefix : <http://ex/> .\n:a :b \"kept\" ; :c :d , [ :e 1.5e0 ] .\n",
    "application/n-triples": KNOWN,
    "application/ld+json": json.dumps({"@context": {"b": "http://ex/b"}, "@id": "http://ex/a",
                                       "b": [{"@value": "kept", "@language": "en"}]}),
    "text/n3": ("@prefix solid: <http://www.w3.org/ns/solid/terms#>.\n"
                "_:p a solid:InsertDeletePatch; solid:where { ?s <http://ex/b> ?o };\n"
                "  solid:inserts { ?s <http://ex/z> ?o }."),
    "application/sparql-update": ("PREFIX : <http://ex/>\nDELETE { ?s :b ?o } INSERT { ?s :z ?o }"
                                  " WHERE { ?s :b ?o FILTER(STRLEN(?o) > 1) }"),
}
PATCHES = ("text/n3", "application/sparql-update")
QUERY_SEED = ("PREFIX : <http://ex/>\nSELECT ?s (COUNT(?o) AS ?n) WHERE { ?s :b ?o "
              "OPTIONAL { ?s :c ?d } FILTER(REGEX(STR(?o), \"^k\", \"i\")) } GROUP BY ?s")


def _mutated(seed: str) -> st.SearchStrategy[bytes]:
    """``seed`` with bytes flipped, inserted, deleted, duplicated or cut."""
    data = seed.encode()
    edit = st.tuples(st.sampled_from(["flip", "insert", "delete", "repeat", "cut"]),
                     st.integers(0, len(data)), st.binary(min_size=1, max_size=8),
                     st.integers(1, 200))

    def apply(edits: list[tuple[str, int, bytes, int]]) -> bytes:
        out = bytearray(data)
        for kind, at, blob, n in edits:
            at = min(at, len(out))
            if kind == "flip" and out:
                out[min(at, len(out) - 1)] ^= blob[0] or 1
            elif kind == "insert":
                out[at:at] = blob
            elif kind == "delete":
                del out[at:at + n]
            elif kind == "repeat":
                out[at:at] = bytes(out[at:at + 8]) * n
            else:
                del out[at:]
        return bytes(out)
    return st.lists(edit, min_size=1, max_size=4).map(apply)


EXAMPLES = 120  # per format: 5 bodies + queries ≥ 500 cases in all


@pytest.mark.parametrize("media", list(SEEDS))
def test_mutated_bodies_are_4xx_and_store_nothing(site: Site, media: str) -> None:
    """Against a stale If-Match, a valid mutant is 412 and an invalid one 400:
    either way nothing is stored and nothing is a 5xx."""
    before, mark = site.known(), time.monotonic()
    method = "PATCH" if media in PATCHES else "PUT"

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(_mutated(SEEDS[media]))
    def send(body: bytes) -> None:
        r = site.owner.request(method, "/pods/p/known", content=body, headers={
            "content-type": media, "if-match": '"stale"'})
        assert r.status_code in (400, 409, 412, 413, 415, 422), (r.status_code, body, r.text)
    send()
    assert site.known() == before
    assert worst(site.healthz, mark) < HEALTHZ_BOUND


def test_mutated_queries_are_201_or_4xx(site: Site) -> None:
    mark = time.monotonic()

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(_mutated(QUERY_SEED))
    def register(text: bytes) -> None:
        r = site.consumer.post("/views", content=json.dumps({
            "name": "mutant", "query": text.decode("utf-8", "surrogateescape")},
            ensure_ascii=True).encode(), headers={"content-type": "application/json"})
        assert r.status_code in (201, 400, 413, 422), (r.status_code, text, r.text)
        if r.status_code == 201:
            assert site.consumer.delete(r.headers["location"]).status_code == 204
    register()
    assert worst(site.healthz, mark) < HEALTHZ_BOUND

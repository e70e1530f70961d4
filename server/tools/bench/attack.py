"""``podviews bench attack``: the attacks of the trust issue against a real
``podviews serve`` (default limits, one worker process), one after another.
For each: its answer, how long it took, ``/healthz`` p50/p99/max while it ran
(probed every 10 ms; the target is p99 ≤ 100 ms) and the server's resident
memory (API and worker processes) before, at its peak and after."""

from __future__ import annotations

import statistics
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx

from server.tools.bench.pipeline import fresh_database
from server.tools.process import Healthz, rss_bytes, serving

ADMIN = "bench-admin-token"
MB = 1 << 20


@dataclass
class AttackRow:
    attack: str
    answer: str
    seconds: float
    healthz_p50_ms: float
    healthz_p99_ms: float
    healthz_max_ms: float
    rss_before_mb: float
    rss_peak_mb: float
    rss_after_mb: float


@dataclass
class Clients:
    owner: httpx.Client
    consumer: httpx.Client


def _lines(n: int, p: str = "p") -> bytes:
    return "".join(f"<http://ex/s{i}> <http://ex/{p}> {i} .\n" for i in range(n)).encode()


def _put(c: Clients, path: str, body: bytes, media: str = "text/turtle") -> str:
    r = c.owner.put(f"/pods/p/{path}", content=body, headers={"content-type": media})
    return str(r.status_code)


def _view(c: Clients, query: str, read: bool = False) -> str:
    r = c.consumer.post("/views", json={"name": "attack", "query": query})
    if r.status_code != 201:
        return str(r.status_code)
    view = r.headers["location"]
    if read:
        r = c.consumer.get(f"{view}/results", params={"min_seq": 0, "wait": 60})
    c.consumer.delete(view)
    return f"201, then {r.status_code}"


def _waits(c: Clients) -> str:
    """45 readers wait for a change the worker has yet to apply: a new view's
    backfill, then a write to it (200 once applied, 503 when a wait runs out)."""
    r = c.consumer.post("/views", json={"name": "w", "query": "SELECT * WHERE { ?s <x:w> ?o }"})
    view = r.headers["location"]
    r = c.owner.put("/pods/p/waited", content=b"<x:s> <x:w> 1 .",
                    headers={"content-type": "text/turtle"})
    seq = r.headers["podviews-seq"]
    with ThreadPoolExecutor(45) as pool:
        got = set(pool.map(lambda _: c.consumer.get(f"{view}/results", params={
            "min_seq": seq, "wait": 5}).status_code, range(45)))
    c.consumer.delete(view)
    return "45 × " + "/".join(map(str, sorted(got)))


def _idle(_: Clients) -> str:
    time.sleep(2)
    return "-"


def _attacks() -> list[tuple[str, Callable[[Clients], str]]]:
    regex_data = b'<http://ex/e> <http://ex/t> "' + b"a" * 5000 + b'!" .'
    n3 = (b"@prefix solid: <http://www.w3.org/ns/solid/terms#>.\n_:p a solid:InsertDeletePatch;"
          b" solid:where { ?a ?b ?c. ?d ?e ?f. ?g ?h ?i }; solid:inserts { <x:a> <x:b> <x:c> }.")
    return [
        ("idle (2 s)", _idle),
        ("52 MB PUT", lambda c: _put(c, "big", b"<x:s> <x:p> \"" + b"x" * (52 * MB) + b"\" .")),
        ("10 MB PUT of ordinary triples", lambda c: _put(c, "ten", _lines(150_000))),
        ("15 MB one-line literal", lambda c: _put(
            c, "line", b"<x:s> <x:p> \"" + b"x" * (15 * MB) + b"\" .", "application/n-triples")),
        ("REGEX ^(a+)+$ view over a!", lambda c: (_put(c, "evil", regex_data), _view(
            c, 'SELECT ?x WHERE { ?s <http://ex/t> ?x FILTER REGEX(?x, "^(a+)+$") }',
            read=True))[1]),
        ("N3 Patch, 3 free patterns, 200 triples", lambda c: (_put(c, "two", _lines(200)), str(
            c.owner.patch("/pods/p/two", content=n3, headers={"content-type": "text/n3"})
            .status_code))[1]),
        ("SPARQL Update, 3 free patterns", lambda c: str(c.owner.patch(
            "/pods/p/two", content="DELETE { ?a ?b ?c } WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }",
            headers={"content-type": "application/sparql-update"}).status_code)),
        ("cartesian view over 1,000 triples", lambda c: (_put(c, "k", _lines(1000, "q")), _view(
            c, "SELECT * WHERE { ?a <http://ex/q> ?b . ?c <http://ex/q> ?d }"))[1]),
        ("VALUES of 200,000 rows", lambda c: _view(c, "SELECT * WHERE { VALUES ?x { " + " ".join(
            str(i) for i in range(200_000)) + " } }")),
        ("2,000 nested groups", lambda c: _view(
            c, "SELECT * WHERE " + "{" * 2000 + " ?s ?p ?o " + "}" * 2000)),
        ("45 concurrent min_seq waits", _waits),
    ]


def run(server_url: str) -> list[AttackRow]:
    url = fresh_database(server_url, "attack")
    started: list[subprocess.Popen] = []  # type: ignore[type-arg]
    rows = []
    with serving({"PODVIEWS_DATABASE_URL": url, "PODVIEWS_ADMIN_TOKEN": ADMIN,
                  "PODVIEWS_WORKERS": "1"}, started=started) as base:
        clients = _setup(base)
        pid = started[0].pid
        probe = Healthz(base, every=0.01)
        try:
            for name, attack in _attacks():
                rows.append(_measure(name, attack, clients, probe, pid))
        finally:
            probe.close()
    return rows


def _measure(name: str, attack: Callable[[Clients], str], clients: Clients, probe: Healthz,
             pid: int) -> AttackRow:
    before, peak, done = rss_bytes(pid), [0], threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], rss_bytes(pid))
            time.sleep(0.05)
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    mark = time.monotonic()
    try:
        answer = attack(clients)
    except httpx.HTTPError as e:
        answer = f"{type(e).__name__}"
    seconds = time.monotonic() - mark
    probes = sorted(probe.since(mark))
    done.set()
    sampler.join()
    time.sleep(1)
    ms = [1000 * p for p in probes] or [0.0]
    return AttackRow(name, answer, round(seconds, 2), round(statistics.median(ms), 1),
                     round(ms[min(len(ms) - 1, int(0.99 * len(ms)))], 1), round(ms[-1], 1),
                     round(before / MB, 1), round(max(peak[0], before) / MB, 1),
                     round(rss_bytes(pid) / MB, 1))


def _setup(base: str) -> Clients:
    admin = httpx.Client(base_url=base, headers={"authorization": f"Bearer {ADMIN}"})
    made = {}
    for who, role in (("owner", "owner"), ("consumer", "consumer")):
        made[who] = admin.post("/admin/agents", json={"webid": f"https://{who}.bench/#me",
                                                      "role": role}).json()
    admin.post("/admin/pods", json={"name": "p", "owner": "https://owner.bench/#me"})
    owner, consumer = (httpx.Client(base_url=base, timeout=900, headers={
        "authorization": f"Bearer {made[w]['token']}"}) for w in ("owner", "consumer"))
    owner.post("/admin/consents", json={"pod": "p", "consumer": "https://consumer.bench/#me"})
    return Clients(owner, consumer)

"""GET /views/{id}/changes (JSON) in process: a snapshot then the deltas,
each at the seq of the write that made it, in SPARQL JSON term syntax;
pages cut inside a large delta and resumed with ``skip``; access exactly as
for the results; 410 for a position compacted away (a revocation does
that to positions before it); refusals as problem documents."""

from __future__ import annotations

import pytest

from tests.api.api_helpers import TURTLE, World, world
from tests.api.test_api import EX, _grant, _rows, _view


@pytest.fixture
def w(migrated: str):  # type: ignore[no-untyped-def]
    with world(migrated, page_rows=3) as w:
        yield w


def _put(w: World, body: str, path: str = "data") -> int:
    r = w.client.put(f"/pods/alice/{path}", content=EX + body, headers={**TURTLE, **w.as_("owner")})
    assert r.status_code in (201, 204), r.text
    return int(r.headers["podviews-seq"])


def _values(bindings: list[dict]) -> list[dict[str, str]]:
    return sorted(({k: v["value"] for k, v in b.items()} for b in bindings),
                  key=lambda d: sorted(d.items()))


def _follow(w: World, view: str, since: int) -> tuple[list[dict], int]:
    """Every change after ``since``, pages joined; the position reached."""
    out: list[dict] = []
    url = f"{view}/changes?since={since}"
    while True:
        r = w.client.get(url, headers=w.as_("consumer"))
        assert r.status_code == 200, r.text
        page = r.json()
        assert r.headers["link"] == f'<{page["next"]}>; rel="next"'
        for ch in page["changes"]:
            if out and out[-1]["seq"] == ch["seq"]:  # the rest of a delta cut by the page
                assert ch["part"]["skip"] > 0
                out[-1]["added"] += ch["added"]
                out[-1]["removed"] += ch["removed"]
            else:
                out.append(ch)
        url = page["next"]
        if page["seq"] is not None and not page["changes"]:
            return out, page["seq"]


def test_a_snapshot_then_each_write_as_a_delta_at_its_seq(w: World) -> None:
    view = _view(w, "SELECT ?s ?o WHERE { ?s :p ?o }")
    _grant(w)
    first = _put(w, ":a :p 1 .")
    _rows(w, view, first)
    r = w.client.get(f"{view}/changes", headers=w.as_("consumer"))
    assert r.status_code == 200, r.text
    page = r.json()
    assert page["head"] == {"vars": ["s", "o"]}
    assert page["snapshot"]["seq"] == page["seq"] >= first
    assert page["snapshot"]["bindings"] == [
        {"s": {"type": "uri", "value": "http://ex/a"},
         "o": {"type": "literal", "value": "1",
               "datatype": "http://www.w3.org/2001/XMLSchema#integer"}}]
    assert page["changes"] == [] and r.headers["podviews-seq"] == str(page["seq"])
    second = _put(w, ":a :p 2 . :b :p 3 .")
    _rows(w, view, second)
    changes, at = _follow(w, view, page["seq"])
    assert [c["seq"] for c in changes] == [second] and at == second
    assert _values(changes[0]["added"]) == [{"s": "http://ex/a", "o": "2"},
                                           {"s": "http://ex/b", "o": "3"}]
    assert _values(changes[0]["removed"]) == [{"s": "http://ex/a", "o": "1"}]
    assert _follow(w, view, at) == ([], at)  # nothing new: the same position


def test_a_large_delta_is_paged_and_counts_repeat_bindings(w: World) -> None:
    view = _view(w, "SELECT ?s WHERE { ?s :p ?o }")  # not DISTINCT: ?s once per ?o
    _grant(w)
    start = _put(w, ":z :p 0 .")
    _rows(w, view, start)
    seq = _put(w, ":a :p 1, 2, 3 . :b :p 1 . :c :p 1 . :d :p 1 . :e :p 1 .")
    _rows(w, view, seq)
    changes, _ = _follow(w, view, start)
    assert [c["seq"] for c in changes] == [seq]
    assert sorted(b["s"]["value"] for b in changes[0]["added"]) == \
        ["http://ex/a"] * 3 + [f"http://ex/{x}" for x in "bcde"]
    r = w.client.get(f"{view}/changes?since={start}", headers=w.as_("consumer")).json()
    assert r["seq"] is None and r["changes"][0]["part"] == {"skip": 0, "complete": False}
    assert r["next"] == f"/views/{view.rsplit('/', 1)[1]}/changes?since={seq - 1}&skip=3"


def test_a_revocation_is_a_delta_of_removals_and_ends_older_positions(w: World) -> None:
    view = _view(w, "SELECT ?s WHERE { ?s :p ?o }")
    consent = _grant(w)
    a = _put(w, ":a :p 1 .")
    _rows(w, view, a)
    b = _put(w, ":b :p 1 .", "other")
    _rows(w, view, b)
    r = w.client.delete(f"/admin/consents/{consent}", headers=w.as_("owner"))
    revoked = int(r.headers["podviews-seq"])
    r = w.client.get(f"{view}/results", params={"min_seq": revoked}, headers=w.as_("consumer"))
    assert r.json()["results"]["bindings"] == []
    changes, _ = _follow(w, view, b)  # a consumer that had every delta: the retraction
    assert [c["seq"] for c in changes] == [revoked]
    assert _values(changes[0]["removed"]) == [{"s": "http://ex/a"}, {"s": "http://ex/b"}]
    assert changes[0]["added"] == []
    r = w.client.get(f"{view}/changes?since={a - 1}", headers=w.as_("consumer"))
    assert r.status_code == 410 and r.headers["content-type"] == "application/problem+json"
    assert "snapshot" in r.json()["detail"]


def test_changes_are_guarded_as_the_results_are(w: World) -> None:
    view = _view(w, "SELECT ?s WHERE { ?s :p ?o }")
    _grant(w)
    _rows(w, view, _put(w, ":a :p 1 ."))
    assert w.client.get(f"{view}/changes").status_code == 401
    assert w.client.get(f"{view}/changes", headers=w.as_("other_consumer")).status_code == 404
    assert w.client.get(f"{view}/changes", headers=w.as_("admin")).status_code == 200
    r = w.client.get(f"{view}/changes?since=-1", headers=w.as_("consumer"))
    assert r.status_code == 422 and "since" in r.text
    r = w.client.get(f"{view}/changes", headers={"accept": "text/event-stream",
                                                "last-event-id": "x", **w.as_("consumer")})
    assert r.status_code == 400 and "Last-Event-ID" in r.json()["detail"]
    ask = _view(w, "ASK { ?s :p ?o }")
    r = w.client.get(f"{ask}/changes", headers=w.as_("consumer"))
    assert r.status_code == 409 and "boolean" in r.json()["detail"]
    sliced = _view(w, "SELECT ?s WHERE { ?s :p ?o } ORDER BY ?s LIMIT 1")
    r = w.client.get(f"{sliced}/changes", headers=w.as_("consumer"))
    assert r.status_code == 409 and "LIMIT" in r.json()["detail"]


def test_the_event_stream_sends_the_snapshot_then_one_event_per_seq(migrated: str) -> None:
    import json

    with world(migrated, page_rows=3, sse_heartbeat=0.2) as w:
        view = _view(w, "SELECT ?s WHERE { ?s :p ?o }")
        _grant(w)
        first = _put(w, ":a :p 1 .")
        _rows(w, view, first)
        events: list[tuple[str, str, str]] = []
        with w.client.stream("GET", f"{view}/changes", headers={
                "accept": "text/event-stream", **w.as_("consumer")}) as r:
            assert r.headers["content-type"].startswith("text/event-stream")
            lines = r.iter_lines()
            seq = None
            fields: dict[str, str] = {}
            beats = 0
            for line in lines:
                if line.startswith(":"):
                    beats += 1
                    if seq is None:  # the snapshot was sent: now a write
                        seq = _put(w, ":b :p 1, 2, 3, 4 .")
                elif line == "":
                    if "event" in fields:
                        events.append((fields.get("id", ""), fields["event"], fields["data"]))
                    fields = {}
                    if len(events) == 2:
                        break
                else:
                    name, _, value = line.partition(": ")
                    fields[name] = value
        assert events[0][1] == "snapshot" and json.loads(events[0][2])["seq"] == int(events[0][0])
        assert events[1][:2] == (str(seq), "change")
        change = json.loads(events[1][2])
        assert change["seq"] == seq and len(change["added"]) == 4  # one event, the pages joined
        assert "part" not in change and beats >= 1


def test_a_failed_view_ends_its_feed_with_the_problem(w: World, migrated: str) -> None:
    import time

    import sqlalchemy as sa

    from storage import queue

    view = _view(w, "SELECT ?s WHERE { ?s :p ?o }")
    _grant(w)
    seq = _put(w, ":a :p 1 .")
    _rows(w, view, seq)
    engine = sa.create_engine(migrated)
    with engine.begin() as c:  # a job the worker cannot run, with no retries left
        queue.enqueue(c, "grant", int(view.rsplit("/", 1)[1]), {"consent": "none"},
                      max_attempts=1)
    engine.dispose()
    for _ in range(300):  # until the job is dead and the view failed
        if w.client.get(view, headers=w.as_("consumer")).json()["status"] == "failed":
            break
        time.sleep(0.1)
    page = w.client.get(f"{view}/changes?since={seq}", headers=w.as_("consumer")).json()
    assert page["end"]["status"] == 409 and "invalid literal" in page["end"]["detail"]
    r = w.client.get(f"{view}/changes", headers=w.as_("consumer"))
    assert r.status_code == 409 and "failed" in r.json()["detail"]
    with w.client.stream("GET", f"{view}/changes?since={seq}",
                         headers={"accept": "text/event-stream", **w.as_("consumer")}) as r:
        body = "".join(r.iter_text())  # the stream ends by itself
    assert "event: end" in body and '"status":409' in body

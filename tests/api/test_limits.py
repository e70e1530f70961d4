"""Limits on what a consumer may ask, each answered with a problem document
naming it, nothing stored: a query nested too deeply (400, never a 500), a
quota of views, a view estimated too large at registration (422), and a
view that grows too large in maintenance fails (409 to its readers) instead
of taking the server down."""

from __future__ import annotations

from collections import Counter

import pyoxigraph as ox
import pytest
import sqlalchemy as sa
from rdflib import Literal

from storage import catalog, views_repo
from tests.api.api_helpers import TURTLE, World, world
from views.compile import compile_query
from views.results import solutions
from views.terms import fields_of

EX = "@prefix : <http://ex/> .\n"


@pytest.fixture
def w(migrated: str):  # type: ignore[no-untyped-def]
    with world(migrated, max_views_per_consumer=3, max_view_rows=5_000) as w:
        yield w


def _post(w: World, query: str) -> object:
    return w.client.post("/views", json={"name": "v", "query": query}, headers=w.as_("consumer"))


def _views(w: World) -> int:
    return len(w.client.get("/views", headers=w.as_("consumer")).json())


def test_queries_nested_too_deeply_are_refused(w: World) -> None:
    for query in ("SELECT * WHERE { ?s ?p ?o FILTER(" + "(" * 200 + "?o" + ")" * 200 + ") }",
                  "SELECT * WHERE " + "{" * 2000 + " ?s ?p ?o " + "}" * 2000):
        r = _post(w, query)
        assert r.status_code == 400, r.text  # type: ignore[attr-defined]
        assert r.headers["content-type"] == "application/problem+json"  # type: ignore[attr-defined]
        assert "nests brackets" in r.json()["detail"]  # type: ignore[attr-defined]
    assert _views(w) == 0
    deep = "SELECT * WHERE { ?s ?p ?o FILTER(" + "(" * 30 + "?o" + ")" * 30 + ") }"
    assert _post(w, deep).status_code == 201  # type: ignore[attr-defined]


def test_a_consumer_has_a_quota_of_views(w: World) -> None:
    for _ in range(3):
        assert _post(w, "SELECT * WHERE { ?s ?p ?o }").status_code == 201  # type: ignore[attr-defined]
    r = _post(w, "SELECT * WHERE { ?s ?p ?o }")
    assert r.status_code == 422 and "views" in r.json()["detail"]  # type: ignore[attr-defined]
    assert _views(w) == 3


def test_views_estimated_too_large_are_refused(w: World) -> None:
    w.client.post("/admin/consents", json={"pod": "alice", "consumer": w.webids["consumer"]},
                  headers=w.as_("owner"))
    data = EX + "\n".join(f":n{i} :p {i} ." for i in range(100))
    assert w.client.put("/pods/alice/d", content=data,
                        headers={**TURTLE, **w.as_("owner")}).status_code == 201
    r = _post(w, "PREFIX : <http://ex/> SELECT * WHERE { ?a :p ?b . ?c :p ?d }")  # 100 × 100
    assert r.status_code == 422, r.text  # type: ignore[attr-defined]
    assert "10,000 rows" in r.json()["detail"]  # type: ignore[attr-defined]
    values = "VALUES ?x { " + " ".join(str(i) for i in range(100)) + " }"
    r = _post(w, f"SELECT * WHERE {{ {values} {values.replace('?x', '?y')} }}")
    assert r.status_code == 422  # type: ignore[attr-defined]
    joined = _post(w, "PREFIX : <http://ex/> SELECT * WHERE { ?a :p ?b . ?a :p ?d }")
    assert joined.status_code == 201  # type: ignore[attr-defined]
    assert _views(w) == 1


def test_a_view_growing_too_large_fails_and_says_why(w: World) -> None:
    w.client.post("/admin/consents", json={"pod": "alice", "consumer": w.webids["consumer"]},
                  headers=w.as_("owner"))
    r = _post(w, "PREFIX : <http://ex/> SELECT * WHERE { ?a :p ?b . ?c :q ?d }")
    assert r.status_code == 201  # nothing of :p or :q yet: estimated empty
    view = r.headers["location"]  # type: ignore[attr-defined]
    data = EX + "\n".join(f":n{i} :p {i} . :n{i} :q {i} ." for i in range(100))
    r = w.client.put("/pods/alice/d", content=data, headers={**TURTLE, **w.as_("owner")})
    seq = r.headers["podviews-seq"]
    r = w.client.get(f"{view}/results", params={"min_seq": seq}, headers=w.as_("consumer"))
    assert r.status_code == 409 and "too large" in r.json()["detail"], r.text
    described = w.client.get(view, headers=w.as_("consumer")).json()
    assert described["status"] == "failed" and "10,000" in described["note"]
    assert w.client.get("/healthz").status_code == 200


def test_results_come_a_page_at_a_time(migrated: str) -> None:
    with world(migrated, page_rows=4) as w:
        w.client.post("/admin/consents", json={"pod": "alice", "consumer": w.webids["consumer"]},
                      headers=w.as_("owner"))
        data = EX + "\n".join(f":n{i} :p {i} ." for i in range(10))
        seq = w.client.put("/pods/alice/d", content=data,
                           headers={**TURTLE, **w.as_("owner")}).headers["podviews-seq"]
        view = _post(w, "PREFIX : <http://ex/> SELECT ?v WHERE { ?s :p ?v } ORDER BY DESC(?v)"
                     ).headers["location"]  # type: ignore[attr-defined]
        url, seen, pages = f"{view}/results?min_seq={seq}", [], 0
        while url:
            r = w.client.get(url, headers=w.as_("consumer"))
            assert r.status_code == 200 and r.headers["podviews-total"] == "10"
            rows = [int(b["v"]["value"]) for b in r.json()["results"]["bindings"]]
            assert len(rows) <= 4
            seen += rows
            pages += 1
            url = r.links.get("next", {}).get("url")
        assert pages == 3 and seen == list(range(9, -1, -1))
        r = w.client.get(f"{view}/results", params={"offset": 8, "limit": 100},
                         headers=w.as_("consumer"))
        assert [b["v"]["value"] for b in r.json()["results"]["bindings"]] == ["1", "0"]
        assert "next" not in r.links  # the last page (its Link names only the storage description)


def _shared_view(w: World, data: str, query: str) -> tuple[str, str]:
    """alice's pod holding ``data`` (Turtle), shared with the consumer, and
    the consumer's view of ``query``: its URL and the write's position."""
    w.client.post("/admin/consents", json={"pod": "alice", "consumer": w.webids["consumer"]},
                  headers=w.as_("owner"))
    seq = w.client.put("/pods/alice/d", content=data,
                       headers={**TURTLE, **w.as_("owner")}).headers["podviews-seq"]
    return _post(w, query).headers["location"], seq  # type: ignore[attr-defined]


def _pages(w: World, view: str, seq: str, total: int) -> list[list[tuple[str, str | None]]]:
    """Every page of the view's results (?v and ?w), each saying ``total``."""
    url, pages = f"{view}/results?min_seq={seq}", []
    while url:
        r = w.client.get(url, headers=w.as_("consumer"))
        assert r.status_code == 200 and r.headers["podviews-total"] == str(total), r.text
        pages.append([(b["v"]["value"], b.get("w", {}).get("value"))
                      for b in r.json()["results"]["bindings"]])
        url = r.links.get("next", {}).get("url")
    return pages


def test_an_unordered_views_pages_hold_its_solutions_once_each(migrated: str) -> None:
    """A SELECT without ORDER BY is paged by Postgres (design note 158): the
    pages, cut through solutions that repeat and across the tables of its
    two schemas (?w bound or not), hold exactly pyoxigraph's solutions with
    their multiplicities, the same at a second read, and a page decodes
    only its own terms."""
    query = "PREFIX : <http://ex/> SELECT ?v ?w WHERE { ?s :p ?v OPTIONAL { ?s :q ?w } }"
    data = EX + "\n".join(f":n{i} :p {i % 3} ." + (f' :n{i} :q "x{i % 4}" .' if i % 2 else "")
                          for i in range(11))
    store = ox.Store()
    store.load(data.encode(), ox.RdfFormat.TURTLE)
    want = Counter((str(s["v"].value), None if s["w"] is None else str(s["w"].value))
                   for s in store.query(query))
    with world(migrated, page_rows=4) as w:
        view, seq = _shared_view(w, data, query)
        pages = _pages(w, view, seq, 11)
        assert [len(p) for p in pages] == [4, 4, 3]
        assert Counter(x for p in pages for x in p) == want
        assert len(want) < 11  # some solutions repeat
        assert _pages(w, view, seq, 11) == pages
        engine = sa.create_engine(migrated)
        decoded: list[int] = []
        sa.event.listen(engine, "before_cursor_execute", lambda conn, cursor, stmt, params, *r:
                        decoded.extend(params["ids"]) if "JOIN terms t ON t.id" in stmt else None)
        with engine.connect() as c:
            v = views_repo.view_row(c, int(view.rsplit("/", 1)[1]))
            rows, total = catalog.page(c, v, 5, 2)
        engine.dispose()
        assert total == 11 and [(r["v"], r.get("w")) for r in rows] == \
            [(fields_of(Literal(int(a))), None if b is None else fields_of(Literal(b)))
             for a, b in (pages[1][1], pages[1][2])]
        assert len(decoded) <= 4  # the page's two solutions, two variables each


def test_an_ordered_views_pages_follow_the_reference_order(migrated: str) -> None:
    """A SELECT ordered by variables is paged by Postgres by the terms' sort
    keys (design note 160): through the API, its pages (cut through repeated
    solutions, its LIMIT and OFFSET applied) are the reference evaluator's
    ordered and sliced solutions in sequence; and ``catalog.page`` over the
    same rows, ordered every other way — each variable ascending or
    descending, unbound ones among them (?z never bound), ties broken by
    the other variable — sliced at every offset, size and LIMIT, is the
    same as ``views.results.solutions``'s."""
    objects = ["2", "-1.5", "2.0E0", '"b"', '"a"@en', ":z", '"10"', "true", "1",
               '"2002-01-01T00:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime>']
    data = EX + "\n".join(f":n{i} :p {objects[i % len(objects)]} ."
                          + (f" :n{i} :q {objects[(3 * i) % 4]} ." if i % 3 else "")
                          for i in range(23))
    query = ("PREFIX : <http://ex/> SELECT ?v ?w WHERE { ?s :p ?v OPTIONAL { ?s :q ?w } } "
             "ORDER BY DESC(?w) ?v OFFSET 2 LIMIT 15")
    with world(migrated, page_rows=4) as w:
        view, seq = _shared_view(w, data, query)
        got = [x for p in _pages(w, view, seq, 15) for x in p]
        engine = sa.create_engine(migrated)
        with engine.connect() as c:
            v = views_repo.view_row(c, int(view.rsplit("/", 1)[1]))
            current = catalog.results(c, v)
            want = solutions(compile_query(query).query, current)
            assert got == [(str(m["v"]), None if "w" not in m else str(m["w"])) for m in want]
            assert len(set(got)) < len(got)  # some solutions repeat
            for order in ("?v", "DESC(?v)", "?w", "DESC(?w) DESC(?v)", "?w ?v", "?z ?v"):
                for skip, limit in ((0, None), (3, 7), (21, 10)):
                    text = (f"PREFIX : <http://ex/> SELECT ?v ?w ?z WHERE {{ ?s :p ?v "
                            f"OPTIONAL {{ ?s :q ?w }} }} ORDER BY {order}"
                            + (f" OFFSET {skip}" if skip else "")
                            + ("" if limit is None else f" LIMIT {limit}"))
                    q = compile_query(text).query
                    whole = solutions(q, current)
                    by = [(k.expr.name, k.descending) for k in q.order]  # type: ignore[union-attr]
                    for offset, size in ((0, None), (0, 5), (4, 3), (13, 100), (40, 2)):
                        rows, total = catalog.page(c, v, offset, size, by, skip, limit)
                        end = None if size is None else offset + size
                        assert rows == [{x: fields_of(t) for x, t in m.items()}
                                        for m in whole[offset:end]], (order, skip, limit, offset, size)
                        assert total == len(whole), (order, skip, limit)
        engine.dispose()


def test_a_write_during_a_views_first_backfill_wakes_it(migrated: str) -> None:
    """The backfill adopts its consents when it commits; a write committed
    while it ran (after its snapshot) must still wake the view, or the view
    would claim to reflect the write (found by the test above, racing)."""
    with world(migrated, workers=0) as w:
        w.client.post("/admin/consents", json={"pod": "alice", "consumer": w.webids["consumer"]},
                      headers=w.as_("owner"))
        view = _post(w, "PREFIX : <http://ex/> SELECT * WHERE { ?a :p ?b }"
                     ).headers["location"]  # type: ignore[attr-defined]
        view_id = int(view.rsplit("/", 1)[1])
        engine = sa.create_engine(migrated)
        with engine.connect() as c:  # the backfill has not committed: nothing adopted yet
            assert c.execute(sa.text("SELECT count(*) FROM consent_views WHERE view_id = :v"),
                             {"v": view_id}).scalar_one() == 0
        w.client.put("/pods/alice/d", content=EX + ":n :p 1 .", headers={**TURTLE,
                                                                          **w.as_("owner")})
        with engine.connect() as c:
            kinds = c.execute(sa.text("SELECT kind FROM jobs WHERE view_id = :v ORDER BY id"),
                              {"v": view_id}).scalars().all()
        engine.dispose()
        assert kinds == ["backfill", "apply_changes"]

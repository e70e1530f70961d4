"""The HTTP API in process (httpx over ASGI)."""

from __future__ import annotations

import httpx
import pytest

from server.app import create_app

PREFIXES = "PREFIX : <http://ex/>\n"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _client() -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app()),
                             base_url="http://t")


@pytest.mark.anyio
async def test_view_follows_writes() -> None:
    async with await _client() as c:
        r = await c.post("/views", json={"name": "counts", "query": PREFIXES +
                         "SELECT ?s (COUNT(?o) AS ?n) WHERE { ?s :p ?o } GROUP BY ?s"})
        assert r.status_code == 201 and r.headers["location"] == "/views/1"
        r = await c.put("/pods/alice/data", content="@prefix : <http://ex/> . :a :p 1, 2 . :b :p 3 .",
                        headers={"content-type": "text/turtle"})
        assert r.status_code == 201 and r.headers["podviews-seq"] == "1"
        body = (await c.get("/views/1/results")).json()
        got = {b["s"]["value"]: b["n"]["value"] for b in body["results"]["bindings"]}
        assert got == {"http://ex/a": "2", "http://ex/b": "1"}
        await c.put("/pods/alice/data", content="@prefix : <http://ex/> . :a :p 1 .",
                    headers={"content-type": "text/turtle"})
        body = (await c.get("/views/1/results")).json()
        got = {b["s"]["value"]: b["n"]["value"] for b in body["results"]["bindings"]}
        assert got == {"http://ex/a": "1"}


@pytest.mark.anyio
async def test_bad_query_is_a_problem_document_with_position() -> None:
    async with await _client() as c:
        r = await c.post("/views", json={"name": "bad", "query": "SELECT * WHERE {\n ?s ?p }"})
        assert r.status_code == 400
        assert r.headers["content-type"] == "application/problem+json"
        body = r.json()
        assert body["line"] >= 1 and body["column"] >= 1
        assert (await c.get("/views/1")).status_code == 404  # nothing stored


@pytest.mark.anyio
async def test_unsupported_query_names_the_feature() -> None:
    async with await _client() as c:
        r = await c.post("/views", json={"name": "p", "query": "SELECT * { ?s <http://e/p>+ ?o }"})
        assert r.status_code == 400 and r.json()["feature"] == "property paths"


@pytest.mark.anyio
async def test_malformed_rdf_stores_nothing() -> None:
    async with await _client() as c:
        r = await c.put("/pods/alice/x", content="this is not turtle",
                        headers={"content-type": "text/turtle"})
        assert r.status_code == 400
        assert r.headers["content-type"] == "application/problem+json"
        assert (await c.get("/pods/alice/x")).status_code == 404

"""End to end: a real ``podviews serve`` process over real HTTP."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    port = _free_port()
    env = {**os.environ, "PODVIEWS_PORT": str(port)}
    proc = subprocess.Popen([sys.executable, "-m", "server.cli", "serve"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                if httpx.get(f"{base}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        else:
            raise RuntimeError("server did not start")
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_write_then_read_a_fresh_view(server: str) -> None:
    with httpx.Client(base_url=server) as c:
        q = ("PREFIX foaf: <http://xmlns.com/foaf/0.1/>\n"
             "SELECT ?name WHERE { ?p foaf:name ?name FILTER NOT EXISTS { ?p foaf:nick ?n } }")
        view = c.post("/views", json={"name": "names", "query": q})
        assert view.status_code == 201
        url = view.headers["location"]
        doc = ("@prefix foaf: <http://xmlns.com/foaf/0.1/> .\n"
               "<#me> foaf:name \"Alice\" . <#bob> foaf:name \"Bob\" ; foaf:nick \"b\" .")
        put = c.put("/pods/alice/profile", content=doc, headers={"content-type": "text/turtle"})
        assert put.status_code == 201
        r = c.get(f"{url}/results")
        assert r.headers["content-type"] == "application/sparql-results+json"
        names = [b["name"]["value"] for b in r.json()["results"]["bindings"]]
        assert names == ["Alice"]
        assert c.delete("/pods/alice/profile").status_code == 204
        assert c.get(f"{url}/results").json()["results"]["bindings"] == []

"""Comunica (``@comunica/query-sparql`` 4, the version that runs on this
machine's Node) against `podviews serve`, with a fetch that adds the owner's
bearer token: it queries a pod resource, updates it, creates a new resource
by an update (learning how from the 404's ``Allow``/``Accept-Put``) and
deletes by pattern; what it wrote is what the pod serves, read back here
through LDP."""

from __future__ import annotations

from pathlib import Path

import pyoxigraph as ox
import pytest

from server.tools import paths
from tests.e2e.conftest import NODE, node_steps, npm_package, owned_pod

pytestmark = pytest.mark.skipif(not NODE, reason="Node.js is not installed")

CLIENT = Path(__file__).parent / "comunica" / "client.mjs"
NAME = "http://xmlns.com/foaf/0.1/name"


def _names(pod, path: str) -> list[str]:  # type: ignore[no-untyped-def]
    r = pod.client.get(f"{pod.url}{path}", headers={"accept": "application/n-triples"})
    assert r.status_code == 200, r.text
    return sorted(q.object.value for q in ox.parse(r.content, ox.RdfFormat.N_TRIPLES)
                  if q.predicate.value == NAME)


def test_comunica_queries_updates_and_creates(podviews: str) -> None:
    modules = npm_package(paths.REPO / ".comunica", "@comunica/query-sparql@4")
    pod = owned_pod(podviews, "comunica")
    r = pod.client.put(f"{pod.url}people", headers={"content-type": "text/turtle"}, content=(
        '@prefix foaf: <http://xmlns.com/foaf/0.1/> . <#a> foaf:name "Ann" . '
        '<#b> foaf:name "Bob" .'))
    assert r.status_code == 201
    done = node_steps(CLIENT, modules, pod)
    assert done == {"query": ["Ann", "Bob"], "update": ["Ann", "Bob", "Cy"], "create": ["Dee"],
                    "deleteWhere": ["Ann", "Cy"]}
    assert _names(pod, "people") == ["Ann", "Cy"]
    assert _names(pod, "made/new") == ["Dee"]
    assert pod.client.get(f"{pod.url}made/").status_code == 200  # its container was made too

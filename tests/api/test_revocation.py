"""Revocation is immediate for readers (decision 9): once a revocation is
acknowledged, no read of a view the pod fed returns anything derived from
it — with no worker running, reads wait (bounded by ``wait``) and then
answer 503 with Retry-After; once a worker has applied the revocation they
answer without the pod. Grants and revocations carry the change-log
position they apply at (``Podviews-Seq``)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from server.maintenance import jobs
from tests.api.api_helpers import TURTLE, World, world

EX = "@prefix : <http://ex/> .\n"


@pytest.fixture
def w(migrated: str):  # type: ignore[no-untyped-def]
    with world(migrated, workers=0) as w:
        w.engine = sa.create_engine(migrated)  # type: ignore[attr-defined]
        yield w


def _drain(w: World) -> None:
    while jobs.run_one(w.engine, "test"):  # type: ignore[attr-defined]
        pass


def _subjects(w: World, view: str, **params: object) -> list[str]:
    r = w.client.get(f"{view}/results", params=params, headers=w.as_("consumer"))
    assert r.status_code == 200, r.text
    return sorted(b["s"]["value"] for b in r.json()["results"]["bindings"])


def test_no_read_after_a_revocation_shows_the_pod(w: World) -> None:
    view = w.client.post("/views", json={"name": "v", "query": "SELECT ?s WHERE { ?s ?p ?o }"},
                         headers=w.as_("consumer")).headers["location"]
    grants = {}
    for pod, owner in (("alice", "owner"), ("bob", "other_owner")):
        r = w.client.post("/admin/consents", json={"pod": pod, "consumer": w.webids["consumer"]},
                          headers=w.as_(owner))
        assert r.status_code == 201 and int(r.headers["podviews-seq"]) >= 0
        grants[pod] = r.json()["id"]
        r = w.client.put(f"/pods/{pod}/data", content=EX + f":{pod} :p 1 .",
                         headers={**TURTLE, **w.as_(owner)})
        assert r.status_code == 201
    _drain(w)
    assert _subjects(w, view) == ["http://ex/alice", "http://ex/bob"]

    r = w.client.delete(f"/admin/consents/{grants['alice']}", headers=w.as_("owner"))
    assert r.status_code == 204
    seq = int(r.headers["podviews-seq"])
    # no worker has run: the view still holds alice's data, so it is withheld
    r = w.client.get(f"{view}/results", params={"wait": 0}, headers=w.as_("consumer"))
    assert r.status_code == 503 and r.headers["retry-after"]
    assert "revok" in r.json()["detail"]
    r = w.client.get(f"{view}/results", params={"wait": 0.3, "min_seq": seq},
                     headers=w.as_("consumer"))
    assert r.status_code == 503
    described = w.client.get(view, headers=w.as_("consumer")).json()
    assert described["status"] == "revoking" and described["rows"] is None

    _drain(w)  # a worker applies the revocation
    assert _subjects(w, view, min_seq=seq) == ["http://ex/bob"]
    assert w.client.get(view, headers=w.as_("consumer")).json()["status"] == "ready"

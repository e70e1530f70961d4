"""Operators' view: metrics on a live server after a PATCH, readiness,
request ids, JSON log lines."""

from __future__ import annotations

import json
import logging
import time

import httpx
import pytest

from server.api.ops.observability import JsonFormatter, request_id
from tests.api.api_helpers import TURTLE, World, world
from tests.e2e.test_e2e import ADMIN, served  # noqa: F401 - this module's own server process


def _metric(text: str, name: str, **labels: str) -> float:
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name) and all(f'{k}="{v}"' in line for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_metrics_on_a_live_server_after_a_patch(served: tuple[str, str]) -> None:  # noqa: F811
    base, _ = served
    admin = httpx.Client(base_url=base, headers={"authorization": f"Bearer {ADMIN}"})
    agent = admin.post("/admin/agents", json={"webid": "https://m.example/#o", "role": "owner"})
    admin.post("/admin/pods", json={"name": "metered", "owner": "https://m.example/#o"})
    owner = httpx.Client(base_url=base, headers={"authorization": f"Bearer {agent.json()['token']}"})
    r = owner.patch("/pods/metered/doc", content="INSERT DATA { <#a> <#b> 1, 2, 3 }",
                    headers={"content-type": "application/sparql-update"})
    assert r.status_code == 201
    text = httpx.get(f"{base}/metrics").text
    assert _metric(text, "podviews_request_seconds_count", method="PATCH",
                   route="/pods/{pod}/{path:path}", status="201") == 1
    assert _metric(text, "podviews_write_triples_sum") >= 3
    for family in ("podviews_queue_jobs", "podviews_jobs_dead", "podviews_view_lag_changes",
                   "podviews_view_lag_seconds", "podviews_job_failures"):
        assert f"# TYPE {family} gauge" in text
    deadline = time.monotonic() + 30  # the worker process connects once it has started
    while (ready := httpx.get(f"{base}/readyz")).status_code != 200 and \
            time.monotonic() < deadline:
        time.sleep(0.2)
    assert ready.status_code == 200 and ready.json()["workers"] == "ok"


@pytest.fixture
def w(migrated: str):  # type: ignore[no-untyped-def]
    with world(migrated) as w:
        yield w


def test_request_ids_are_echoed_and_per_view_lag_reported(w: World) -> None:
    r = w.client.get("/healthz", headers={"x-request-id": "abc123"})
    assert r.headers["x-request-id"] == "abc123"
    assert len(w.client.get("/healthz").headers["x-request-id"]) == 32
    w.client.put("/pods/alice/d", content="<#a> <#b> 1, 2 .", headers={**TURTLE, **w.as_("owner")})
    w.client.post("/admin/consents", json={"pod": "alice", "consumer": w.webids["consumer"]},
                  headers=w.as_("owner"))
    view = w.client.post("/views", json={"name": "v", "query": "SELECT * { ?s ?p ?o }"},
                         headers=w.as_("consumer")).headers["location"]
    w.client.get(f"{view}/results", params={"min_seq": 1}, headers=w.as_("consumer"))
    put = w.client.put("/pods/alice/d", content="<#a> <#b> 3 .",
                       headers={**TURTLE, **w.as_("owner")})
    # the view has applied every change up to the write's (consents take seqs too)
    w.client.get(f"{view}/results", params={"min_seq": put.headers["podviews-seq"]},
                 headers=w.as_("consumer"))
    text = w.client.get("/metrics").text
    assert f'podviews_view_lag_changes{{view="{view.rsplit("/", 1)[1]}"}} 0.0' in text
    # the backfill ran on the SQL executor (small: the router's auto); every
    # done job names the executor that ran it
    assert _metric(text, "podviews_jobs_done", kind="backfill", executor="sql") == 1
    assert 'executor="unknown"' not in text
    # batch sizes: the backfill read the pod's 2 triples, the change job a
    # ΔG of 3 (1 and 2 out, 3 in)
    for kind, triples in [("backfill", 2), ("apply_changes", 3)]:
        assert _metric(text, "podviews_job_triples_count", kind=kind, executor="sql") == 1
        assert _metric(text, "podviews_job_triples_sum", kind=kind, executor="sql") == triples
        assert _metric(text, "podviews_job_triples_bucket", kind=kind, le="1.0") == 0
        assert _metric(text, "podviews_job_triples_bucket", kind=kind, le="10.0") == 1


def test_log_lines_are_json_with_the_request_id() -> None:
    record = logging.LogRecord("podviews.worker", logging.INFO, "x", 1, "job %s done", (7,), None)
    record.job_id = 7
    token = request_id.set("r-1")
    try:
        line = json.loads(JsonFormatter().format(record))
    finally:
        request_id.reset(token)
    assert line["message"] == "job 7 done" and line["request_id"] == "r-1"
    assert line["job_id"] == 7 and line["level"] == "INFO"

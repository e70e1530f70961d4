"""The Inrupt notifications client (``@inrupt/solid-client-notifications``
3, npm) follows a view of `podviews serve` over WebSocketChannel2023: it
finds the notification gateway in the server's storage description,
subscribes to the view's results as the consumer, and receives one
Activity Streams ``Update`` per write of a scripted session, at the
write's seq — the results it started from, with every delta applied,
are the view's results read afresh (design notes 90–96)."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path

import httpx
import pytest

from server.tools import paths
from tests.e2e.conftest import NODE, consenting_consumer, npm_package, owned_pod

pytestmark = pytest.mark.skipif(not NODE, reason="Node.js is not installed")

SCRIPT = Path(__file__).parent / "notify" / "follow.mjs"
EX = "@prefix : <http://ex/> .\n"
SESSION = [EX + ":a :p 1 . :b :p 2 .", EX + ":a :p 1 . :c :p 3 .", EX + ":d :p 4 ."]


def _row(b: dict) -> tuple:  # type: ignore[type-arg]
    return tuple(sorted((v, t["type"], t["value"]) for v, t in b.items()))


def test_the_inrupt_client_receives_each_delta_of_a_session(podviews: str) -> None:
    modules = npm_package(paths.REPO / ".notify", "@inrupt/solid-client-notifications@3")
    pod = owned_pod(podviews, "notify")
    made, view = consenting_consumer(podviews, pod, "notify", "https://notify.test/#it",
                                     "SELECT ?s ?o WHERE { ?s <http://ex/p> ?o }")
    consumer = {"authorization": f"Bearer {made['token']}"}
    with httpx.Client(base_url=podviews, headers=consumer, timeout=60) as c:
        start = c.get(f"{view}/results", params={"min_seq": 1, "wait": 60}).json()
    rows = Counter(_row(b) for b in start["results"]["bindings"])
    run = subprocess.run(["node", str(SCRIPT), str(modules), f"{podviews}{view}/results",
                          made["token"], f"{pod.url}data", pod.token, json.dumps(SESSION)],
                         capture_output=True, text=True, timeout=300, check=False)
    steps = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    assert run.returncode == 0 and all(s["ok"] for s in steps), (steps, run.stderr[-2000:])
    done = {s["step"]: s["result"] for s in steps}
    assert done["connect"] == f"{podviews}/notifications/gateway"
    for i in range(1, len(SESSION) + 1):
        step = done[f"write{i}"]
        assert [int(n["state"]) for n in step["notifications"]] == [step["seq"]]
        note = step["notifications"][0]
        assert note["type"] == "Update" and note["object"] == f"{podviews}{view}/results"
        rows.update(_row(b) for b in note["delta"]["added"])
        rows.subtract(_row(b) for b in note["delta"]["removed"])
    final = httpx.get(f"{podviews}{view}/results", headers=consumer, timeout=60,
                      params={"min_seq": done[f"write{len(SESSION)}"]["seq"], "wait": 60})
    assert +rows == Counter(_row(b) for b in final.json()["results"]["bindings"])

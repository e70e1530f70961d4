"""Solid-OIDC end to end: a Community Solid Server 7 on loopback is the
identity provider (its account API makes two accounts, each with a pod and
WebID there and client credentials); `@inrupt/solid-client-authn-node` logs
both in and, with ``session.fetch``, uses a pod on `podviews serve` owned by
the first WebID: containers, a dataset, a file, the effective access, a
``universalAccess`` grant of Read to the second WebID — who then reads
exactly what was granted and nothing else."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx
import pytest

from server.tools import paths
from tests.e2e.conftest import ADMIN, NODE, npm_package
from tests.e2e.solid_login import css_account

pytestmark = pytest.mark.skipif(not NODE, reason="Node.js is not installed")

SCRIPT = Path(__file__).parent / "inrupt" / "login.mjs"
AUTHN_HOME = paths.REPO / ".authn"  # npm install --prefix .authn (see .ci/run)
PACKAGES = ("@inrupt/solid-client-authn-node@2", "@inrupt/solid-client@3")


def test_webids_of_a_css_log_in_and_share(css: str, podviews_oidc: str) -> None:
    for package in PACKAGES:
        modules = npm_package(AUTHN_HOME, package)
    a, b = css_account(css, "alice"), css_account(css, "bob")
    alice, alice_id, alice_secret = a.webid, a.client_id, a.secret
    bob, bob_id, bob_secret = b.webid, b.client_id, b.secret
    with httpx.Client(base_url=podviews_oidc, timeout=60,
                      headers={"authorization": f"Bearer {ADMIN}"}) as admin:
        assert admin.post("/admin/agents", json={"webid": alice, "role": "owner"}
                          ).status_code == 201
        r = admin.post("/admin/pods", json={"name": "shared", "owner": alice})
        assert r.status_code == 201, r.text
        root = r.json()["url"]
    run = subprocess.run(["node", str(SCRIPT), str(modules), css, root, alice_id, alice_secret,
                          bob_id, bob_secret], check=False, capture_output=True, text=True,
                         timeout=300)
    steps = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    failed = [s for s in steps if not s["ok"]]
    assert not failed and run.returncode == 0, (failed, run.stderr[-2000:])
    done = {s["step"]: s["result"] for s in steps}
    assert done["aliceLogsIn"] == alice and done["bobLogsIn"] == bob
    assert done["saveSolidDatasetAt"] == ["Ann"]
    assert done["overwriteFile"] == "for Alice only"
    assert done["bobReadsWhatWasGranted"] == ["Ann"]
    assert done["bobEffectiveAccess"] == {"read": True, "append": False, "write": False}
    # Bob holds Read on the dataset: writing it is 403; elsewhere he holds
    # nothing, so the file and the container do not exist for him (404)
    assert done["bobReadsNothingElse"] == {"write": 403, "file": 404, "container": 404,
                                           "anonymous": 401}

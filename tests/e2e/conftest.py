"""What the end-to-end tests share: a Community Solid Server 7 on loopback
(npm; ``.ci/run`` installs it), a `podviews serve` on a fresh database, and
``owned_pod`` — an owner with a pod on a running server, as a client that
sends the owner's bearer token."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from server.tools import paths
from server.tools.process import serving, wait_until_up
from storage.embedded import free_port
from tests.conftest import scratch_database

CSS_HOME = paths.REPO / ".css"  # npm install --prefix .css @solid/community-server@7
CSS_BIN = CSS_HOME / "node_modules" / ".bin" / "community-solid-server"
CSS_CONFIG = Path(__file__).parent / "css" / "allow-all.json"
ADMIN = "e2e-solid-admin-token"
NODE = shutil.which("node") is not None
# CSS answers a successful PUT, PATCH or DELETE with 205; a listed difference of both
# differential tests
HTTP_204 = ("RFC 9110 §9.3.4 (PUT): 'the origin server MUST send either a 200 (OK) or a 204 (No "
            "Content) response to indicate successful completion of the request'; §9.3.5 "
            "(DELETE) and RFC 5789 §2 (PATCH) name 204 likewise — CSS answers 205 (Reset "
            "Content), which tells a client to reset its form.")


def npm_package(home: Path, package: str) -> Path:
    """``home``'s node_modules, with ``package`` installed there if missing
    (``.ci/run`` installs it; a developer's first run does here)."""
    modules = home / "node_modules"
    if not (modules / package.rsplit("@", 1)[0]).exists():
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(home),
                        package], check=True, capture_output=True)
    return modules


@contextmanager
def css_server(config: Path, host: str = "127.0.0.1") -> Iterator[str]:
    """A Community Solid Server 7 on loopback (in memory) run with ``config``;
    its base URL, on ``host`` (``localhost`` where CSS checks WebIDs of
    Solid-OIDC tokens: it takes http only for localhost)."""
    if not NODE:
        pytest.skip("Node.js is not installed: no Community Solid Server")
    if not CSS_BIN.exists():
        npm_package(CSS_HOME, "@solid/community-server@7")
    port = free_port()
    proc = subprocess.Popen([str(CSS_BIN), "-c", str(config), "-p", str(port), "-l", "warn",
                             "-b", f"http://{host}:{port}/"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://{host}:{port}/"
    try:
        wait_until_up(base, proc, "the Community Solid Server")
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def css() -> Iterator[str]:
    """The base URL of a Community Solid Server 7 (in memory, every request
    allowed)."""
    with css_server(CSS_CONFIG) as base:
        yield base


@pytest.fixture(scope="module")
def podviews(pg_server: str, migrated_template: str) -> Iterator[str]:
    """The base URL of a `podviews serve` on a fresh database (its resource
    IRIs are under its own URL: http://127.0.0.1:{port})."""
    with scratch_database(pg_server, "pv_solid", template=migrated_template) as url, serving(
            {"PODVIEWS_DATABASE_URL": url, "PODVIEWS_EXECUTOR": "sql",
             "PODVIEWS_ADMIN_TOKEN": ADMIN}, inherit=False) as served:
        yield served


@pytest.fixture(scope="module")
def podviews_oidc(pg_server: str, migrated_template: str) -> Iterator[str]:
    """A `podviews serve` like ``podviews`` that may fetch WebID profiles and
    issuers' keys on loopback, where the tests' identity provider runs."""
    with scratch_database(pg_server, "pv_oidc_e2e", template=migrated_template) as url, serving(
            {"PODVIEWS_DATABASE_URL": url, "PODVIEWS_EXECUTOR": "sql",
             "PODVIEWS_ADMIN_TOKEN": ADMIN, "PODVIEWS_OIDC_FETCH_PRIVATE": "true"},
            inherit=False) as served:
        yield served


@dataclass
class OwnedPod:
    client: httpx.Client  # sends the owner's bearer token
    token: str
    webid: str
    url: str  # the pod's root container


def owned_pod(base: str, pod: str, admin: str = ADMIN) -> OwnedPod:
    """A new owner with a new pod ``pod`` on the server at ``base``."""
    with httpx.Client(base_url=base, headers={"authorization": f"Bearer {admin}"},
                      timeout=60) as c:
        r = c.post("/admin/agents", json={"webid": f"https://{pod}.owner.test/#me",
                                          "role": "owner"})
        assert r.status_code == 201, r.text
        made = r.json()
        r = c.post("/admin/pods", json={"name": pod, "owner": made["webid"]})
        assert r.status_code == 201, r.text
    client = httpx.Client(base_url=base, timeout=60,
                          headers={"authorization": f"Bearer {made['token']}"})
    return OwnedPod(client, made["token"], made["webid"], r.json()["url"])


def node_steps(script: Path, modules: Path, pod: OwnedPod) -> dict[str, object]:
    """Run a Node client script (``script <node_modules> <pod URL> <token>``,
    one JSON line per step) against ``pod``; each step's result, in order,
    once every step succeeded."""
    run = subprocess.run(["node", str(script), str(modules), pod.url, pod.token], check=False,
                         capture_output=True, text=True, timeout=300)
    steps = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    failed = [s for s in steps if not s["ok"]]
    assert not failed and run.returncode == 0, (failed, run.stderr[-2000:])
    return {s["step"]: s["result"] for s in steps}


def consenting_consumer(base: str, owner: OwnedPod, pod: str, webid: str, query: str,
                        admin_token: str = ADMIN) -> tuple[dict, str]:
    """A new consumer ``webid`` with a view of ``query``, granted ``pod`` by
    its owner: (the agent as the admin API made it — webid, token — and the
    view's path)."""
    with httpx.Client(base_url=base, headers={"authorization": f"Bearer {admin_token}"}) as admin:
        made = admin.post("/admin/agents", json={"webid": webid, "role": "consumer"}).json()
    with httpx.Client(base_url=base, timeout=60,
                      headers={"authorization": f"Bearer {made['token']}"}) as c:
        view = c.post("/views", json={"name": "v", "query": query}).headers["location"]
    assert owner.client.post("/admin/consents", json={
        "pod": pod, "consumer": made["webid"]}).status_code == 201
    return made, view

"""Differential Web Access Control: the same ACL documents and the same
requests, by the same agents, sent to `podviews serve` (a pod's root) and to
a Community Solid Server 7 deciding by WAC (its root storage). On CSS an
agent is named by an ``Authorization: WebID <iri>`` header (its test-only
extractor); on ours by the bearer token of the agent with that WebID. The
status codes — and the caller's and the public's ``WAC-Allow`` of every
successful GET — must agree, except for the differences in ``DIFFERENCES``,
each with the sentence that allows it; a listed difference that no longer
occurs fails the test too."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import ADMIN, NODE, css_server, owned_pod

pytestmark = pytest.mark.skipif(not NODE, reason="Node.js is not installed: no Community "
                                                   "Solid Server")

WAC_CONFIG = Path(__file__).parent / "css" / "wac-webid-header.json"
TTL = {"content-type": "text/turtle"}
AGENTS = ("anonymous", "alice", "bob", "carol")
WEBIDS = {a: f"https://{a}.wac.test/profile#me" for a in AGENTS[1:]}
ACL = ("@prefix acl: <http://www.w3.org/ns/auth/acl#>.\n"
       "@prefix foaf: <http://xmlns.com/foaf/0.1/>.\n")
ROOT_ACL = ACL + (f"<#owner> a acl:Authorization; acl:agent <{WEBIDS['alice']}>;\n"
                  "  acl:mode acl:Read, acl:Write, acl:Append, acl:Control;\n"
                  "  acl:accessTo <./>; acl:default <./>.\n")
OWNER = (f"<#owner> a acl:Authorization; acl:agent <{WEBIDS['alice']}>;\n"
         "  acl:mode acl:Read, acl:Write, acl:Control; acl:accessTo <{target}>{default}.\n")
# path -> ACL document (relative IRIs: the same text on both servers); each
# names alice, as the pod owner's ACL documents do on CSS (on ours she is the
# owner, whom no ACL document can shut out)
DOCUMENTS = {
    "shared/.acl": ACL + OWNER.format(target="./", default="; acl:default <./>") + (
        f"<#read> a acl:Authorization; acl:agent <{WEBIDS['bob']}>; acl:mode acl:Read;\n"
        "  acl:accessTo <./>; acl:default <./>.\n"
        f"<#write> a acl:Authorization; acl:agent <{WEBIDS['carol']}>;\n"
        "  acl:mode acl:Read, acl:Write; acl:accessTo <./>; acl:default <./>.\n"),
    "shared/pub.acl": ACL + OWNER.format(target="./pub", default="") + ("<#public> a acl:Authorization; acl:agentClass foaf:Agent;\n"
                             "  acl:mode acl:Read; acl:accessTo <./pub>.\n"),
    "inbox/.acl": ACL + OWNER.format(target="./", default="; acl:default <./>") + ("<#append> a acl:Authorization; acl:agentClass acl:AuthenticatedAgent;"
                         "\n  acl:mode acl:Append; acl:accessTo <./>; acl:default <./>.\n"),
}
N3 = ("@prefix solid: <http://www.w3.org/ns/solid/terms#>.\n"
      "_:p a solid:InsertDeletePatch; solid:inserts { <#a> <#b> <#c> }.")

# name -> (method, path, headers, body, set-up by alice before the request);
# {i} is the agent's index, so that each agent creates or deletes its own
Step = tuple[str, str, dict[str, str], str, str | None]
SCRIPT: dict[str, Step] = {
    "get shared": ("GET", "shared/doc", {}, "", None),
    "head shared": ("HEAD", "shared/doc", {}, "", None),
    "get shared container": ("GET", "shared/", {}, "", None),
    "put shared": ("PUT", "shared/doc", TTL, "<#a> <#b> 2 .", None),
    "create in shared": ("PUT", "shared/new{i}", TTL, "<#a> <#b> 2 .", None),
    "patch shared": ("PATCH", "shared/doc", {"content-type": "text/n3"}, N3, None),
    "delete in shared": ("DELETE", "shared/del{i}", {}, "", "shared/del{i}"),
    "get public": ("GET", "shared/pub", {}, "", None),
    "put public": ("PUT", "shared/pub", TTL, "<#a> <#b> 2 .", None),
    "post to inbox": ("POST", "inbox/", TTL, "<#a> <#b> 3 .", None),
    "get inbox": ("GET", "inbox/", {}, "", None),
    "get acl": ("GET", "shared/.acl", {}, "", None),
    "put acl": ("PUT", "shared/.acl", TTL, DOCUMENTS["shared/.acl"], None),
    "get private": ("GET", "private", {}, "", None),
    "create private": ("PUT", "private2-{i}", TTL, "<#a> <#b> 2 .", None),
}

NO_MODE = ("RFC 9110 §15.5.5: 'An origin server that wishes to \"hide\" the current existence of "
           "a forbidden target resource MAY instead respond with a status code of 404 (Not "
           "Found)' — a known agent holding no mode at all on a resource gets 404 from us (it "
           "is not told the pod or resource exists), 403 from CSS.")
DIFFERENCES: dict[tuple[str, str], str] = {
    ("*", "no mode: 404 for 403"): NO_MODE,
    ("*", "status 204 for 205"): (
        "RFC 9110 §9.3.4 (PUT): 'the origin server MUST send either a 200 (OK) or a 204 (No "
        "Content) response' — CSS answers 205 (Reset Content)."),
}

Send = Callable[[str, str, str, dict[str, str], str], httpx.Response]


@pytest.fixture(scope="module")
def css_wac() -> Iterator[str]:
    with css_server(WAC_CONFIG) as base:
        yield base


def _css(base: str) -> Send:
    client = httpx.Client(timeout=60)

    def send(who: str, method: str, path: str, headers: dict[str, str],
             body: str) -> httpx.Response:
        auth = {} if who == "anonymous" else {"authorization": f"WebID {WEBIDS[who]}"}
        return client.request(method, base + path, headers={**headers, **auth}, content=body)
    return send


def _ours(base: str) -> Send:
    pod = owned_pod(base, "wac", )
    tokens = {"alice": pod.token}
    with httpx.Client(base_url=base, headers={"authorization": f"Bearer {ADMIN}"}) as admin:
        for who in ("bob", "carol"):
            r = admin.post("/admin/agents", json={"webid": WEBIDS[who], "role": "consumer"})
            assert r.status_code == 201, r.text
            tokens[who] = r.json()["token"]
    # the owner's WebID is the pod's: alice's ACL authorization names it too
    client = httpx.Client(timeout=60)

    def send(who: str, method: str, path: str, headers: dict[str, str],
             body: str) -> httpx.Response:
        auth = {} if who == "anonymous" else {"authorization": f"Bearer {tokens[who]}"}
        return client.request(method, pod.url + path, headers={**headers, **auth}, content=body)
    return send


def _set_up(send: Send, setup_as: str) -> None:
    """The root ACL (alice's), alice's resources, then the ACL documents."""
    assert send(setup_as, "PUT", ".acl", TTL, ROOT_ACL).status_code in (201, 204, 205)
    for path in ("shared/doc", "shared/pub", "inbox/x", "private"):
        assert send("alice", "PUT", path, TTL, "<#a> <#b> 1 .").status_code == 201
    for path, doc in DOCUMENTS.items():
        assert send("alice", "PUT", path, TTL, doc).status_code in (201, 204, 205)


def _wac(value: str | None) -> tuple[frozenset[str], frozenset[str]] | None:
    if value is None:
        return None
    found = dict(re.findall(r'(\w+)="([^"]*)"', value))
    return frozenset(found.get("user", "").split()), frozenset(found.get("public", "").split())


def run(send: Send) -> dict[tuple[str, str], dict[str, object]]:
    out: dict[tuple[str, str], dict[str, object]] = {}
    for name, (method, path, headers, body, setup) in SCRIPT.items():
        for i, who in enumerate(AGENTS):
            if setup is not None:
                assert send("alice", "PUT", setup.format(i=i), TTL, "<#a> <#b> 1 .").status_code \
                    == 201
            r = send(who, method, path.format(i=i), headers, body)
            seen: dict[str, object] = {"status": r.status_code}
            if method == "GET" and r.status_code == 200:
                seen["WAC-Allow"] = _wac(r.headers.get("wac-allow"))
            out[(name, who)] = seen
    return out


def test_the_same_access_decisions_as_the_community_solid_server(
        css_wac: str, podviews: str) -> None:
    theirs_send = _css(css_wac)
    ours_send = _ours(podviews)
    _set_up(theirs_send, "anonymous")  # CSS's initial root ACL lets anyone control it
    _set_up(ours_send, "alice")
    ours, theirs = run(ours_send), run(theirs_send)
    found: dict[tuple[str, str, str], tuple[object, object]] = {}
    for key in ours:
        for aspect in sorted(set(ours[key]) | set(theirs[key])):
            a, b = ours[key].get(aspect), theirs[key].get(aspect)
            if a == b:
                continue
            kind = {(204, 205): "status 204 for 205", (404, 403): "no mode: 404 for 403"}.get(
                (a, b), aspect) if aspect == "status" else aspect  # type: ignore[call-overload]
            found[(*key, kind)] = (a, b)
    unlisted = {k: v for k, v in found.items() if ("*", k[2]) not in DIFFERENCES}
    table = "\n".join(f"{s:22} {w:10} {a:20} ours={o!s:40.40} css={t!s:.40}"
                      for (s, w, a), (o, t) in sorted(unlisted.items()))
    assert not unlisted, f"differences from CSS not listed in DIFFERENCES:\n{table}"
    stale = [k for k in DIFFERENCES if not any(f[2] == k[1] for f in found)]
    assert not stale, f"listed differences that no longer occur: {stale}"
    # the decisions themselves, on both servers (a sample: CSS is the oracle)
    assert [theirs[("get shared", w)]["status"] for w in AGENTS] == [401, 200, 200, 200]
    assert [theirs[("put shared", w)]["status"] for w in AGENTS] == [401, 205, 403, 205]
    assert [theirs[("get public", w)]["status"] for w in AGENTS] == [200, 200, 200, 200]

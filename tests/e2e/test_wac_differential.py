"""Differential Web Access Control: the same ACL documents and the same
requests, by the same logged-in agents, sent to `podviews serve` (a pod of
Alice's) and to a Community Solid Server 7 deciding by WAC (Alice's pod
there). The CSS is also the identity provider: Alice, Bob and Carol have
accounts and WebIDs on it, and each logs in once (client credentials, a
DPoP-bound access token) and sends that token to both servers. The
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

from tests.e2e.conftest import ADMIN, HTTP_204, NODE, css_server
from tests.e2e.solid_login import Login, css_account

pytestmark = pytest.mark.skipif(not NODE, reason="Node.js is not installed: no Community "
                                                   "Solid Server")

WAC_CONFIG = Path(__file__).parent / "css" / "wac.json"
TTL = {"content-type": "text/turtle"}
AGENTS = ("anonymous", "alice", "bob", "carol")
ACL = ("@prefix acl: <http://www.w3.org/ns/auth/acl#>.\n"
       "@prefix foaf: <http://xmlns.com/foaf/0.1/>.\n")
OWNER = ("<#owner> a acl:Authorization; acl:agent <{alice}>;\n"
         "  acl:mode acl:Read, acl:Write, acl:Control; acl:accessTo <{target}>{default}.\n")
# path -> ACL document (relative IRIs: the same text on both servers); each
# names alice, as the pod owner's ACL documents do on CSS (on ours she is the
# owner, whom no ACL document can shut out)
DOCUMENTS = {
    "shared/.acl": ACL + OWNER.replace("{target}", "./").replace("{default}", "; acl:default <./>") + (
        "<#read> a acl:Authorization; acl:agent <{bob}>; acl:mode acl:Read;\n"
        "  acl:accessTo <./>; acl:default <./>.\n"
        "<#write> a acl:Authorization; acl:agent <{carol}>;\n"
        "  acl:mode acl:Read, acl:Write; acl:accessTo <./>; acl:default <./>.\n"),
    "shared/pub.acl": ACL + OWNER.replace("{target}", "./pub").replace("{default}", "") + ("<#public> a acl:Authorization; acl:agentClass foaf:Agent;\n"
                             "  acl:mode acl:Read; acl:accessTo <./pub>.\n"),
    "inbox/.acl": ACL + OWNER.replace("{target}", "./").replace("{default}", "; acl:default <./>") + ("<#append> a acl:Authorization; acl:agentClass acl:AuthenticatedAgent;"
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
    ("*", "status 204 for 205"): HTTP_204,
}

Send = Callable[[str, str, str, dict[str, str], str], httpx.Response]


@pytest.fixture(scope="module")
def css_wac() -> Iterator[str]:
    with css_server(WAC_CONFIG, host="localhost") as base:
        yield base


def _named(text: str, webids: dict[str, str]) -> str:
    """``text`` with {alice}, {bob}, {carol} replaced by their WebIDs."""
    for who, webid in webids.items():
        text = text.replace(f"{{{who}}}", webid)
    return text


def _sender(root: str, logins: dict[str, Login], webids: dict[str, str]) -> Send:
    """Requests to the storage at ``root``, as the logged-in agents."""
    client = httpx.Client(timeout=60)

    def send(who: str, method: str, path: str, headers: dict[str, str],
             body: str) -> httpx.Response:
        return client.request(method, root + path, headers=headers,
                              content=_named(body, webids), auth=logins.get(who))
    return send


def _set_up(send: Send) -> None:
    """Alice's resources, then the ACL documents (each pod's root ACL is
    its owner's: CSS's pod template, our default)."""
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
        css_wac: str, podviews_oidc: str) -> None:
    accounts = {who: css_account(css_wac, who) for who in AGENTS[1:]}
    webids = {who: a.webid for who, a in accounts.items()}
    logins = {who: Login(css_wac, a) for who, a in accounts.items()}
    with httpx.Client(base_url=podviews_oidc, timeout=60,
                      headers={"authorization": f"Bearer {ADMIN}"}) as admin:
        assert admin.post("/admin/agents", json={"webid": webids["alice"], "role": "owner"}
                          ).status_code == 201
        r = admin.post("/admin/pods", json={"name": "wac", "owner": webids["alice"]})
        assert r.status_code == 201, r.text
    ours_send = _sender(r.json()["url"], logins, webids)
    theirs_send = _sender(f"{css_wac}alice/", logins, webids)
    _set_up(theirs_send)
    _set_up(ours_send)
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

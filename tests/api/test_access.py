"""The access matrix: every endpoint × every kind of caller gives the
expected status — 401 without a token, 403 for a known caller without the
right, 404 where the answer would reveal that a pod or view exists."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.api.api_helpers import TURTLE, World, world
from tests.conftest import scratch_database

WHO = ("anonymous", "other_owner", "other_consumer", "owner", "consumer", "admin")
N3 = ("@prefix solid: <http://www.w3.org/ns/solid/terms#>.\n"
      "_:p a solid:InsertDeletePatch; solid:inserts { <#a> <#b> <#c> }.")


def _resource(w: World, path: str) -> None:
    r = w.client.put(f"/pods/alice/{path}", content="<#a> <#b> 1 .",
                     headers={**TURTLE, **w.as_("owner")})
    assert r.status_code in (201, 204)


def _view(w: World) -> str:
    r = w.client.post("/views", json={"name": "v", "query": "SELECT * { ?s ?p ?o }"},
                      headers=w.as_("consumer"))
    assert r.status_code == 201
    return r.headers["location"]


def _consent(w: World) -> int:
    r = w.client.post("/admin/consents", json={"pod": "alice", "consumer": w.webids["consumer"]},
                      headers=w.as_("admin"))
    assert r.status_code == 201
    return int(r.json()["id"])


# endpoint: (request for caller i, expected statuses in the order of WHO)
Request = Callable[[World, str, int], object]
CASES: dict[str, tuple[Request, tuple[int, ...]]] = {
    "POST /admin/agents": (lambda w, h, i: w.client.post(
        "/admin/agents", json={"webid": f"urn:new:{i}", "role": "owner"}, headers=h),
        (401, 403, 403, 403, 403, 201)),
    "POST /admin/pods": (lambda w, h, i: w.client.post(
        "/admin/pods", json={"name": f"new-{i}", "owner": w.webids["owner"]}, headers=h),
        (401, 403, 403, 403, 403, 201)),
    "GET /admin/consents": (lambda w, h, i: w.client.get("/admin/consents", headers=h),
                            (401, 200, 403, 200, 403, 200)),
    "POST /admin/consents": (lambda w, h, i: w.client.post(
        "/admin/consents", json={"pod": "alice", "consumer": w.webids["consumer"]}, headers=h),
        (401, 404, 403, 201, 403, 201)),
    "DELETE /admin/consents/{id}": (lambda w, h, i: w.client.delete(
        f"/admin/consents/{_consent(w)}", headers=h), (401, 404, 403, 204, 403, 204)),
    "GET /pods/{pod}/{path}": (lambda w, h, i: w.client.get("/pods/alice/doc", headers=h),
                               (401, 404, 404, 200, 404, 200)),
    "HEAD /pods/{pod}/{path}": (lambda w, h, i: w.client.head("/pods/alice/doc", headers=h),
                                (401, 404, 404, 200, 404, 200)),
    "GET /pods/{pod}/": (lambda w, h, i: w.client.get("/pods/alice/", headers=h),
                         (401, 404, 404, 200, 404, 200)),
    "OPTIONS /pods/{pod}/{path}": (lambda w, h, i: w.client.options("/pods/alice/doc",
                                                                    headers=h),
                                   (204, 204, 204, 204, 204, 204)),
    "GET /pods/{pod}/.well-known/solid": (lambda w, h, i: w.client.get(
        "/pods/alice/.well-known/solid", headers=h), (401, 404, 404, 200, 404, 200)),
    "PUT /pods/{pod}/{path}": (lambda w, h, i: w.client.put(
        "/pods/alice/doc", content="<#a> <#b> 2 .", headers={**TURTLE, **h}),
        (401, 404, 404, 204, 404, 204)),
    "PATCH /pods/{pod}/{path}": (lambda w, h, i: w.client.patch(
        "/pods/alice/doc", content=N3, headers={"content-type": "text/n3", **h}),
        (401, 404, 404, 204, 404, 204)),
    "POST /pods/{pod}/": (lambda w, h, i: w.client.post(
        "/pods/alice/", content="<#a> <#b> 3 .", headers={**TURTLE, **h}),
        (401, 404, 404, 201, 404, 201)),
    "DELETE /pods/{pod}/{path}": (lambda w, h, i: (_resource(w, f"del{i}"), w.client.delete(
        f"/pods/alice/del{i}", headers=h))[1], (401, 404, 404, 204, 404, 204)),
    "POST /views": (lambda w, h, i: w.client.post(
        "/views", json={"name": "x", "query": "SELECT * { ?s ?p ?o }"}, headers=h),
        (401, 403, 201, 403, 201, 403)),
    "GET /views": (lambda w, h, i: w.client.get("/views", headers=h),
                   (401, 403, 200, 403, 200, 403)),
    "GET /views/{id}": (lambda w, h, i: w.client.get(w.view, headers=h),  # type: ignore[attr-defined]
                        (401, 404, 404, 404, 200, 200)),
    "GET /views/{id}/results": (lambda w, h, i: w.client.get(
        f"{w.view}/results", headers=h), (401, 404, 404, 404, 200, 200)),  # type: ignore[attr-defined]
    "DELETE /views/{id}": (lambda w, h, i: w.client.delete(_view(w), headers=h),
                           (401, 404, 404, 404, 204, 204)),
    "GET /healthz": (lambda w, h, i: w.client.get("/healthz", headers=h),
                     (200, 200, 200, 200, 200, 200)),
    "GET /.well-known/solid": (lambda w, h, i: w.client.get("/.well-known/solid", headers=h),
                               (200, 200, 200, 200, 200, 200)),
    # a subscription is a read of the results (design note 91)
    "POST /notifications/WebSocketChannel2023/": (lambda w, h, i: (_ready(w), w.client.post(
        "/notifications/WebSocketChannel2023/", headers={"content-type": "application/ld+json", **h},
        json={"type": "WebSocketChannel2023", "topic": f"http://pods.test{w.view}/results"}))[1],  # type: ignore[attr-defined]
        (401, 404, 404, 404, 200, 200)),
}


def _ready(w: World) -> None:
    r = w.client.get(f"{w.view}/results", params={"min_seq": 1}, headers=w.as_("admin"))  # type: ignore[attr-defined]
    assert r.status_code == 200, r.text


@pytest.fixture(scope="module")
def w(pg_server: str, migrated_template: str):  # type: ignore[no-untyped-def]
    with scratch_database(pg_server, "pv_access", template=migrated_template) as url, \
            world(url) as w:
        _resource(w, "doc")
        w.view = _view(w)  # type: ignore[attr-defined]
        yield w


@pytest.mark.parametrize("endpoint", list(CASES))
def test_access(w: World, endpoint: str) -> None:
    _expect(w, *CASES[endpoint])


def _expect(w: World, request: Request, expected: tuple[int, ...]) -> None:
    """Each kind of caller, in the order of WHO, gets its expected status."""
    got = tuple(request(w, {} if who == "anonymous" else w.as_(who), i).status_code  # type: ignore[attr-defined]
                for i, who in enumerate(WHO))
    assert dict(zip(WHO, got, strict=True)) == dict(zip(WHO, expected, strict=True))


# Web Access Control: pod alice's ACL documents grant the consumer Read on
# shared/, the other consumer Read and Write there, everyone Read on
# shared/pub (its own ACL, which replaces what shared/ grants), any
# logged-in agent Append on inbox/; the rest stays the owner's (no ACL).
ACL = ("@prefix acl: <http://www.w3.org/ns/auth/acl#>.\n"
       "@prefix foaf: <http://xmlns.com/foaf/0.1/>.\n")
SHARED_ACL = ACL + (
    "<#read> a acl:Authorization; acl:agent <{consumer}>; acl:mode acl:Read;\n"
    "  acl:accessTo <./>; acl:default <./>.\n"
    "<#write> a acl:Authorization; acl:agent <{other_consumer}>;\n"
    "  acl:mode acl:Read, acl:Write; acl:accessTo <./>; acl:default <./>.\n")
PUB_ACL = ACL + ("<#public> a acl:Authorization; acl:agentClass foaf:Agent; acl:mode acl:Read;\n"
                 "  acl:accessTo <./pub>.\n")
INBOX_ACL = ACL + ("<#append> a acl:Authorization; acl:agentClass acl:AuthenticatedAgent;\n"
                   "  acl:mode acl:Append; acl:accessTo <./>; acl:default <./>.\n")


def _shared(w: World) -> None:
    for path in ("shared/doc", "shared/pub", "inbox/x", "private"):
        _resource(w, path)
    for path, doc in (("shared/.acl", SHARED_ACL), ("shared/pub.acl", PUB_ACL),
                      ("inbox/.acl", INBOX_ACL)):
        r = w.client.put(f"/pods/alice/{path}", content=doc.format(**w.webids),
                         headers={**TURTLE, **w.as_("owner")})
        assert r.status_code == 201, r.text


ACL_CASES: dict[str, tuple[Request, tuple[int, ...]]] = {
    "GET a shared document": (lambda w, h, i: w.client.get(
        "/pods/alice/shared/doc", headers=h), (401, 404, 200, 200, 200, 200)),
    "PUT a shared document": (lambda w, h, i: w.client.put(
        "/pods/alice/shared/doc", content="<#a> <#b> 2 .", headers={**TURTLE, **h}),
        (401, 404, 204, 204, 403, 204)),
    "PUT a new document (Append on it and its container)": (lambda w, h, i: w.client.put(
        f"/pods/alice/shared/new{i}", content="<#a> <#b> 2 .", headers={**TURTLE, **h}),
        (401, 404, 201, 201, 403, 201)),
    "PATCH a shared document": (lambda w, h, i: w.client.patch(
        "/pods/alice/shared/doc", content=N3, headers={"content-type": "text/n3", **h}),
        (401, 404, 204, 204, 403, 204)),
    "DELETE (Write on it and its container)": (lambda w, h, i: (
        _resource(w, f"shared/del{i}"),
        w.client.delete(f"/pods/alice/shared/del{i}", headers=h))[1],
        (401, 404, 204, 204, 403, 204)),
    "GET a public document": (lambda w, h, i: w.client.get(
        "/pods/alice/shared/pub", headers=h), (200, 200, 200, 200, 200, 200)),
    "PUT a public document (its own ACL replaces the container's)": (
        lambda w, h, i: w.client.put("/pods/alice/shared/pub", content="<#a> <#b> 2 .",
                                     headers={**TURTLE, **h}),
        (401, 403, 403, 204, 403, 204)),
    "POST to an inbox (Append for any logged-in agent)": (lambda w, h, i: w.client.post(
        "/pods/alice/inbox/", content="<#a> <#b> 3 .", headers={**TURTLE, **h}),
        (401, 201, 201, 201, 201, 201)),
    "GET an inbox (Append is no Read)": (lambda w, h, i: w.client.get(
        "/pods/alice/inbox/", headers=h), (401, 403, 403, 200, 403, 200)),
    "GET an ACL document (Control)": (lambda w, h, i: w.client.get(
        "/pods/alice/shared/.acl", headers=h), (401, 404, 403, 200, 403, 200)),
    "PUT an ACL document (Control)": (lambda w, h, i: w.client.put(
        "/pods/alice/shared/.acl", content=SHARED_ACL.format(**w.webids),
        headers={**TURTLE, **h}), (401, 404, 403, 204, 403, 204)),
    "GET outside any ACL (the owner's)": (lambda w, h, i: w.client.get(
        "/pods/alice/private", headers=h), (401, 404, 404, 200, 404, 200)),
}


@pytest.fixture(scope="module")
def shared(w: World) -> World:
    _shared(w)
    return w


@pytest.mark.parametrize("case", list(ACL_CASES))
def test_acl_access(shared: World, case: str) -> None:
    """The matrix for agents whom ACL documents grant access (the consumer:
    Read; the other consumer: Read, Write; the other owner: nothing but
    what the public and logged-in agents get)."""
    _expect(shared, *ACL_CASES[case])

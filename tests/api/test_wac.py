"""Web Access Control beyond the access matrix: WAC-Allow, acl:origin,
acl:default inheritance up the tree, decisions invalidated by ACL writes,
an ACL document's life (read back, PATCH, conditional writes, deleted with
its resource) and the owner's Control, which no ACL takes away."""

from __future__ import annotations

import zlib
from collections.abc import Iterator

import pytest

from tests.api.api_helpers import TURTLE, World, world
from tests.conftest import scratch_database

ACL = ("@prefix acl: <http://www.w3.org/ns/auth/acl#>.\n"
       "@prefix foaf: <http://xmlns.com/foaf/0.1/>.\n")


@pytest.fixture(scope="module")
def w(pg_server: str, migrated_template: str) -> Iterator[World]:
    with scratch_database(pg_server, "pv_wac", template=migrated_template) as url, \
            world(url) as w:
        yield w


def _put(w: World, path: str, body: str, who: str = "owner") -> int:
    return w.client.put(f"/pods/alice/{path}", content=body,
                        headers={**TURTLE, **w.as_(who)}).status_code


def test_wac_allow_names_the_callers_and_the_publics_modes(w: World) -> None:
    assert _put(w, "a/doc", "<#a> <#b> 1 .") == 201
    assert _put(w, "a/.acl", ACL + (
        "<#r> a acl:Authorization; acl:agentClass foaf:Agent; acl:mode acl:Read;"
        " acl:default <./>.\n"
        f"<#w> a acl:Authorization; acl:agent <{w.webids['consumer']}>;"
        " acl:mode acl:Write; acl:default <./>.\n")) == 201
    r = w.client.get("/pods/alice/a/doc", headers=w.as_("consumer"))
    assert r.headers["wac-allow"] == 'user="read write append",public="read"'
    r = w.client.get("/pods/alice/a/doc")
    assert r.headers["wac-allow"] == 'user="read",public="read"'
    r = w.client.get("/pods/alice/a/doc", headers=w.as_("owner"))
    assert r.headers["wac-allow"] == 'user="read write append control",public="read"'
    # acl:default only: a/ itself is not covered by its own ACL's defaults
    assert w.client.get("/pods/alice/a/").status_code == 401


def test_defaults_are_inherited_from_the_nearest_acl_up_the_tree(w: World) -> None:
    assert _put(w, "b/c/d/doc", "<#a> <#b> 1 .") == 201
    assert _put(w, "b/.acl", ACL + "<#r> a acl:Authorization; acl:agentClass foaf:Agent;"
                " acl:mode acl:Read; acl:default <./>.\n") == 201
    assert w.client.get("/pods/alice/b/c/d/doc").status_code == 200
    # a nearer ACL document replaces it, whatever it grants
    assert _put(w, "b/c/.acl", ACL + f"<#r> a acl:Authorization; acl:agent "
                f"<{w.webids['consumer']}>; acl:mode acl:Read; acl:default <./>.\n") == 201
    assert w.client.get("/pods/alice/b/c/d/doc").status_code == 401  # the cache is invalidated
    assert w.client.get("/pods/alice/b/c/d/doc", headers=w.as_("consumer")).status_code == 200
    assert w.client.delete("/pods/alice/b/c/.acl", headers=w.as_("owner")).status_code == 204
    assert w.client.get("/pods/alice/b/c/d/doc").status_code == 200
    assert w.client.get("/pods/alice/b/c/d/doc", headers=w.as_("consumer")).status_code == 200


def test_acl_origin_restricts_requests_from_browsers(w: World) -> None:
    assert _put(w, "app", "<#a> <#b> 1 .") == 201
    assert _put(w, "app.acl", ACL + f"<#r> a acl:Authorization; acl:agent "
                f"<{w.webids['consumer']}>; acl:origin <https://app.test>; acl:mode acl:Read;"
                " acl:accessTo <./app>.\n") == 201
    h = w.as_("consumer")
    assert w.client.get("/pods/alice/app", headers=h).status_code == 200
    assert w.client.get("/pods/alice/app", headers={**h, "origin": "https://app.test"}
                        ).status_code == 200
    assert w.client.get("/pods/alice/app", headers={**h, "origin": "https://evil.test"}
                        ).status_code == 404


def test_an_acl_documents_life(w: World) -> None:
    assert _put(w, "life", "<#a> <#b> 1 .") == 201
    assert w.client.get("/pods/alice/life.acl", headers=w.as_("owner")).status_code == 404
    assert w.client.put("/pods/alice/life.acl", content=b"x", headers={
        "content-type": "text/plain", **w.as_("owner")}).status_code == 415
    assert _put(w, "life.acl", "not turtle {") == 400
    assert _put(w, "life.acl", ACL + "<#p> a acl:Authorization; acl:agentClass foaf:Agent;"
                " acl:mode acl:Read; acl:accessTo <./life>.\n") == 201
    r = w.client.get("/pods/alice/life.acl", headers={**w.as_("owner"),
                                                       "accept": "application/n-triples"})
    assert r.status_code == 200
    assert "<http://pods.test/pods/alice/life>" in r.text  # relative IRIs resolved
    etag = r.headers["etag"]
    assert w.client.put("/pods/alice/life.acl", content="", headers={
        **TURTLE, **w.as_("owner"), "if-match": '"stale"'}).status_code == 412
    assert w.client.get("/pods/alice/life").status_code == 200
    patch = ("@prefix solid: <http://www.w3.org/ns/solid/terms#>.\n"
             "@prefix acl: <http://www.w3.org/ns/auth/acl#>.\n"
             "_:p a solid:InsertDeletePatch; solid:deletes { <#p> acl:mode acl:Read }.")
    assert w.client.patch("/pods/alice/life.acl", content=patch, headers={
        "content-type": "text/n3", "if-match": etag, **w.as_("owner")}).status_code == 204
    assert w.client.get("/pods/alice/life").status_code == 401
    # the ACL document goes with its resource: a new one of that name starts private
    assert _put(w, "life.acl", ACL + "<#p> a acl:Authorization; acl:agentClass foaf:Agent;"
                " acl:mode acl:Read; acl:accessTo <./life>.\n") == 204
    assert w.client.delete("/pods/alice/life", headers=w.as_("owner")).status_code == 204
    assert _put(w, "life", "<#a> <#b> 2 .") == 201
    assert w.client.get("/pods/alice/life").status_code == 401


def test_the_owner_keeps_control_and_others_gain_it_only_by_acl(w: World) -> None:
    assert _put(w, ".acl", ACL + "<#p> a acl:Authorization; acl:agentClass foaf:Agent;"
                " acl:mode acl:Read; acl:accessTo <./>.\n") == 201
    assert w.client.get("/pods/alice/.acl", headers=w.as_("owner")).status_code == 200
    assert w.client.get("/pods/alice/.acl").status_code == 401
    assert _put(w, ".acl", "", "consumer") == 403
    assert _put(w, "ctl/.acl", ACL + f"<#c> a acl:Authorization; acl:agent "
                f"<{w.webids['consumer']}>; acl:mode acl:Control; acl:accessTo <./>.\n") == 201
    # Control lets the consumer rewrite the ACL document, and so grant itself Read
    assert _put(w, "ctl/.acl", ACL + f"<#c> a acl:Authorization; acl:agent "
                f"<{w.webids['consumer']}>; acl:mode acl:Control, acl:Read;"
                " acl:accessTo <./>.\n", "consumer") == 204
    assert w.client.get("/pods/alice/ctl/", headers=w.as_("consumer")).status_code == 404  # no container yet
    assert w.client.get("/pods/alice/ctl/.acl", headers=w.as_("consumer")).status_code == 200
    assert w.client.get("/pods/alice/ctl/.acl", headers=w.as_("other_consumer")).status_code \
        == 404


def test_every_answer_to_a_write_says_wac_allow(w: World) -> None:
    h = {**TURTLE, **w.as_("owner")}
    owner = 'user="read write append control",public=""'
    for r in (w.client.put("/pods/alice/said/doc", content="<#a> <#b> 1 .", headers=h),
              w.client.post("/pods/alice/said/", content="<#a> <#b> 1 .", headers=h),
              w.client.patch("/pods/alice/said/doc", headers={**h, "content-type": "text/n3"},
                             content="@prefix solid: <http://www.w3.org/ns/solid/terms#>.\n"
                                     "_:p a solid:InsertDeletePatch; solid:inserts { <#a> <#b> 2 }."),
              w.client.put("/pods/alice/said/doc.acl", content="", headers=h),
              w.client.delete("/pods/alice/said/doc.acl", headers=w.as_("owner")),
              w.client.delete("/pods/alice/said/doc", headers=w.as_("owner"))):
        assert r.status_code in (201, 204), r.text
        assert r.headers["wac-allow"] == owner, (r.request.method, r.headers)


def test_a_description_is_guarded_as_the_file_it_describes(w: World) -> None:
    r = w.client.put("/pods/alice/pics/p.png", content=b"png", headers={
        "content-type": "image/png", **w.as_("owner")})
    assert r.status_code == 201
    assert _put(w, "pics/p.png.acl", ACL + f"<#r> a acl:Authorization; acl:agent "
                f"<{w.webids['consumer']}>; acl:mode acl:Read; acl:accessTo <./p.png>.\n") == 201
    h = w.as_("consumer")
    assert w.client.get("/pods/alice/pics/p.png.meta", headers=h).status_code == 200
    patch = ("@prefix solid: <http://www.w3.org/ns/solid/terms#>.\n"
             "_:p a solid:InsertDeletePatch; solid:inserts { <p.png> <#b> 2 }.")
    assert w.client.patch("/pods/alice/pics/p.png.meta", content=patch,
                          headers={"content-type": "text/n3", **h}).status_code == 403
    assert w.client.get("/pods/alice/pics/p.png.meta").status_code == 401


@pytest.mark.parametrize(("grant", "body", "status"), [
    # Solid Protocol §5.3.1: insertions need Append, a WHERE Read, deletions Read and Write
    ("acl:Append", "INSERT DATA { <#x> <#y> 2 }", 204),
    ("acl:Append", "DELETE DATA { <#a> <#b> 1 }", 403),
    ("acl:Append", "DELETE { ?s <#b> 1 } WHERE { ?s <#b> 1 }", 403),
    ("acl:Read, acl:Append", "INSERT { ?s <#c> 3 } WHERE { ?s <#b> 1 }", 204),
    ("acl:Write", "DELETE DATA { <#a> <#b> 1 }", 403),
    ("acl:Read, acl:Write", "DELETE DATA { <#a> <#b> 1 }", 204),
])
def test_a_patch_needs_the_modes_of_what_it_does(w: World, grant: str, body: str,
                                                 status: int) -> None:
    name = f"m{zlib.crc32((grant + body).encode())}"
    assert _put(w, f"{name}/doc", "<#a> <#b> 1 .") == 201
    assert _put(w, f"{name}/.acl", ACL + (
        f"<#g> a acl:Authorization; acl:agent <{w.webids['consumer']}>;"
        f" acl:mode {grant}; acl:default <./>.\n")) == 201
    r = w.client.patch(f"/pods/alice/{name}/doc", content=body, headers={
        "content-type": "application/sparql-update", **w.as_("consumer")})
    assert r.status_code == status, r.text
    n3 = ("@prefix solid: <http://www.w3.org/ns/solid/terms#>.\n"
          "_:p a solid:InsertDeletePatch; solid:inserts { <#n> <#m> 4 }.")
    r = w.client.patch(f"/pods/alice/{name}/doc", content=n3, headers={
        "content-type": "text/n3", **w.as_("consumer")})
    assert r.status_code == 204, r.text  # every grant above holds Append (Write includes it)

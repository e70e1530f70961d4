"""Solid-OIDC login against a local issuer (keys generated here, its JWKS
and the WebID profiles served on loopback): a DPoP-bound access token logs a
WebID in — as the registered agent of that WebID when there is one (the same
agent as its bearer token), else as the WebID alone, whom ACLs may grant —
and every attack is 401 with a WWW-Authenticate naming the problem."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from joserfc.jwk import ECKey

from server.api.fetch import FetchError, fetch
from server.app import create_app
from storage import proofs
from storage.proofs import Proofs
from tests.api.api_helpers import TURTLE, World, world
from tests.api.oidc_issuer import Issuer, ath, issuer, proof, unsigned
from tests.conftest import scratch_database

DOC = "http://pods.test/pods/alice/doc"


@pytest.fixture(scope="module")
def oidc(pg_server: str, migrated_template: str) -> Iterator[tuple[World, Issuer]]:
    with issuer() as it, scratch_database(pg_server, "pv_oidc", template=migrated_template) \
            as url, world(url, oidc_fetch_private=True,
                          oidc_trusted_issuers=[f"{it.base}/trusted/"]) as w:
        r = w.client.put("/pods/alice/doc", content="<#a> <#b> 1 .",
                         headers={**TURTLE, **w.as_("owner")})
        assert r.status_code == 201
        yield w, it


def _login(token: str, proof_: str) -> dict[str, str]:
    return {"authorization": f"DPoP {token}", "dpop": proof_}


def _get(w: World, headers: dict[str, str], path: str = "/pods/alice/doc"):  # type: ignore[no-untyped-def]
    return w.client.get(path, headers=headers)


def test_the_owners_webid_logs_in_as_the_owner(oidc: tuple[World, Issuer]) -> None:
    w, it = oidc
    webid = w.webids["owner"]
    key = ECKey.generate_key("P-256")
    # the owner's WebID (https://owner.test/#me) has no profile here: its
    # issuer is trusted by configuration
    token = it.token(webid, key, iss=f"{it.base}/trusted/")
    it.served["/trusted/.well-known/openid-configuration"] = it.served[
        "/issuer/.well-known/openid-configuration"]
    r = _get(w, _login(token, proof(key, "GET", DOC, ath=ath(token))))
    assert r.status_code == 200, r.headers
    assert r.headers["wac-allow"].startswith('user="read write append control"')


def test_a_webid_logs_in_and_gets_what_acls_grant(oidc: tuple[World, Issuer]) -> None:
    w, it = oidc
    webid = it.profile("reader", it.iss)
    key = ECKey.generate_key("P-256")
    token = it.token(webid, key)
    r = _get(w, _login(token, proof(key, "GET", DOC)))
    assert r.status_code == 404  # logged in, granted nothing
    acl = ("@prefix acl: <http://www.w3.org/ns/auth/acl#>.\n"
           f"<#r> a acl:Authorization; acl:agent <{webid}>; acl:mode acl:Read;"
           " acl:accessTo <./doc>.\n")
    assert w.client.put("/pods/alice/doc.acl", content=acl,
                        headers={**TURTLE, **w.as_("owner")}).status_code == 201
    r = _get(w, _login(token, proof(key, "GET", DOC)))
    assert r.status_code == 200
    assert r.headers["wac-allow"] == 'user="read",public=""'
    r = w.client.put("/pods/alice/doc", content="<#a> <#b> 2 .", headers={
        **TURTLE, **_login(token, proof(key, "PUT", DOC))})
    assert r.status_code == 403


def _refused(w: World, headers: dict[str, str], problem: str) -> None:
    r = _get(w, headers)
    assert r.status_code == 401, r.text
    said = r.headers["www-authenticate"]
    assert said.startswith("DPoP ") and problem in said, said


def test_attacks_are_refused_naming_the_problem(oidc: tuple[World, Issuer]) -> None:
    w, it = oidc
    webid = it.profile("victim", it.iss)
    key, other = ECKey.generate_key("P-256"), ECKey.generate_key("P-256")
    good = it.token(webid, key)
    _refused(w, _login(it.token(webid, key, exp=time.time() - 10), proof(key, "GET", DOC)),
             "expired")
    _refused(w, _login(good, proof(key, "GET", "http://pods.test/pods/alice/other")), "htu")
    _refused(w, _login(good, proof(key, "PUT", DOC)), "htm")
    _refused(w, _login(good, proof(key, "GET", DOC, iat=int(time.time()) - 3600)), "iat")
    _refused(w, _login(good, proof(key, "GET", DOC, ath="x")), "ath")
    once = proof(key, "GET", DOC)
    assert _get(w, _login(good, once)).status_code == 404  # valid: the victim has no grant
    _refused(w, _login(good, once), "replayed")
    _refused(w, _login(good, proof(other, "GET", DOC)), "cnf.jkt")  # a stolen token
    _refused(w, _login(it.token(webid, key, key=other), proof(key, "GET", DOC)),
             "does not verify")  # signed by a key not the issuer's
    _refused(w, _login(it.token(webid, key, aud="someone"), proof(key, "GET", DOC)), "aud")
    # an issuer nobody trusts: not configured, and no profile to name it
    nobody = f"{it.base}/nobody/profile#me"
    _refused(w, _login(it.token(nobody, key), proof(key, "GET", DOC)), "unknown issuer")
    # a profile naming another issuer than the token's
    elsewhere = it.profile("elsewhere", "https://idp.example/")
    _refused(w, _login(it.token(elsewhere, key), proof(key, "GET", DOC)),
             "names another issuer")
    # alg none, in the proof and in the token
    now = int(time.time())
    bare = unsigned({"alg": "none", "typ": "dpop+jwt", "jwk": key.as_dict(private=False)},
                    {"htm": "GET", "htu": DOC, "iat": now, "jti": "n1"})
    _refused(w, _login(good, bare), "alg none")
    token_none = unsigned({"alg": "none"}, {"iss": it.iss, "webid": webid, "aud": "solid",
                                            "exp": now + 300, "cnf": {"jkt": key.thumbprint()}})
    _refused(w, _login(token_none, proof(key, "GET", DOC)), "alg none")
    _refused(w, {"authorization": f"DPoP {good}"}, "DPoP proof header")
    # and the bearer tokens still work
    assert _get(w, w.as_("owner")).status_code == 200


def test_a_proof_used_on_one_api_process_is_refused_by_another(
        oidc: tuple[World, Issuer]) -> None:
    """Two apps over one database, as the Helm chart's two API replicas: a
    proof replayed to the other is refused as a replay, and a fresh proof
    logs in on either. Each app remembered its own proofs before."""
    w, it = oidc
    webid = it.profile("replica", it.iss)
    key = ECKey.generate_key("P-256")
    token = it.token(webid, key)
    other = create_app(w.client.app.state.engine.url.render_as_string(hide_password=False),
                       w.client.app.state.settings, workers=0)
    with TestClient(other, base_url="http://pods.test") as second:
        once = proof(key, "GET", DOC)
        assert _get(w, _login(token, once)).status_code == 404  # logged in; no grant
        r = second.get("/pods/alice/doc", headers=_login(token, once))
        assert r.status_code == 401 and "replayed" in r.headers["www-authenticate"]
        assert second.get("/pods/alice/doc", headers=_login(
            token, proof(key, "GET", DOC))).status_code == 404
        # a proof sent with a token that fails is not stored: only proofs of
        # valid logins fill the memory, so a flood of bad tokens does not
        unused = proof(key, "GET", DOC)
        _refused(w, _login(it.token(webid, key, exp=time.time() - 10), unused), "expired")
        assert second.get("/pods/alice/doc", headers=_login(token, unused)).status_code == 404


def test_a_proof_is_remembered_until_it_expires(migrated: str) -> None:
    """``storage.proofs``: a proof's first use is True, a second False while
    it lives; once expired it is forgotten (and purged)."""
    engine = sa.create_engine(migrated)
    memory = Proofs(engine)
    assert memory.first_use("k j1", 60) and not memory.first_use("k j1", 60)
    assert memory.first_use("k j2", 0.2)
    time.sleep(0.3)
    memory._purged -= proofs.PURGE_EVERY  # the next use purges what expired
    assert memory.first_use("k j2", 60)  # expired: a use like a first
    with engine.connect() as c:
        assert c.execute(sa.text("SELECT count(*) FROM dpop_proofs WHERE expires < now()")
                         ).scalar_one() == 0
    engine.dispose()


def test_profile_and_key_fetches_are_bounded() -> None:
    """Loopback and private addresses only when allowed; a size limit; no
    redirects; anything but a 200 is no answer."""
    with issuer() as it:
        it.served["/big"] = ("text/turtle", b"#" * 5000)
        url = f"{it.base}/issuer/jwks"
        with pytest.raises(FetchError, match="no public address"):
            fetch(url, "application/json", 5, 1000)
        assert fetch(url, "application/json", 5, 1000, allow_private=True)[0] \
            == "application/json"
        with pytest.raises(FetchError, match="larger than"):
            fetch(f"{it.base}/big", "text/turtle", 5, 1000, allow_private=True)
        with pytest.raises(FetchError, match="answered 404"):
            fetch(f"{it.base}/none", "text/turtle", 5, 1000, allow_private=True)
        with pytest.raises(FetchError, match="not an http"):
            fetch("file:///etc/passwd", "text/turtle", 5, 1000, allow_private=True)


def test_a_request_without_credentials_is_offered_both_schemes(
        oidc: tuple[World, Issuer]) -> None:
    w, _ = oidc
    r = _get(w, {})
    assert r.status_code == 401
    challenges = r.headers["www-authenticate"]
    assert "Bearer " in challenges and "DPoP " in challenges, challenges

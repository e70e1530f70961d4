"""Solid-OIDC logins through a Community Solid Server 7 (the identity
provider), for tests written in Python: an account with a pod and WebID and
client credentials (CSS's account API), the DPoP-bound access token those
credentials get (client credentials grant, RFC 9449 proof), and an
``httpx.Auth`` that sends it with a fresh proof per request — so the same
logged-in agent can call any Solid server."""

from __future__ import annotations

import time
import uuid
from collections.abc import Generator
from dataclasses import dataclass, field

import httpx
from joserfc import jwt
from joserfc.jwk import ECKey

from tests.api.oidc_issuer import ath


@dataclass(frozen=True)
class Account:
    webid: str
    client_id: str
    secret: str


def css_account(base: str, name: str) -> Account:
    """An account on the CSS at ``base`` with a pod ``name`` (its WebID)
    and client credentials."""
    with httpx.Client(timeout=60) as c:
        r = c.post(f"{base}.account/account/", json={})
        assert r.status_code == 200, r.text
        auth = {"authorization": f"CSS-Account-Token {r.json()['authorization']}"}
        controls = c.get(f"{base}.account/", headers=auth).json()["controls"]
        r = c.post(controls["password"]["create"], headers=auth,
                   json={"email": f"{name}@example.test", "password": f"password-{name}"})
        assert r.status_code == 200, r.text
        r = c.post(controls["account"]["pod"], json={"name": name}, headers=auth)
        assert r.status_code == 200, r.text
        webid = r.json()["webId"]
        r = c.post(controls["account"]["clientCredentials"], headers=auth,
                   json={"name": f"{name}-podviews", "webId": webid})
        assert r.status_code == 200, r.text
        return Account(webid, r.json()["id"], r.json()["secret"])


def _proof(key: ECKey, method: str, url: str, token: str | None = None) -> str:
    claims = {"htm": method, "htu": url.split("?")[0].split("#")[0],
              "iat": int(time.time()), "jti": uuid.uuid4().hex}
    if token is not None:
        claims["ath"] = ath(token)
    return jwt.encode({"alg": "ES256", "typ": "dpop+jwt", "jwk": key.as_dict(private=False)},
                      claims, key)


@dataclass
class Login(httpx.Auth):
    """A DPoP-bound access token from the CSS for ``account``; as an
    ``httpx.Auth``, it signs a proof for every request it sends."""

    issuer: str
    account: Account
    key: ECKey = field(default_factory=lambda: ECKey.generate_key("P-256"))
    token: str = ""

    def __post_init__(self) -> None:
        with httpx.Client(timeout=60) as c:
            endpoint = c.get(f"{self.issuer}.well-known/openid-configuration").json()[
                "token_endpoint"]
            r = c.post(endpoint, auth=(self.account.client_id, self.account.secret),
                       data={"grant_type": "client_credentials", "scope": "webid"},
                       headers={"dpop": _proof(self.key, "POST", endpoint)})
            assert r.status_code == 200, r.text
            assert r.json()["token_type"] == "DPoP"
            self.token = r.json()["access_token"]

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["authorization"] = f"DPoP {self.token}"
        request.headers["dpop"] = _proof(self.key, request.method, str(request.url), self.token)
        yield request

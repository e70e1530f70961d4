"""A Solid-OIDC issuer for tests, on loopback: keys generated here, its
OpenID configuration, JWKS and WebID profiles served by a local HTTP server,
and the DPoP-bound access tokens and proofs a client would send (joserfc
signs them; the attacks change one thing each)."""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from joserfc import jwt
from joserfc.jwk import ECKey


@dataclass
class Issuer:
    base: str  # the loopback server's root
    key: ECKey = field(default_factory=lambda: ECKey.generate_key("P-256"))
    served: dict[str, tuple[str, bytes]] = field(default_factory=dict)

    @property
    def iss(self) -> str:
        return f"{self.base}/issuer/"

    def profile(self, name: str, *issuers: str) -> str:
        """A WebID whose profile names ``issuers`` (none: no profile at all)."""
        webid = f"{self.base}/{name}/profile#me"
        if issuers:
            names = ", ".join(f"<{i}>" for i in issuers)
            self.served[f"/{name}/profile"] = ("text/turtle", (
                f"<#me> a <http://xmlns.com/foaf/0.1/Person>;\n"
                f"  <http://www.w3.org/ns/solid/terms#oidcIssuer> {names} .\n").encode())
        return webid

    def token(self, webid: str, proof_key: ECKey, exp: float | None = None,
              key: ECKey | None = None, **claims: Any) -> str:
        now = int(time.time())
        payload = {"iss": self.iss, "webid": webid, "sub": webid, "aud": ["solid", "client"],
                   "iat": now, "exp": int(exp if exp is not None else now + 300),
                   "cnf": {"jkt": proof_key.thumbprint()}, "client_id": "client", **claims}
        return jwt.encode({"alg": "ES256", "typ": "at+jwt", "kid": "k1"}, payload,
                          key or self.key)


def proof(key: ECKey, method: str, url: str, **claims: Any) -> str:
    payload = {"htm": method, "htu": url, "iat": int(time.time()), "jti": uuid.uuid4().hex,
               **claims}
    return jwt.encode({"alg": "ES256", "typ": "dpop+jwt", "jwk": key.as_dict(private=False)},
                      payload, key)


def unsigned(header: dict[str, Any], payload: dict[str, Any]) -> str:
    """A JWT with ``alg: none`` — the attack, built by hand on purpose."""
    def part(x: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(x).encode()).rstrip(b"=").decode()
    return f"{part(header)}.{part(payload)}."


def ath(token: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(token.encode()).digest()).rstrip(b"=").decode()


@contextmanager
def issuer() -> Iterator[Issuer]:
    """An issuer with its configuration and keys served on loopback."""
    served: dict[str, tuple[str, bytes]] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            found = served.get(self.path)
            if found is None:
                self.send_response(404)
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("content-type", found[0])
            self.send_header("content-length", str(len(found[1])))
            self.end_headers()
            self.wfile.write(found[1])

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    it = Issuer(f"http://127.0.0.1:{server.server_address[1]}", served=served)
    served["/issuer/.well-known/openid-configuration"] = ("application/json", json.dumps(
        {"issuer": it.iss, "jwks_uri": f"{it.base}/issuer/jwks"}).encode())
    served["/issuer/jwks"] = ("application/json", json.dumps(
        {"keys": [{**it.key.as_dict(private=False), "kid": "k1", "alg": "ES256"}]}).encode())
    try:
        yield it
    finally:
        server.shutdown()
        server.server_close()

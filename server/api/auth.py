"""Who is asking: the admin (the token from settings), an agent (a bearer
token, stored hashed), a WebID logged in with Solid-OIDC (a DPoP-bound access
token, ``solid_oidc``; the registered agent of that WebID when there is one)
or nobody (``ANONYMOUS``). ``caller`` is the one place that answers it. Endpoints state what they allow; a caller
without a valid token gets 401, a known caller without the right 403, and a
caller who may not know a pod or view exists gets 404."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
from dataclasses import dataclass, replace

from fastapi import Request

from server.api.solid_oidc import InvalidToken, Verifier
from server.errors import Forbidden, Unauthorized
from storage import db, pods
from storage.proofs import Proofs


@dataclass(frozen=True)
class Principal:
    role: str  # admin | owner | consumer | webid (a Solid-OIDC login, no agent) | anonymous
    agent: int | None = None  # agents.id; None for the admin
    webid: str = "admin"
    origin: str | None = None  # the request's Origin (WAC's acl:origin)

    def is_admin(self) -> bool:
        return self.role == "admin"

    def is_anonymous(self) -> bool:
        return self.role == "anonymous"


ANONYMOUS = Principal("anonymous", None, "")
_ONE_VERIFIER = threading.Lock()
WEBID = "webid"  # the role of a Solid-OIDC login whose WebID is no registered agent


def new_token() -> tuple[str, bytes]:
    """A bearer token and the hash that is stored."""
    token = secrets.token_urlsafe(32)
    return token, token_hash(token)


def token_hash(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def principal(request: Request) -> Principal:
    """The authenticated caller (401 when there is none)."""
    who = caller(request)
    if who.is_anonymous():
        raise Unauthorized("this endpoint needs a bearer token")
    return who


def caller(request: Request) -> Principal:
    """Who sent the request (and from which ``Origin``): ``ANONYMOUS``
    without credentials, 401 for credentials that name nobody."""
    origin = request.headers.get("origin")
    who = _credentials(request)
    return who if origin is None else replace(who, origin=origin.strip().rstrip("/"))


def _credentials(request: Request) -> Principal:
    header = request.headers.get("authorization", "")
    if not header.strip():
        return ANONYMOUS
    scheme, _, token = header.partition(" ")
    if scheme.lower() == "dpop" and token.strip():
        return _solid_oidc(request, token.strip())
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("this endpoint needs a bearer token or a Solid-OIDC DPoP token")
    token = token.strip()
    if hmac.compare_digest(token.encode(), request.app.state.settings.admin_token.encode()):
        return Principal("admin")
    with db.looking_up(request.app.state.engine) as c:
        row = pods.agent_by_token(c, token_hash(token))
    if row is None:
        raise Unauthorized("unknown bearer token")
    return Principal(row.role, int(row.id), row.webid)


def _solid_oidc(request: Request, token: str) -> Principal:
    """A Solid-OIDC login: the WebID of a DPoP-bound access token
    (``solid_oidc``), as the agent registered with that WebID when there is
    one (the same agent as its bearer token), else as a WebID alone."""
    proof = request.headers.get("dpop", "")
    if not proof:
        raise InvalidToken("a DPoP access token needs a DPoP proof header", "invalid_dpop_proof")
    settings = request.app.state.settings
    with _ONE_VERIFIER:  # one per app: one cache of profiles and keys
        verifier = getattr(request.app.state, "solid_oidc", None)
        if verifier is None:
            verifier = request.app.state.solid_oidc = Verifier(
                settings, Proofs(request.app.state.engine).first_use)
    raw = request.scope.get("raw_path") or request.url.path.encode()
    url = settings.public_base + raw.decode("latin-1")  # as the client addressed it
    webid = verifier.webid(token, proof.strip(), request.method, url)
    with db.looking_up(request.app.state.engine) as c:
        row = pods.agent_by_webid(c, webid)
    if row is None:
        return Principal(WEBID, None, webid)
    return Principal(row.role, int(row.id), row.webid)


def require(who: Principal, *roles: str) -> None:
    if who.role not in roles:
        raise Forbidden(f"a {who.role} may not do this (allowed: {', '.join(roles)})")

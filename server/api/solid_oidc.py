"""Solid-OIDC: who sent a request with ``Authorization: DPoP <access token>``
and a ``DPoP`` proof (RFC 9449). The proof is a JWT signed by the key in its
own header, for this method (``htm``) and URL (``htu``), fresh (``iat``) and
used once (``jti``); the access token is a JWT its issuer signed (the keys of
its ``jwks_uri``), unexpired, for the audience ``solid``, bound to the
proof's key (``cnf.jkt``), naming the agent (``webid``). Its issuer is
trusted for that WebID when the WebID's profile names it
(``solid:oidcIssuer``) or it is configured (``oidc_trusted_issuers``).

Every refusal is ``InvalidToken`` (401) with a ``WWW-Authenticate`` naming
the problem. JOSE is joserfc's; nothing here parses or signs a JWT by hand.
Profiles' issuers and issuers' keys are fetched bounded (``fetch``) and
kept ``oidc_cache_seconds``; proofs used are remembered ``dpop_max_age``
by every API process at once (``storage.proofs``)."""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from joserfc import jws, jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet, import_key
from rdflib import URIRef

from server.api.fetch import FetchError, fetch
from server.api.ldp import rdf
from server.config import Settings
from server.errors import ServiceError, Unauthorized

ALGORITHMS = ("ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384",
              "PS512", "EdDSA")  # asymmetric only: never none, never a shared secret
OIDC_ISSUER = URIRef("http://www.w3.org/ns/solid/terms#oidcIssuer")
MAX_CACHED = 1024  # profiles' issuers, issuers' keys (each)
_CLOCK_SKEW = 5  # seconds a proof's iat may lie in the future


class InvalidToken(Unauthorized):
    """The DPoP-bound access token or its proof is not valid."""

    def __init__(self, detail: str, error: str = "invalid_token") -> None:
        super().__init__(detail)
        said = detail.replace('"', "'").replace("\\", "/")
        self.headers = {"WWW-Authenticate": f'DPoP realm="podviews", error="{error}", '
                                            f'error_description="{said}", '
                                            f'algs="{" ".join(ALGORITHMS)}"'}


def _proof_error(detail: str) -> InvalidToken:
    return InvalidToken(detail, "invalid_dpop_proof")


class _Expiring:
    """A bounded map whose entries expire."""

    def __init__(self, seconds: float, capacity: int = MAX_CACHED) -> None:
        self.seconds, self.capacity = seconds, capacity
        self._lock = threading.Lock()
        self._kept: OrderedDict[str, tuple[float, Any]] = OrderedDict()

    def get(self, key: str) -> Any:
        with self._lock:
            found = self._kept.get(key)
            if found is None or found[0] < time.monotonic():
                return None
            return found[1]

    def put(self, key: str, value: Any) -> bool:
        """Keep ``value``; False when a live entry was there already."""
        now = time.monotonic()
        with self._lock:
            old = self._kept.pop(key, None)
            self._kept[key] = (now + self.seconds, value)
            while len(self._kept) > self.capacity:
                self._kept.popitem(last=False)  # the oldest
            return old is None or old[0] < now


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _normal_url(url: str) -> str:
    """scheme://host[:port]/path, lower-cased scheme and host, no query or
    fragment, default ports dropped (RFC 9449 §4.3: htu is compared so)."""
    p = urlsplit(url)
    host = (p.hostname or "").lower()
    default = {"http": 80, "https": 443}.get(p.scheme.lower())
    netloc = host if p.port in (None, default) else f"{host}:{p.port}"
    return urlunsplit((p.scheme.lower(), netloc, p.path or "/", "", ""))


def _header(token: str, what: str) -> dict[str, Any]:
    try:
        header = jws.extract_compact(token.encode()).headers()
    except (JoseError, ValueError, UnicodeDecodeError) as e:
        raise InvalidToken(f"the {what} is no JWS: {e}") from None
    alg = header.get("alg")
    if alg not in ALGORITHMS:
        raise InvalidToken(f"the {what}'s alg {alg} is not accepted "
                           "(asymmetric algorithms only; never none)",
                           "invalid_dpop_proof" if what == "DPoP proof" else "invalid_token")
    return dict(header)


class Verifier:
    """Verifies DPoP-bound Solid-OIDC access tokens; keeps what it fetched."""

    def __init__(self, settings: Settings, first_use: Callable[[str, float], bool],
                 fetcher: Callable[[str, str], tuple[str, bytes]] | None = None) -> None:
        """``first_use(proof, seconds)`` remembers a proof (its key's
        thumbprint and jti) that long, False when it was used before
        (``storage.proofs.Proofs.first_use``)."""
        self.settings = settings
        self._first_use = first_use
        self._fetch = fetcher or (lambda url, accept: fetch(
            url, accept, settings.oidc_fetch_timeout, settings.oidc_fetch_max_bytes,
            settings.oidc_fetch_private))
        self._issuers = _Expiring(settings.oidc_cache_seconds)  # WebID -> its issuers
        self._keys = _Expiring(settings.oidc_cache_seconds)  # issuer -> KeySet

    def webid(self, token: str, proof: str, method: str, url: str) -> str:
        """The WebID that the token names, once token and proof hold."""
        jkt, jti = self._proof(proof, method, url, token)
        claims = self._token(token)
        cnf = claims.get("cnf")
        if not isinstance(cnf, dict) or cnf.get("jkt") != jkt:
            raise InvalidToken("the DPoP proof's key is not the one the access token is bound "
                               "to (cnf.jkt)")
        # remembered last: only a proof for a valid token is stored
        if not self._first_use(f"{jkt} {jti}", self.settings.dpop_max_age + _CLOCK_SKEW):
            raise _proof_error("the DPoP proof was used before (jti replayed)")
        return str(claims["webid"])

    def _proof(self, proof: str, method: str, url: str, token: str) -> tuple[str, str]:
        """The proof's key's thumbprint and its jti, once the proof holds."""
        header = _header(proof, "DPoP proof")
        if header.get("typ") != "dpop+jwt":
            raise _proof_error("the DPoP proof's typ is not dpop+jwt")
        jwk = header.get("jwk")
        if not isinstance(jwk, dict) or "d" in jwk:
            raise _proof_error("the DPoP proof carries no public jwk")
        try:
            key = import_key(jwk)  # type: ignore[arg-type]
            signed = jws.deserialize_compact(proof.encode(), key, algorithms=[header["alg"]])
            claims = json.loads(signed.payload)
        except (JoseError, ValueError, TypeError) as e:
            raise _proof_error(f"the DPoP proof's signature does not verify: {e}") from None
        if not isinstance(claims, dict):
            raise _proof_error("the DPoP proof's payload is no JSON object")
        if claims.get("htm") != method:
            raise _proof_error(f"the DPoP proof is for {claims.get('htm')}, not {method} (htm)")
        htu = claims.get("htu")
        if not isinstance(htu, str) or _normal_url(htu) != _normal_url(url):
            raise _proof_error(f"the DPoP proof is for {htu}, not {_normal_url(url)} (htu)")
        iat = claims.get("iat")
        now = time.time()
        if not isinstance(iat, int | float) or iat > now + _CLOCK_SKEW:
            raise _proof_error("the DPoP proof has no iat, or one in the future")
        if iat < now - self.settings.dpop_max_age:
            raise _proof_error(f"the DPoP proof is older than {self.settings.dpop_max_age} s "
                               "(iat)")
        ath = claims.get("ath")
        if ath is not None and ath != _b64(hashlib.sha256(token.encode()).digest()):
            raise _proof_error("the DPoP proof is for another access token (ath)")
        jti = claims.get("jti")
        if not isinstance(jti, str) or not jti:
            raise _proof_error("the DPoP proof has no jti")
        return key.thumbprint(), jti

    def _token(self, token: str) -> dict[str, Any]:
        """The access token's claims, once its issuer is trusted for its WebID
        and its signature, lifetime and audience hold."""
        _header(token, "access token")
        try:
            unverified = json.loads(jws.extract_compact(token.encode()).payload)
        except (JoseError, ValueError) as e:
            raise InvalidToken(f"the access token's payload is no JSON: {e}") from None
        iss, webid = unverified.get("iss"), unverified.get("webid")
        if not isinstance(iss, str) or not isinstance(webid, str):
            raise InvalidToken("the access token names no issuer (iss) or no WebID (webid)")
        self._trust(iss, webid)
        try:
            claims = dict(jwt.decode(token, self._keyset(iss), algorithms=ALGORITHMS).claims)
        except (JoseError, ValueError) as e:
            raise InvalidToken(f"the access token's signature does not verify with the keys of "
                               f"{iss}: {e}") from None
        now = time.time()
        exp = claims.get("exp")
        if not isinstance(exp, int | float) or exp <= now:
            raise InvalidToken("the access token has expired (exp)")
        aud = claims.get("aud")
        if "solid" not in ([aud] if isinstance(aud, str) else aud or []):
            raise InvalidToken("the access token is not for the audience solid (aud)")
        return claims

    def _trust(self, iss: str, webid: str) -> None:
        """The issuer may speak for the WebID: configured, or named by the
        WebID's profile."""
        if _same_issuer(iss, self.settings.oidc_trusted_issuers):
            return
        issuers = self._issuers.get(webid)
        if issuers is None:
            try:
                issuers = self._profile_issuers(webid)
            except FetchError as e:
                raise InvalidToken(f"unknown issuer {iss}: not trusted here, and the WebID's "
                                   f"profile could not be read ({e})") from None
            self._issuers.put(webid, issuers)
        if not _same_issuer(iss, issuers):
            raise InvalidToken(f"the WebID's profile names another issuer than {iss} "
                               "(solid:oidcIssuer)")

    def _profile_issuers(self, webid: str) -> list[str]:
        media, body = self._fetch(webid.split("#")[0], "text/turtle, application/ld+json;q=0.9")
        try:  # the bodies' parser: linear, bounded, JSON-LD contexts never fetched
            triples = rdf.parse(body, media or "text/turtle", webid.split("#")[0])
        except ServiceError as e:
            raise FetchError(f"the profile is not RDF: {e}") from None
        return [str(o) for s, p, o in triples if s == URIRef(webid) and p == OIDC_ISSUER]

    def _keyset(self, iss: str) -> KeySet:
        keys = self._keys.get(iss)
        if keys is None:
            try:
                _, config = self._fetch(iss.rstrip("/") + "/.well-known/openid-configuration",
                                        "application/json")
                jwks_uri = json.loads(config)["jwks_uri"]
                _, body = self._fetch(str(jwks_uri), "application/json")
                keys = KeySet.import_key_set(json.loads(body))
            except (FetchError, ValueError, KeyError, TypeError, JoseError) as e:
                raise InvalidToken(f"unknown issuer {iss}: its keys could not be read "
                                   f"({e})") from None
            self._keys.put(iss, keys)
        return keys  # type: ignore[no-any-return]


def _same_issuer(iss: str, issuers: list[str]) -> bool:
    return iss.rstrip("/") in {i.rstrip("/") for i in issuers}

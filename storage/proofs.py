"""DPoP proofs used (``dpop_proofs``): one memory for every API process, so
a proof replayed to another process than the one it was first sent to is
refused too (RFC 9449 §11.1: a proof is used once)."""

from __future__ import annotations

import hashlib
import threading
import time

from sqlalchemy import Engine, text

PURGE_EVERY = 60.0  # seconds between deletions of expired proofs, per process

_FIRST = text(
    "INSERT INTO dpop_proofs (digest, expires) "
    "VALUES (:d, now() + make_interval(secs => :s)) "
    "ON CONFLICT (digest) DO UPDATE SET expires = excluded.expires "
    "WHERE dpop_proofs.expires < now() RETURNING 1")


class Proofs:
    """The proofs used, in the database of ``engine``."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._purged = time.monotonic()
        self._lock = threading.Lock()

    def first_use(self, proof: str, lifetime: float) -> bool:
        """Remember ``proof`` (its key's thumbprint and jti) for ``lifetime``
        seconds; False when it was used before and has not expired. Its own
        transaction: a proof is used once it is checked, whatever becomes of
        the request."""
        digest = hashlib.sha256(proof.encode()).digest()
        with self.engine.begin() as c:
            first = c.execute(_FIRST, {"d": digest, "s": lifetime}).first() is not None
            if self._purge_due():
                c.execute(text("DELETE FROM dpop_proofs WHERE expires < now()"))
        return first

    def _purge_due(self) -> bool:
        with self._lock:
            if time.monotonic() - self._purged < PURGE_EVERY:
                return False
            self._purged = time.monotonic()
            return True

"""Terms <-> dictionary ids within one transaction (decision 2), cached both
ways: what the SQL executor's relations and input graph encode and decode
through."""

from __future__ import annotations

from collections.abc import Iterable

from rdflib.term import Identifier
from sqlalchemy import Connection

from storage import terms
from views.terms import canonical


class Codec:
    """Terms <-> ids within one transaction, cached both ways."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.ids: dict[Identifier, int] = {}
        self.terms: dict[int, Identifier] = {}

    def encode(self, items: Iterable[Identifier], add: bool) -> dict[Identifier, int]:
        """Ids of ``items``; unknown terms are added when ``add``, else left out."""
        wanted = [t for t in set(items) if t not in self.ids]
        if wanted:
            found = terms.intern(self.conn, wanted) if add else self._known(wanted)
            self.ids.update(found)
            self.terms.update({v: canonical(k) for k, v in found.items()})
        return self.ids

    def _known(self, items: list[Identifier]) -> dict[Identifier, int]:
        digests = {t: terms.digest(t) for t in items}
        by_digest = terms.lookup(self.conn, list(digests.values()))
        return {t: by_digest[d] for t, d in digests.items() if d in by_digest}

    def decode(self, ids: Iterable[int]) -> dict[int, Identifier]:
        missing = {i for i in ids if i not in self.terms}
        if missing:
            found = terms.decode(self.conn, missing)
            self.terms.update(found)
            self.ids.update({v: k for k, v in found.items()})
        return self.terms

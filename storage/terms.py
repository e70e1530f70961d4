"""The dictionary of RDF terms (decision 2): terms <-> BIGINT ids."""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import datetime

from rdflib import XSD
from rdflib.term import Identifier, Literal
from sqlalchemy import Connection, text

from storage import db
from views.compare import datetime_value
from views.terms import (
    ExprError,
    canonical,
    digest,
    fields_of,
    numeric_type,
    numeric_value,
    term_of,
)


def _row(t: Identifier) -> dict[str, object]:
    num: float | None = None
    ts: datetime | None = None
    kind, lexical, datatype, lang = fields_of(t)
    if isinstance(t, Literal):
        if numeric_type(t) is not None:
            try:
                v = float(numeric_value(t))
                num = v if math.isfinite(v) else None
            except (ExprError, OverflowError):
                num = None
        elif t.datatype == XSD.dateTime:
            try:
                ts = datetime_value(t)
                ts = ts if ts.tzinfo is not None else None
            except ExprError:
                ts = None
    return {"digest": digest(t), "kind": kind, "lexical": lexical, "datatype": datatype,
            "lang": lang, "num": num, "ts": ts}


def intern(conn: Connection, terms: Iterable[Identifier]) -> dict[Identifier, int]:
    """The ids of ``terms``, adding the new ones to the dictionary: one id per
    RDF term (decision 8), so ``"a"`` and ``"a"^^xsd:string`` get the same.

    Keyed by the terms as given: two forms of one term both map to its id."""
    given = {t: digest(t) for t in terms}
    unique = {d: canonical(t) for t, d in given.items()}
    if not unique:
        return {}
    ids = _lookup(conn, list(unique))
    missing = [unique[d] for d in unique if d not in ids]
    if missing:
        (_copy_in if len(missing) > FEW else _insert)(conn, missing)
        ids.update(_lookup(conn, [digest(t) for t in missing]))
    return {t: ids[d] for t, d in given.items()}


_COLUMNS = ("digest", "kind", "lexical", "datatype", "lang", "num", "ts")
# Up to this many new terms go in by one INSERT; more through COPY. A pod
# write's few terms took 5 statements through the temporary table (measured
# in docs/DESIGN-NOTES.md, item 21).
FEW = 256


def _insert(conn: Connection, new: list[Identifier]) -> None:
    rows = sorted((_row(t) for t in new), key=lambda r: r["digest"])  # type: ignore[arg-type,return-value]
    conn.execute(text(f"INSERT INTO terms ({', '.join(_COLUMNS)}) "
                      f"VALUES ({', '.join(':' + c for c in _COLUMNS)}) "
                      "ON CONFLICT (digest) DO NOTHING"), rows)  # one order: writers cannot deadlock


def _copy_in(conn: Connection, new: list[Identifier]) -> None:
    """COPY new terms through a temporary table (MEASURED.md: COPY of 1M rows
    1.3-1.9 s), then add them to the dictionary."""
    conn.execute(text("CREATE TEMP TABLE IF NOT EXISTS new_terms "
                      "(LIKE terms INCLUDING DEFAULTS) ON COMMIT DROP"))
    conn.execute(text("TRUNCATE new_terms"))
    with db.raw(conn).cursor().copy(f"COPY new_terms ({', '.join(_COLUMNS)}) FROM STDIN") as copy:
        for t in new:
            row = _row(t)
            copy.write_row([row[c] for c in _COLUMNS])
    conn.execute(text(f"INSERT INTO terms ({', '.join(_COLUMNS)}) "
                      f"SELECT {', '.join(_COLUMNS)} FROM new_terms ORDER BY digest "
                      "ON CONFLICT (digest) DO NOTHING"))  # one order: writers cannot deadlock


def _lookup(conn: Connection, digests: list[bytes]) -> dict[bytes, int]:
    rows = conn.execute(text("SELECT digest, id FROM terms WHERE digest = ANY(:d)"),
                        {"d": digests})
    return {bytes(r.digest): int(r.id) for r in rows}


def decode(conn: Connection, ids: Iterable[int]) -> dict[int, Identifier]:
    """The terms of ``ids``."""
    wanted = list(set(ids))
    rows = conn.execute(text("SELECT id, kind, lexical, datatype, lang FROM terms "
                             "WHERE id = ANY(:ids)"), {"ids": wanted})
    return {r.id: term_of(r.kind, r.lexical, r.datatype, r.lang) for r in rows}

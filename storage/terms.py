"""The dictionary of RDF terms (decision 2): terms <-> BIGINT ids.

Every writer interns through ``intern_fields``: terms as their dictionary
fields (``views.terms.fields_of``: canonical, decision 8), keyed by
``views.terms.digest_of`` — up to ``ARRAYED`` distinct terms looked up and
the new ones inserted as arrays, more through COPY into a staging table,
one INSERT … ON CONFLICT into the dictionary and the ids read back by a
join. ``intern`` is the same for rdflib terms, and
``TermTable`` carries a write's triples to it as positions in a list of
fields, so a bulk write never builds a Python term per triple."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from rdflib import XSD
from rdflib.term import Identifier, URIRef
from sqlalchemy import Connection, text

from storage import db, driver
from storage.arrays import bytes_literal, literal
from storage.models import INTEGER_LITERALS, NUMBER_TYPES
from views.moments import moment_of
from views.sortkey import stored_key
from views.terms import (
    INTEGER_TYPES,
    NUMERIC_RANK,
    ExprError,
    TermFields,
    digest,
    digest_of,
    double,
    fields_of,
    number_of,
    term_of,
)

Position = tuple[int, int, int]  # a triple as positions in a TermTable's terms


@dataclass(frozen=True)
class TermTable:
    """Triples as a table: each term's dictionary fields once (``terms``,
    canonical; two forms of one term may both appear) and each triple as
    three positions in it (``triples``, no two equal)."""

    terms: list[TermFields]
    triples: list[Position]

    @staticmethod
    def of(triples: Iterable[tuple[Identifier, Identifier, Identifier]]) -> TermTable:
        """The table of rdflib triples."""
        at: dict[Identifier, int] = {}
        rows = {tuple(at.setdefault(x, len(at)) for x in t) for t in triples}
        return TermTable([fields_of(t) for t in at], list(rows))  # type: ignore[arg-type]

    @staticmethod
    def taking(terms: Sequence[TermFields], triples: Iterable[Position]) -> TermTable:
        """The table of ``triples`` (positions in ``terms``), holding only
        the terms they use."""
        at: dict[int, int] = {}
        rows = [(at.setdefault(s, len(at)), at.setdefault(p, len(at)), at.setdefault(o, len(at)))
                for s, p, o in triples]
        return TermTable([terms[i] for i in at], rows)

    @staticmethod
    def of_fields(triples: Iterable[tuple[TermFields, TermFields, TermFields]]) -> TermTable:
        """The table of triples given as their terms' fields, in their order
        (a triple given twice once)."""
        at: dict[TermFields, int] = {}
        rows = dict.fromkeys(tuple(at.setdefault(f, len(at)) for f in t) for t in triples)
        return TermTable(list(at), list(rows))  # type: ignore[arg-type]

    def rows(self) -> list[tuple[TermFields, TermFields, TermFields]]:
        """Each triple as its terms' fields."""
        terms = self.terms
        return [(terms[s], terms[p], terms[o]) for s, p, o in self.triples]

    def union(self, other: TermTable) -> TermTable:
        """The triples of both tables, a triple of both once."""
        return TermTable.of_fields([*self.rows(), *other.rows()])

    def decoded(self) -> set[tuple[Identifier, Identifier, Identifier]]:
        """The triples, as rdflib terms."""
        terms = [term_of(*f) for f in self.terms]
        return {(terms[s], terms[p], terms[o]) for s, p, o in self.triples}


def intern(conn: Connection, terms: Iterable[Identifier]) -> dict[Identifier, int]:
    """The ids of ``terms``, adding the new ones to the dictionary: one id per
    RDF term (decision 8), so ``"a"`` and ``"a"^^xsd:string`` get the same.

    Keyed by the terms as given: two forms of one term both map to its id."""
    given = list(set(terms))
    return dict(zip(given, intern_fields(conn, [fields_of(t) for t in given]), strict=True))


def intern_fields(conn: Connection, fields: Sequence[TermFields]) -> list[int]:
    """The ids of the terms of ``fields`` (as ``fields_of`` gives them), in
    order, adding the new ones to the dictionary."""
    slot: dict[bytes, int] = {}
    at = [slot.setdefault(digest_of(*f), len(slot)) for f in fields]
    unique: list[TermFields] = [()] * len(slot)  # type: ignore[list-item]
    for f, i in zip(fields, at, strict=True):
        unique[i] = f
    digests = list(slot)
    if len(digests) > ARRAYED:
        ids = _staged(conn, digests, unique)
    else:
        found = lookup(conn, digests)
        missing = [i for i, d in enumerate(digests) if d not in found]
        if missing:
            found.update(_insert(conn, [dictionary_row(digests[i], unique[i]) for i in missing]))
            late = [digests[i] for i in missing if digests[i] not in found]
            if late:  # added by a concurrent writer since the lookup
                found.update(lookup(conn, late))
        ids = [found[d] for d in digests]
    return [ids[i] for i in at]


_COLUMNS = ("digest", "kind", "lexical", "datatype", "lang", "num", "ts", "sortkey")
_TYPES = ("bytea", "smallint", "text", "text", "varchar", "float8", "timestamptz", "bytea")
# Up to this many distinct terms are looked up by one statement and the new
# ones inserted by another, as arrays; more go through COPY into a staging
# table made for the write. A pod write's few terms took 5 statements
# through the staging table (docs/DESIGN-NOTES.md, item 21); a staging table
# kept by the session and emptied at commit made every later commit of the
# session that touched a temporary table (every job's) truncate it (note 157)
ARRAYED = 10_000
_INSERT = text(f"INSERT INTO terms ({', '.join(_COLUMNS)}) SELECT * FROM unnest("
               + ", ".join(f"CAST(:{c} AS {t}[])" for c, t in zip(_COLUMNS, _TYPES, strict=True))
               + f") AS new ({', '.join(_COLUMNS)}) ORDER BY digest ON CONFLICT (digest) DO NOTHING RETURNING digest, id")
_DATETIME = str(XSD.dateTime)
_VALUED = {str(t) for t in (*INTEGER_TYPES, *NUMERIC_RANK, XSD.dateTime)}


def dictionary_row(key: bytes, f: TermFields) -> tuple[object, ...]:
    """The dictionary row of a term: its fields, for a number or a
    timezoned xsd:dateTime its value (for filters), and a typed literal's
    sort key."""
    kind, lexical, datatype, lang = f
    num: float | None = None
    ts: datetime | None = None
    if kind == 2 and datatype in _VALUED:
        if datatype == _DATETIME:
            try:
                ts = moment_of(lexical).timestamp()
            except ExprError:
                ts = None
        else:
            try:
                v = double(number_of(lexical, URIRef(datatype)))
                num = v if math.isfinite(v) else None
            except ExprError:
                num = None
    return key, kind, lexical, datatype, lang, num, ts, stored_key(*f)


def _insert(conn: Connection, rows: list[tuple[object, ...]]) -> dict[bytes, int]:
    """The rows added to the dictionary in digest order (writers cannot
    deadlock): the ids of those it did not hold (a row another writer added
    since is left out)."""
    columns = list(zip(*rows, strict=True))
    added = conn.execute(_INSERT, dict(zip(_COLUMNS, map(list, columns), strict=True)))
    return {bytes(r.digest): int(r.id) for r in added}


def _staged(conn: Connection, digests: list[bytes], fields: list[TermFields]) -> list[int]:
    """COPY the terms into a staging table, add the new ones to the
    dictionary in one statement, and read every id back by a join — in the
    order given. The table is the write's (``ON COMMIT DROP``): its catalog
    rows cost a millisecond or two, nothing beside this many terms, where a
    table kept by the session and emptied at each commit (note 155) taxed
    every later commit of the session (note 157)."""
    conn.execute(text("CREATE TEMP TABLE IF NOT EXISTS staged_terms (n integer, "
                      "LIKE terms INCLUDING DEFAULTS) ON COMMIT DROP"))
    conn.execute(text("DELETE FROM pg_temp.staged_terms"))  # a second use in one transaction
    cur = db.raw(conn).cursor()
    with cur.copy(f"COPY staged_terms (n, {', '.join(_COLUMNS)}) FROM STDIN") as copy:
        for n, (d, f) in enumerate(zip(digests, fields, strict=True)):
            copy.write_row((n, *dictionary_row(d, f)))
    conn.execute(text(f"INSERT INTO terms ({', '.join(_COLUMNS)}) "
                      f"SELECT {', '.join(_COLUMNS)} FROM staged_terms ORDER BY digest "
                      "ON CONFLICT (digest) DO NOTHING"))  # one order: writers cannot deadlock
    cur.execute("SELECT t.id FROM staged_terms s JOIN terms t ON t.digest = s.digest "
                "ORDER BY s.n")
    return [r[0] for r in cur.fetchall()]


def integer_id(value: str) -> str:
    """SQL for the id of the xsd:integer literal of the SQL bigint ``value``
    (its canonical lexical form; NULL where the dictionary lacks it), by the
    index of integer literals: the digest cannot be computed in SQL."""
    return f"(SELECT id FROM terms WHERE {INTEGER_LITERALS} AND lexical = CAST({value} AS text))"


def number_id(datatype: str, lexical: str) -> str:
    """SQL for the id of the literal of a numeric ``datatype`` (SQL text: an
    xsd:integer, decimal, float or double) and ``lexical`` form (SQL text),
    NULL where the dictionary lacks it: by the index of each datatype's
    literals (0017, 0027), which a constant datatype lets Postgres use."""
    if datatype == f"'{XSD.integer}'":
        return integer_id(lexical)
    lookups = [f"WHEN '{XSD.integer}' THEN {integer_id(lexical)}"]
    lookups += [f"WHEN '{t}' THEN (SELECT id FROM terms WHERE kind = 2 AND datatype = '{t}' "
                f"AND lexical = {lexical})" for t in NUMBER_TYPES]
    return f"(CASE {datatype} {' '.join(lookups)} END)"


FIELDS = ("kind", "lexical", "datatype", "lang")  # a term's dictionary fields (TermFields)


def probe(key: str, value: str, columns: str) -> str:
    """A subquery of the dictionary's row (``columns``) whose ``key`` is
    ``value`` (an SQL expression of the row it is joined to, LATERAL): one
    index probe. A plain join let the planner hash the whole dictionary from
    ~1,000 rows on: on bsbm-1000's 107,248 terms 52.8 ms against 9.8 ms
    probed for 1,000 digests, and growing with the dictionary (design note
    164). OFFSET 0 keeps the subquery from being pulled up into that join."""
    return f"(SELECT {columns} FROM terms WHERE {key} = {value} OFFSET 0)"


def _probed(key: str, array: str, columns: str) -> str:
    """The dictionary's rows (``columns``) whose ``key`` is in ``array`` (SQL
    of an array parameter), one ``probe`` per element. Not ``= ANY``: in a
    prepared statement's generic plan that array is a parameter, which
    Postgres searches linearly for every row a scan meets (note 157)."""
    return (f"SELECT t.* FROM unnest({array}) AS d ({key}) CROSS JOIN LATERAL "
            f"{probe(key, f'd.{key}', columns)} AS t")


_LOOKUP = _probed("digest", "CAST(:d AS bytea[])", "digest, id")
_DECODE = _probed("id", "CAST(:ids AS bigint[])", ", ".join(["id", *FIELDS]))


def lookup(conn: Connection, digests: list[bytes]) -> dict[bytes, int]:
    """The ids the dictionary holds for ``digests`` (sent as an array
    literal, which Postgres reads in C: ``arrays.bytes_literal``)."""
    rows = driver.rows(conn, _LOOKUP, {"d": bytes_literal(digests)}, named=False)
    return {bytes(digest): int(i) for digest, i in rows}


def decode(conn: Connection, ids: Iterable[int]) -> dict[int, Identifier]:
    """The terms of ``ids``."""
    return {i: term_of(*f) for i, f in decode_fields(conn, ids).items()}


def decode_fields(conn: Connection, ids: Iterable[int]) -> dict[int, TermFields]:
    """The dictionary fields of ``ids`` (canonical, as ``fields_of`` gives
    them): what a read writes out, with no term object built (design note
    184)."""
    rows = driver.rows(conn, _DECODE, {"ids": literal(list(set(ids)))}, named=False)
    return {i: (kind, lexical, datatype, lang) for i, kind, lexical, datatype, lang in rows}


__all__ = ["FIELDS", "TermTable", "decode", "decode_fields", "digest", "intern", "intern_fields",
           "lookup", "probe"]

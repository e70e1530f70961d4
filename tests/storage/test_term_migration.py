"""Migration 0007: a dictionary written before RDF 1.1 term identity (two ids
for "abc" and "abc"^^xsd:string, for "x"@EN and "x"@en) ends with one id per
term, and the pods' quads, default graphs and change log refer to it."""

from __future__ import annotations

import hashlib

import sqlalchemy as sa
from rdflib import XSD, Literal, URIRef

from storage import pods
from storage.migrate import upgrade
from views.sortkey import stored_key
from views.terms import digest

P = URIRef("http://ex/p")
S = URIRef("http://ex/s")
OLD_FORMS = {  # the forms an earlier dictionary held apart
    "abc": Literal("abc"), "abc-string": Literal("abc", datatype=XSD.string),
    "x-en": Literal("x", lang="en"), "x-EN": Literal("x", lang="EN"),
    "y-FR": Literal("y", lang="FR"),  # alone: its row becomes the canonical one
}


def _old_term(c: sa.Connection, t: URIRef | Literal) -> int:
    """A dictionary row as the code before 0007 wrote it (digest of t.n3())."""
    dt = t.datatype if isinstance(t, Literal) else None
    lang = t.language if isinstance(t, Literal) else None
    return int(c.execute(sa.text(
        "INSERT INTO terms (digest, kind, lexical, datatype, lang) "
        "VALUES (:d, :k, :l, :dt, :lang) RETURNING id"),
        {"d": hashlib.sha1(t.n3().encode()).digest(), "k": 2 if isinstance(t, Literal) else 0,
         "l": str(t), "dt": str(dt) if dt else None, "lang": lang}).scalar_one())


def test_duplicate_ids_merge_into_one_per_term(database: str) -> None:
    upgrade(database, "0006")
    engine = sa.create_engine(database)
    with engine.begin() as c:
        owner = pods.create_agent(c, "https://o.example/#me", "owner", b"o")
        pod = pods.create_pod(c, "p", owner)
        ids = {name: _old_term(c, t) for name, t in OLD_FORMS.items()}
        s, p = _old_term(c, S), _old_term(c, P)
        r1, r2 = (int(c.execute(sa.text(
            "INSERT INTO resources (pod_id, path, etag, content_type) "
            "VALUES (:p, :path, 'e', 'text/turtle') RETURNING id"),
            {"p": pod, "path": path}).scalar_one()) for path in ("r1", "r2"))
        # r1 holds both forms of "abc" and of "x"@en; r2 the xsd:string form only
        holdings = [(r1, "abc"), (r1, "abc-string"), (r1, "x-en"), (r1, "x-EN"),
                    (r2, "abc-string"), (r2, "y-FR")]
        for r, name in holdings:
            c.execute(sa.text("INSERT INTO quads VALUES (:r, :s, :p, :o)"),
                      {"r": r, "s": s, "p": p, "o": ids[name]})
        for name, n in (("abc", 1), ("abc-string", 2), ("x-en", 1), ("x-EN", 1), ("y-FR", 1)):
            c.execute(sa.text("INSERT INTO pod_triples VALUES (:pod, :s, :p, :o, :n)"),
                      {"pod": pod, "s": s, "p": p, "o": ids[name], "n": n})
        seq = int(c.execute(sa.text("INSERT INTO changes (pod_id, resource_id, inserted, deleted)"
                                    " VALUES (:p, :r, 4, 0) RETURNING seq"),
                            {"p": pod, "r": r1}).scalar_one())
        for name, sign in (("abc", 1), ("abc-string", 1), ("x-en", 1), ("x-EN", -1)):
            c.execute(sa.text("INSERT INTO change_triples VALUES (:q, :s, :p, :o, :g)"),
                      {"q": seq, "s": s, "p": p, "o": ids[name], "g": sign})
    upgrade(database)
    with engine.connect() as c:
        terms = c.execute(sa.text("SELECT id, digest, lexical, datatype, lang FROM terms "
                                  "WHERE kind = 2 ORDER BY lexical")).all()
        assert [(t.lexical, t.datatype, t.lang) for t in terms] == [
            ("abc", None, None), ("x", None, "en"), ("y", None, "fr")]
        by_lex = {t.lexical: t.id for t in terms}
        assert {bytes(t.digest) for t in terms} == {
            digest(Literal("abc")), digest(Literal("x", lang="en")), digest(Literal("y", lang="fr"))}
        quads = set(c.execute(sa.text("SELECT resource_id, o FROM quads")).all())
        assert quads == {(r1, by_lex["abc"]), (r1, by_lex["x"]), (r2, by_lex["abc"]),
                         (r2, by_lex["y"])}
        graph = dict(c.execute(sa.text("SELECT o, n FROM pod_triples")).all())
        assert graph == {by_lex["abc"]: 2, by_lex["x"]: 1, by_lex["y"]: 1}
        log = set(c.execute(sa.text("SELECT o, sign FROM change_triples")).all())
        assert log == {(by_lex["abc"], 1)}  # +x@en and -x@EN cancel out


def test_float_terms_are_revalued_as_single_precision(database: str) -> None:
    """Migration 0035: float rows written when a float held a double (``num``
    0.1, a finite 1e39) hold the nearest single after it (0.100000001…,
    none: past the largest float, INF, as ``double_of`` reads it), their
    sort keys too; a double's row is left as it was."""
    upgrade(database, "0034")
    engine = sa.create_engine(database)
    rows = {"f01": ("0.1", XSD.float, 0.1), "f39": ("1e39", XSD.float, 1e39),
            "d01": ("0.1", XSD.double, 0.1)}
    with engine.begin() as c:
        for name, (lexical, dt, num) in rows.items():
            c.execute(sa.text("INSERT INTO terms (digest, kind, lexical, datatype, num) "
                              "VALUES (:d, 2, :l, :dt, :n)"),
                      {"d": name.encode(), "l": lexical, "dt": str(dt), "n": num})
    upgrade(database, "head")
    with engine.connect() as c:
        got = {bytes(r.digest).decode(): (r.num, r.sortkey is not None) for r in c.execute(
            sa.text("SELECT digest, num, sortkey FROM terms WHERE digest IN ('f01', 'f39', 'd01')"))}
    assert got == {"f01": (0.10000000149011612, True), "f39": (None, True), "d01": (0.1, False)}
    engine.dispose()


Forms = dict[bytes, tuple[str, URIRef]]


def _upgraded(database: str, before: str, forms: Forms) -> dict[bytes, sa.Row]:  # type: ignore[type-arg]
    """The dictionary rows of ``forms`` (digest: lexical form, datatype) as
    the code at revision ``before`` left them (an old key, a ``ts``), read
    after upgrading to head, and each the key ``stored_key`` writes."""
    upgrade(database, before)
    engine = sa.create_engine(database)
    with engine.begin() as c:
        for digest, (lexical, dt) in forms.items():
            c.execute(sa.text("INSERT INTO terms (digest, kind, lexical, datatype, ts, sortkey) "
                              "VALUES (:d, 2, :l, :dt, now(), :k)"),
                      {"d": digest, "l": lexical, "dt": str(dt), "k": b"\x03\x04old"})
    upgrade(database, "head")
    with engine.connect() as c:
        rows = {bytes(r.digest): r for r in c.execute(sa.text(
            "SELECT digest, ts, sortkey FROM terms WHERE digest = ANY(:d)"), {"d": list(forms)})}
    engine.dispose()
    assert {d: bytes(r.sortkey) for d, r in rows.items()} == {
        d: stored_key(2, lexical, str(dt), None) for d, (lexical, dt) in forms.items()}
    return rows


def _by_key(rows: dict[bytes, sa.Row]) -> list[bytes]:  # type: ignore[type-arg]
    return sorted(rows, key=lambda d: bytes(rows[d].sortkey))


def test_datetime_sort_keys_are_written_again_as_exact_seconds(database: str) -> None:
    """Migration 0036: a dateTime's or a date's key is its exact seconds
    (``views.sortkey``), whatever 0029 wrote (here an old 8-byte form), so
    ``…:00.0000001Z`` sorts after ``…:00Z`` and year 10000 after 9999 in a
    rendered ORDER BY, MIN and MAX."""
    rows = _upgraded(database, "0035", {
        b"t0": ("2002-01-01T00:00:00Z", XSD.dateTime),
        b"t1": ("2002-01-01T00:00:00.0000001Z", XSD.dateTime),
        b"t2": ("10000-01-01T00:00:00Z", XSD.dateTime), b"t3": ("-0001-12-31", XSD.date)})
    assert _by_key(rows) == [b"t0", b"t1", b"t2", b"t3"]  # a date after the dateTimes (its own family)


def test_numbers_with_whitespace_lose_their_value(database: str) -> None:
    """Migration 0037: ``" 1 "^^xsd:integer`` held ``num`` 1 before it, and
    none after (ill-typed), with the key of an ill-typed literal; ``"1"``
    keeps its value."""
    upgrade(database, "0036")
    engine = sa.create_engine(database)
    forms = {b"s1": " 1 ", b"n1": "1"}
    with engine.begin() as c:
        for digest, lexical in forms.items():
            c.execute(sa.text("INSERT INTO terms (digest, kind, lexical, datatype, num) "
                              "VALUES (:d, 2, :l, :dt, 1)"),
                      {"d": digest, "l": lexical, "dt": str(XSD.integer)})
    upgrade(database, "head")
    with engine.connect() as c:
        got = {bytes(r.digest): (r.num, None if r.sortkey is None else bytes(r.sortkey))
               for r in c.execute(sa.text(
                   "SELECT digest, num, sortkey FROM terms WHERE digest IN ('s1', 'n1')"))}
    assert got == {b"s1": (None, stored_key(2, " 1 ", str(XSD.integer), None)),
                   b"n1": (1.0, None)}
    engine.dispose()


def test_duration_keys_are_written_again_and_other_digits_lose_their_value(database: str) -> None:
    """Migration 0038: a duration's key is the exact seconds it leads to
    (``PT0.0000001S`` after ``PT0S``, ``P10000Y`` keyed at all), and a
    dateTime spelled with Arabic-Indic digits loses the ``ts`` and the key
    of a value it never had."""
    rows = _upgraded(database, "0037", {
        b"d0": ("PT0S", XSD.dayTimeDuration), b"d1": ("PT0.0000001S", XSD.dayTimeDuration),
        b"d2": ("P10000Y", XSD.duration),
        b"a1": ("\u0662\u0660\u0660\u0662-01-01T00:00:00Z", XSD.dateTime)})
    assert rows[b"a1"].ts is None and _by_key(rows)[:3] == [b"d0", b"d1", b"d2"]

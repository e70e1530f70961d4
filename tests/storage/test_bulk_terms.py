"""Bulk writes intern the same dictionary as term-at-a-time writes.

The fast path (a body parsed by pyoxigraph into a ``TermTable``, its terms
keyed by ``views.terms.digest_of`` and COPYed through a staging table) must
give every term the id the existing path gives it (rdflib terms, keyed by
the SHA-1 of rdflib's N3 form of ``views.terms.canonical``) — decision 8, one
id per RDF term — and the dictionary rows the existing path wrote. The oracle
for "one id per RDF term" is pyoxigraph's own term equality on the same data;
the oracle for "the same rows as before" is rdflib's ``n3()`` and the value
parsers applied to rdflib terms, as the dictionary was written before."""

from __future__ import annotations

import hashlib
import math
from itertools import combinations

import pyoxigraph as ox
import pytest
import sqlalchemy as sa
from rdflib import XSD, URIRef
from rdflib.term import BNode, Identifier, Literal

from server.api.ldp import rdf
from storage import changes, pods, terms
from tests.plans import plan_nodes
from views.compare import datetime_value
from views.sortkey import sort_key
from views.terms import ExprError, canonical, digest_of, fields_of, numeric_type, numeric_value

# Each line is a trap: forms of one term that must meet, distinct terms that
# must not, lexical forms that must stay as written.
TRICKY = r"""
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
@prefix ex: <http://ex/> .
ex:s ex:str "a", "a"^^xsd:string, "", ""^^xsd:string, "A" .
ex:s ex:lang "chat"@FR-be, "chat"@fr-BE, "chat"@fr, "chat" .
ex:s ex:int "01"^^xsd:integer, "1"^^xsd:integer, "+1"^^xsd:integer, 1, "-0"^^xsd:integer,
  "0"^^xsd:integer, " 5 "^^xsd:int, "1_0"^^xsd:integer, "300"^^xsd:byte,
  "99999999999999999999999"^^xsd:integer, "1"^^xsd:long .
ex:s ex:dec "1.0"^^xsd:decimal, "1.00"^^xsd:decimal, 1.50, ".5"^^xsd:decimal,
  "Infinity"^^xsd:decimal, "-inf"^^xsd:decimal .
ex:s ex:dbl "1e0"^^xsd:double, "1E0"^^xsd:double, 2E3, "INF"^^xsd:double, "-INF"^^xsd:float,
  "NaN"^^xsd:float, "NaN"^^xsd:double, "1e400"^^xsd:double, "abc"^^xsd:double .
ex:s ex:bool true, "1"^^xsd:boolean, "TRUE"^^xsd:boolean .
ex:s ex:when "2020-01-01T00:00:00Z"^^xsd:dateTime, "2020-01-01T01:00:00+01:00"^^xsd:dateTime,
  "2020-01-01T00:00:00"^^xsd:dateTime, "2020-01-01T24:00:00-05:00"^^xsd:dateTime,
  "2020-02-30T00:00:00Z"^^xsd:dateTime, "2020-01-01"^^xsd:date .
ex:s ex:text "line\nbreak", "cr\rhere", "tab\there", "quote\"d", "\"\"\"triple\"\"\"",
  "back\\slash", "ends\n\"", "ends\\\n\"", "x\n\\\"", "caf\u00e9", "caf\u0065\u0301", "\U0001F600",
  "x\u0001y", "line\nbreak"@EN, "inf"^^<http://ex/dt>, "nan"^^<http://ex/dt> .
ex:s ex:node _:b1, _:B1, [], [ ex:p 1 ] .
_:b1 ex:iri <http://ex/caf\u00e9>, <http://ex/café>, <http://ex/caf%C3%A9>, <http://ex/%c3%a9>,
  <http://ex/\U0001F600>, <http://ex/a#frag>, <urn:isbn:0451450523> .
"""
# as N-Triples, so that every parse gives its blank nodes the same labels
DATA = ox.serialize(ox.parse(TRICKY.encode(), ox.RdfFormat.TURTLE), format=ox.RdfFormat.N_TRIPLES)
NT = "application/n-triples"


def _old_term(t: object) -> Identifier:
    """The rdflib term the LDP parser made of a pyoxigraph term before bulk
    writes (``rdf.term`` as it was)."""
    if isinstance(t, ox.NamedNode):
        return URIRef(t.value)
    if isinstance(t, ox.BlankNode):
        return BNode(t.value)
    assert isinstance(t, ox.Literal)
    if t.language:
        return Literal(t.value, lang=t.language)
    dt = t.datatype.value
    return Literal(t.value) if dt == str(XSD.string) else Literal(t.value, datatype=URIRef(dt))


def _old_row(t: Identifier) -> tuple[object, ...]:
    """The dictionary row the term-at-a-time path wrote before bulk writes."""
    num = ts = None
    if isinstance(t, Literal):
        if numeric_type(t) is not None:
            try:
                v = float(numeric_value(t))
                num = v if math.isfinite(v) else None
            except (ExprError, OverflowError):
                pass
        elif t.datatype == XSD.dateTime:
            try:
                ts = datetime_value(t).timestamp()
            except ExprError:
                pass
    return (hashlib.sha1(canonical(t).n3().encode("utf-8")).digest(), *fields_of(t), num, ts)


def _ox_terms() -> list[object]:
    found = list(ox.parse(DATA, ox.RdfFormat.N_TRIPLES))
    return list(dict.fromkeys(x for q in found for x in (q.subject, q.predicate, q.object)))


def _dictionary(c: sa.Connection) -> set[tuple[object, ...]]:
    return {(bytes(r[0]), *r[1:]) for r in c.execute(sa.text(
        "SELECT digest, kind, lexical, datatype, lang, num, ts FROM terms"))}


def test_the_digest_of_fields_is_rdflibs_n3_of_the_canonical_term() -> None:
    for t in _ox_terms():
        old = _old_term(t)
        assert rdf.fields(t) == fields_of(old), t
        assert digest_of(*rdf.fields(t)) == _old_row(old)[0], t


@pytest.mark.parametrize("path", ["staged", "arrays"])
def test_bulk_interning_gives_the_ids_and_rows_of_the_existing_path(
        migrated: str, path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    table = rdf.table_of(ox.parse(DATA, ox.RdfFormat.N_TRIPLES))  # the blank nodes' labels kept
    if path == "staged":
        monkeypatch.setattr(terms, "ARRAYED", 0)
    with sa.create_engine(migrated).begin() as c:
        fast = terms.intern_fields(c, table.terms)
        made = _dictionary(c)
        oxs = _ox_terms()
        old = [_old_term(t) for t in oxs]
        by_old = terms.intern(c, old)  # the existing path, term at a time
        assert _dictionary(c) == made, "the existing path found terms the bulk path missed"
        assert made == {_old_row(t) for t in old}
        ids = dict(zip(table.terms, fast, strict=True))
        for t, o in zip(oxs, old, strict=True):
            assert ids[rdf.fields(t)] == by_old[o], t
        # one id per RDF term: pyoxigraph's term equality, pair by pair
        for a, b in combinations(oxs, 2):
            assert (a == b) == (by_old[_old_term(a)] == by_old[_old_term(b)]), (a, b)
        assert len(set(fast)) == len(set(oxs))


def test_a_staged_write_equals_a_small_one(migrated: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same writes through staging tables (COPY) and through arrays give
    the same quads, default graph, change log and ETags."""
    table = rdf.parse_table(DATA, NT, "http://ex/doc")
    first = table.decoded()
    second = {t for t in first if t[1] != URIRef("http://ex/text")} | {
        (URIRef("http://ex/s"), URIRef("http://ex/new"), Literal("n"))}
    got = []
    for staged in (False, True):
        monkeypatch.setattr(changes, "STAGED", 0 if staged else 10**9)
        monkeypatch.setattr(terms, "ARRAYED", 0 if staged else 10**9)
        with sa.create_engine(migrated).begin() as c:
            owner = pods.create_agent(c, f"urn:o{staged}", "owner", str(staged).encode())
            pod = pods.create_pod(c, f"p{staged}", owner)
            seqs, etags = [], []
            for path, put, patch in (("doc", table if staged else first, None),
                                     ("other", [next(iter(first))], None),
                                     ("doc", second, None), ("doc", None, list(second)[:3])):
                seqs.append(pods.put_resource(c, pod, path, put) if put is not None else
                            pods.patch_resource(c, pod, path, [], patch or []))
                etags.append(pods.written(c, seqs[-1]).etag)
            seqs.append(pods.delete_resource(c, pod, "doc"))
            got.append(([pods.change_delta(c, s) for s in seqs], pods.default_graph(c, pod),
                        etags))
    assert got[0] == got[1]
    assert got[0][0][0] == {t: 1 for t in first}


def test_the_staging_table_serves_writes_in_and_after_a_transaction(
        migrated: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The staging table is the write's, dropped at commit (note 157): two
    staged interns in one transaction, then more in later transactions on
    the same session (and one rolled back), each get the ids the dictionary
    holds for exactly their terms; the session keeps no staging table that
    its later commits would empty."""
    monkeypatch.setattr(terms, "ARRAYED", 256)
    e = sa.create_engine(migrated, pool_size=1, max_overflow=0)
    batches = [[URIRef(f"urn:t:{b}:{i}") for i in range(terms.ARRAYED + 10)] for b in range(4)]
    shared = [URIRef(f"urn:t:0:{i}") for i in range(terms.ARRAYED + 1)]  # batch 0's again
    with e.begin() as c:
        first = terms.intern(c, batches[0])
        second = terms.intern(c, batches[1])
    with e.connect() as c:
        assert c.execute(sa.text("SELECT to_regclass('pg_temp.staged_terms')")).scalar() is None
        terms.intern(c, batches[2])
        c.rollback()  # the session's table rolled back with its rows
    with e.begin() as c:
        again = terms.intern(c, shared + batches[3])
    with e.connect() as c:
        assert c.execute(sa.text("SELECT to_regclass('pg_temp.staged_terms')")).scalar() is None
        stored = {str(r.lexical): int(r.id) for r in c.execute(sa.text(
            "SELECT id, lexical FROM terms WHERE lexical LIKE 'urn:t:%'"))}
    for got in (first, second, again):
        assert {str(t): i for t, i in got.items()} == {str(t): stored[str(t)] for t in got}
    assert not any(str(t) in stored for t in batches[2])  # rolled back: never added
    assert len(first) == len(second) == terms.ARRAYED + 10
    assert len(again) == 2 * terms.ARRAYED + 11
    e.dispose()


def test_every_terms_sort_key_in_sql_is_the_one_views_gives(migrated: str) -> None:
    """``pv_sort_key`` (migration 0029: an IRI's, a blank node's and a
    string's written from its text in SQL, a typed literal's stored) gives
    each term the key ``views.sortkey`` gives its fields: the traps above
    and the sort-key catalogue (Postgres text holds no NUL: those left out)."""
    from tests.engine.fuzz_terms import BNODES, CATALOGUE, IRIS
    from tests.engine.test_sortkey import EXTRA

    given = [_old_term(t) for t in _ox_terms()]
    given += [t for t in (*CATALOGUE, *EXTRA, *IRIS, *BNODES) if "\x00" not in str(t)]
    with sa.create_engine(migrated).begin() as c:
        ids = terms.intern(c, given)
        keys = {int(i): bytes(k) for i, k in c.execute(sa.text(
            "SELECT id, pv_sort_key(t) FROM terms t WHERE id = ANY(:ids)"),
            {"ids": list(ids.values())})}
    assert len(ids) > 150
    for t, i in ids.items():
        assert keys[i] == sort_key(*fields_of(t)), t


def test_a_large_lookup_probes_the_dictionary_instead_of_scanning_it(migrated: str) -> None:
    """Looking up or decoding thousands of terms costs their probes, not a
    pass over the whole dictionary (design note 164): on a 30,000-term
    dictionary the planner hashed all of it for a join of 2,000 keys."""
    engine = sa.create_engine(migrated)
    with engine.begin() as c:
        c.execute(sa.text("INSERT INTO terms (digest, kind, lexical) SELECT "
                          "sha256(i::text::bytea), 0, 'http://ex/' || i "
                          "FROM generate_series(1, 30000) AS i"))
        c.execute(sa.text("ANALYZE terms"))
        rows = c.execute(sa.text("SELECT digest, id FROM terms ORDER BY random() LIMIT 2000")).all()
        digests, ids = [bytes(r.digest) for r in rows], [int(r.id) for r in rows]
        for statement, params in ((terms._LOOKUP, {"d": digests}), (terms._DECODE, {"ids": ids})):
            plan = c.execute(sa.text(f"EXPLAIN (FORMAT JSON) {statement}"),
                             params).scalar_one()
            scanned = [n["Node Type"] for n in plan_nodes(plan[0]["Plan"])
                       if n.get("Relation Name") == "terms"]
            assert scanned and all(n.startswith("Index") for n in scanned), scanned
        assert terms.lookup(c, digests) == {bytes(r.digest): int(r.id) for r in rows}
        assert set(terms.decode(c, ids)) == set(ids)
    engine.dispose()

"""Issue 15's four classes through the pipeline: pod writes, the term
dictionary, worker jobs on the SQL executor, K-relations in Postgres, and
the results as a reader gets them."""

from __future__ import annotations

import sqlalchemy as sa
from rdflib import XSD, Literal, URIRef
from rdflib.term import Identifier

from server.api.views.formats import select_json
from server.api.views.service import register_view
from storage import catalog, pods, terms
from tests.maintenance.test_pipeline import drain, setup
from views.compile import compile_query
from views.results import solutions
from views.terms import fields_of, make_numeric, single

EX = "http://ex/"
P, Q, T = URIRef(EX + "p"), URIRef(EX + "q"), URIRef(EX + "t")


def node(n: str) -> URIRef:
    return URIRef(EX + n)


def view_rows(engine: sa.Engine, pod_consumer: tuple[int, int], query: str,
              writes: list[set[tuple]]) -> list[dict[str, Identifier]]:
    """Register ``query``, write each triple set as one resource's content in
    turn (a write per set, so the view is maintained through each), and read
    the view's ordered solutions."""
    pod, consumer = pod_consumer
    text = f"PREFIX : <{EX}> PREFIX xsd: <{XSD}>\n{query}"
    with engine.begin() as c:
        view = register_view(c, consumer, "v", text)
    drain(engine)
    for i, triples in enumerate(writes):
        with engine.begin() as c:
            pods.put_resource(c, pod, f"r{i}", triples)
        drain(engine)
    q = compile_query(text).query
    with engine.connect() as c:
        kset = catalog.view_results(c, view)
    return [{v: t for v, t in r.items() if v in q.variables} for r in solutions(q, kset)]


def test_the_dictionary_holds_one_id_per_term(migrated: str) -> None:
    engine = sa.create_engine(migrated)
    with engine.begin() as c:
        ids = terms.intern(c, [Literal("abc"), Literal("abc", datatype=XSD.string),
                               Literal("x", lang="EN"), Literal("x", lang="en")])
        again = terms.intern(c, [Literal("abc", datatype=XSD.string)])
        decoded = terms.decode(c, ids.values())
        count = c.execute(sa.text("SELECT count(*) FROM terms")).scalar_one()
    assert len(set(ids.values())) == 2 and count == 2
    assert again[Literal("abc", datatype=XSD.string)] == ids[Literal("abc")]
    assert set(decoded.values()) == {Literal("abc"), Literal("x", lang="en")}


def test_distinct_sees_one_term_for_both_forms(migrated: str) -> None:
    engine = sa.create_engine(migrated)
    pod_consumer = setup(engine)
    rows = view_rows(engine, pod_consumer, "SELECT DISTINCT ?v { ?s :p ?v }", [
        {(node("a"), P, Literal("abc"))},
        {(node("b"), P, Literal("abc", datatype=XSD.string)), (node("c"), P, Literal("y", lang="DE"))},
    ])
    assert sorted(r["v"].n3() for r in rows) == ['"abc"', '"y"@de']
    body = select_json(("v",), [{v: fields_of(t) for v, t in r.items()} for r in rows]
                       )["results"]["bindings"]
    assert {"type": "literal", "value": "abc"} in [b["v"] for b in body]


def test_order_by_numbers_of_mixed_datatypes_with_limit(migrated: str) -> None:
    engine = sa.create_engine(migrated)
    pod_consumer = setup(engine)
    nums = [Literal("2", datatype=XSD.integer), Literal("1.5", datatype=XSD.decimal),
            Literal("1", datatype=XSD.integer), Literal("010", datatype=XSD.integer),
            Literal("5E-1", datatype=XSD.double)]
    rows = view_rows(engine, pod_consumer, "SELECT ?v { ?s :p ?v } ORDER BY ?v LIMIT 3 OFFSET 1",
                     [{(node(f"n{i}"), P, n)} for i, n in enumerate(nums)])
    assert [str(r["v"]) for r in rows] == ["1", "1.5", "2"]


def test_datetime_filter_with_and_without_timezone(migrated: str) -> None:
    engine = sa.create_engine(migrated)
    pod_consumer = setup(engine)
    data = {(node("a"), T, Literal("2002-01-01T00:00:00", datatype=XSD.dateTime)),
            (node("b"), T, Literal("2002-01-02T00:00:00Z", datatype=XSD.dateTime)),
            (node("c"), T, Literal("2002-01-01T10:00:00Z", datatype=XSD.dateTime))}
    rows = view_rows(engine, pod_consumer, "SELECT ?x ?y { ?x :t ?u . ?y :t ?v FILTER(?u < ?v) }",
                     [data])
    assert sorted((str(r["x"])[-1], str(r["y"])[-1]) for r in rows) == [("a", "b"), ("c", "b")]


def test_reduced_answers_within_its_bounds(migrated: str) -> None:
    engine = sa.create_engine(migrated)
    pod_consumer = setup(engine)
    rows = view_rows(engine, pod_consumer, "SELECT REDUCED ?v { ?s :p ?v }", [
        {(node("a"), P, Literal("x")), (node("b"), P, Literal("x", datatype=XSD.string))}])
    assert len(rows) == 1 and rows[0]["v"] == Literal("x")


def test_floats_and_datetimes_past_pythons_through_the_sql_executor(migrated: str) -> None:
    """Design notes 210 and 211 through the rendered statements: a float
    compared with a decimal constant is compared as a float (``holds``),
    a SUM of floats is the float nearest their exact sum, written as the
    interpreter writes it, and MIN, MAX and ORDER BY of dateTimes read the
    exact sort keys (year 0 and 10000, a tenth of a microsecond)."""
    engine = sa.create_engine(migrated)
    pod_consumer = setup(engine)
    floats = {(node("f1"), P, Literal("0.1", datatype=XSD.float)),
              (node("f2"), P, Literal("0.10000001", datatype=XSD.float)),
              (node("d1"), P, Literal("0.1", datatype=XSD.double)),
              (node("f3"), Q, Literal("0.1", datatype=XSD.float)),
              (node("f4"), Q, Literal("0.2", datatype=XSD.float))}
    above = view_rows(engine, pod_consumer, "SELECT ?s { ?s :p ?v FILTER(?v > 0.1) }", [floats])
    assert [r["s"] for r in above] == [node("f2")]
    total = view_rows(engine, pod_consumer, "SELECT (SUM(?v) AS ?t) { ?s :q ?v }", [floats])
    assert total == [{"t": make_numeric(single(0.1) + single(0.2), XSD.float)}]
    assert str(total[0]["t"]) == "0.3"  # the float's own shortest digits (note 214)
    stamps = ["2002-01-01T00:00:00Z", "2002-01-01T00:00:00.0000001Z", "10000-01-01T00:00:00Z",
              "0000-01-01T00:00:00Z"]
    times = {(node(f"t{i}"), T, Literal(s, datatype=XSD.dateTime)) for i, s in enumerate(stamps)}
    _ordered_in_sql(engine, pod_consumer, times, [Literal(stamps[i], datatype=XSD.dateTime)
                                                  for i in (3, 0, 1, 2)])


def _ordered_in_sql(engine: sa.Engine, pod_consumer: tuple[int, int], data: set[tuple],
                    ascending: list[Literal]) -> None:
    """MIN, MAX and ORDER BY DESC … LIMIT 3 of ``:t``'s objects in ``data``
    (rendered: the dictionary's sort keys) are those of ``ascending``."""
    ends = view_rows(engine, pod_consumer, "SELECT (MIN(?v) AS ?lo) (MAX(?v) AS ?hi) "
                                           "{ ?s :t ?v }", [data])
    assert ends == [{"lo": ascending[0], "hi": ascending[-1]}]
    ordered = view_rows(engine, pod_consumer, "SELECT ?v { ?s :t ?v } ORDER BY DESC(?v) LIMIT 3",
                        [data])
    assert [r["v"] for r in ordered] == ascending[::-1][:3]


def test_a_number_with_whitespace_in_its_form_is_ill_typed_in_sql(migrated: str) -> None:
    """Design note 212 through the rendered statements: ``" 1 "^^xsd:integer``
    has no value (``exact_number``, ``double_of``), so a comparison drops it
    and a SUM over it is an error (unbound), as in the interpreter."""
    engine = sa.create_engine(migrated)
    pod_consumer = setup(engine)
    data = {(node("a"), P, Literal(" 1 ", datatype=XSD.integer)),
            (node("b"), P, Literal("1", datatype=XSD.integer)),
            (node("c"), P, Literal("2.5 ", datatype=XSD.double)),
            (node("d"), Q, Literal("1", datatype=XSD.integer)),
            (node("d"), Q, Literal("2 ", datatype=XSD.integer))}
    above = view_rows(engine, pod_consumer, "SELECT ?s { ?s :p ?v FILTER(?v > 0) }", [data])
    assert [r["s"] for r in above] == [node("b")]
    total = view_rows(engine, pod_consumer, "SELECT ?s (SUM(?v) AS ?t) { ?s :q ?v } GROUP BY ?s",
                      [data])
    assert total == [{"s": node("d")}]


def test_durations_and_other_digits_through_the_sql_executor(migrated: str) -> None:
    """Design note 213 through the rendered statements: MIN, MAX and ORDER
    BY of durations read exact keys (``PT0.0000001S`` after ``PT0S``,
    ``P10000Y`` last), and a date spelled with Arabic-Indic digits is
    ill-typed, so a comparison drops it."""
    engine = sa.create_engine(migrated)
    pod_consumer = setup(engine)
    spans = ["PT0S", "PT0.0000001S", "P10000Y", "-P1D"]
    data = {(node(f"d{i}"), T, Literal(s, datatype=XSD.duration)) for i, s in enumerate(spans)}
    data |= {(node("a"), P, Literal("\u0662\u0660\u0660\u0662-01-01", datatype=XSD.date)),
             (node("b"), P, Literal("2002-01-01", datatype=XSD.date))}
    _ordered_in_sql(engine, pod_consumer, data, [Literal(spans[i], datatype=XSD.duration)
                                                 for i in (3, 0, 1, 2)])
    later = view_rows(engine, pod_consumer, 'SELECT ?s { ?s :t ?v FILTER(?v > "PT0S"^^xsd:duration) }',
                      [data])
    assert sorted(r["s"] for r in later) == [node("d1"), node("d2")]
    dated = view_rows(engine, pod_consumer, 'SELECT ?s { ?s :p ?v FILTER(?v = "2002-01-01"^^xsd:date) }',
                      [data])
    assert [r["s"] for r in dated] == [node("b")]


def test_a_float_form_beside_a_halfway_point_in_sql(migrated: str) -> None:
    """Design notes 219 and 220 through the rendered statements: the
    dictionary's value of ``"1.00000005960464477550"^^xsd:float`` is the
    float above 1 (rounded once), so it is greater than 1; a decimal
    constant beside a halfway point is promoted to the float nearest it
    (``holds``); a SUM and an AVG of floats round the exact sum once."""
    engine = sa.create_engine(migrated)
    pod_consumer = setup(engine)
    data = {(node("a"), P, Literal("1.00000005960464477550", datatype=XSD.float)),
            (node("b"), P, Literal("1", datatype=XSD.float))}
    above = view_rows(engine, pod_consumer, "SELECT ?s { ?s :p ?v FILTER(?v > 1) }", [data])
    assert [r["s"] for r in above] == [node("a")]
    equal = view_rows(engine, pod_consumer,
                      "SELECT ?s { ?s :p ?v FILTER(?v >= 1.00000005960464477550) }", [data])
    assert [r["s"] for r in equal] == [node("a")]
    # note 220: 1 + 2^-24 + 2^-80 rounds once, past the halfway point (``pv_single_sum``)
    members = {(node(n), Q, Literal(v, datatype=XSD.float))
               for n, v in (("c", "1"), ("d", "5.9604645E-8"), ("e", "8.2718061E-25"))}
    total = view_rows(engine, pod_consumer, "SELECT (SUM(?v) AS ?t) (AVG(?v) AS ?m) { ?s :q ?v }",
                      [members])
    assert total == [{"t": Literal("1.0000001", datatype=XSD.float),
                      "m": make_numeric(1.0000001192092896 / 3, XSD.float)}]


def test_group_by_an_expression_without_a_name_in_sql(migrated: str) -> None:
    """``GROUP BY (?v + 1)`` through the SQL executor: its key is a hidden
    variable (``_:%group1``) the rendered statements carry like any other."""
    engine = sa.create_engine(migrated)
    pod_consumer = setup(engine)
    data = {(node("a"), P, Literal(1)), (node("b"), P, Literal(1)), (node("c"), P, Literal(2)),
            (node("d"), P, Literal("x"))}
    rows = view_rows(engine, pod_consumer, "SELECT (COUNT(*) AS ?n) { ?s :p ?v } GROUP BY (?v + 1)",
                     [data])
    assert sorted(int(r["n"]) for r in rows) == [1, 1, 2]


def test_graph_optional_gives_every_document_a_row(migrated: str) -> None:
    """Design note 222 through the pipeline: each document is a named graph,
    and ``GRAPH ?g { OPTIONAL { ?s :q ?o } }`` gives one row for a document
    without a match beside the rows of the one with a match."""
    engine = sa.create_engine(migrated)
    pod_consumer = setup(engine)
    writes = [{(node("a"), Q, Literal(1))}, {(node("b"), P, Literal(2))}]
    rows = view_rows(engine, pod_consumer, "SELECT ?g ?s { GRAPH ?g { OPTIONAL { ?s :q ?o } } }",
                     writes)
    assert sorted((str(r["g"]).rsplit("/", 1)[-1], str(r.get("s", ""))) for r in rows) == [
        ("r0", EX + "a"), ("r1", "")]


def test_a_select_expression_names_an_earlier_one_in_sql(migrated: str) -> None:
    """Design note 223 through the SQL executor: ``(?t * 2 AS ?u)`` after
    ``(SUM(?v) AS ?t)`` doubles each group's sum."""
    engine = sa.create_engine(migrated)
    pod_consumer = setup(engine)
    data = {(node("a"), P, Literal(1)), (node("a"), P, Literal(2)), (node("b"), P, Literal(4))}
    rows = view_rows(engine, pod_consumer, "SELECT ?s (SUM(?v) AS ?t) (?t * 2 AS ?u) "
                                           "{ ?s :p ?v } GROUP BY ?s", [data])
    assert sorted((str(r["s"])[-1], int(r["u"])) for r in rows) == [("a", 6), ("b", 8)]

"""Named regressions for RDF term semantics (issue 15), each the smallest
case of its class, run incrementally in memory (one triple per batch, then
all deleted and inserted again) with the answer the specifications give.

The four classes the issue names: RDF 1.1 term identity, ORDER BY across
numeric datatypes, dateTime comparison with and without a timezone, and
REDUCED's lax cardinality (judged by the W3C harness). Cases the fuzzer
(tests/engine/test_fuzz_terms.py) found follow them.
"""

from __future__ import annotations

import pytest
from rdflib import Graph, Literal, URIRef
from rdflib.term import Identifier

from server.tools import w3c
from views import algebra as A
from views.compile import compile_query
from views.dataset import Dataset
from views.errors import UnsupportedFeature
from views.interpret import Maintainer
from views.plan import plan_of
from views.reference import evaluate
from views.results import solutions

PREFIXES = ("@prefix : <http://ex/> . "
            "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n")
QPREFIXES = "PREFIX : <http://ex/> PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n"
XSD = "http://www.w3.org/2001/XMLSchema#"


def answers(data: str, query: str) -> list[dict[str, Identifier]]:
    """The query's solutions, maintained one triple at a time, checked against
    the reference evaluator after every step."""
    g = Graph()
    g.parse(data=PREFIXES + data, format="turtle")
    quads = sorted(((None, *t) for t in g), key=str)
    q = compile_query(QPREFIXES + query).query
    ds = Dataset()
    view = Maintainer(plan_of(q.pattern), ds)
    for sign, order in ((1, quads), (-1, quads[::2]), (1, quads[::2][::-1])):
        for qd in order:
            view.apply(ds.apply([(qd, sign)]))
            assert view.result == evaluate(q.pattern, ds)
    return [{v: t for v, t in r.items() if v in q.variables} for r in solutions(q, view.result)]


def values(rows: list[dict[str, Identifier]], var: str) -> list[str]:
    return [rows_n3(r.get(var)) for r in rows]


def rows_n3(t: Identifier | None) -> str:
    return "UNDEF" if t is None else t.n3()


def lit(lexical: str, datatype: str | None = None, lang: str | None = None) -> Literal:
    return Literal(lexical, lang=lang, datatype=URIRef(XSD + datatype) if datatype else None)


# ------------------------------------------------ 1. RDF 1.1 term identity


def test_a_plain_literal_and_a_variable_of_its_name_are_two_patterns() -> None:
    """``?y :q ?x`` and ``?y :q "x"`` were one plan node: a node's id hashed
    a variable as its quoted name and a plain literal as its N-Triples form,
    the same text. The MINUS took the pattern from itself, and a process
    that had planned one gave the other its shape (design note 227; found
    by the structural fuzzer through SQL)."""
    q = "SELECT ?y ?x WHERE { ?y :q ?x MINUS { ?y :q \"x\" } }"
    assert values(answers(':a :q :b . :c :q "x" .', q), "y") == ["<http://ex/a>"]
    by_var, by_literal = (plan_of(compile_query(QPREFIXES + f"SELECT * {{ ?y :q {o} }}")
                                  .query.pattern) for o in ("?x", '"x"'))
    assert by_var.root.id != by_literal.root.id
    assert by_var.fingerprint != by_literal.fingerprint


def test_distinct_xsd_string_and_simple_literal_are_one_term() -> None:
    rows = answers(':a :p "abc" . :b :p "abc"^^xsd:string .', "SELECT DISTINCT ?v { ?s :p ?v }")
    assert values(rows, "v") == ['"abc"']


def test_a_join_on_xsd_string_and_simple_literal_matches() -> None:
    rows = answers(':a :p "abc" . :b :q "abc"^^xsd:string .',
                   "SELECT ?s ?t { ?s :p ?v . ?t :q ?v }")
    assert len(rows) == 1


def test_query_constant_in_xsd_string_form_matches_simple_literal_data() -> None:
    rows = answers(':a :p "abc" .', 'SELECT ?s { ?s :p "abc"^^xsd:string }')
    assert values(rows, "s") == ["<http://ex/a>"]


def test_language_tags_are_one_term_whatever_their_case() -> None:
    rows = answers(':a :p "chat"@FR . :b :p "chat"@fr .',
                   "SELECT DISTINCT ?v (LANG(?v) AS ?l) { ?s :p ?v }")
    assert values(rows, "v") == ['"chat"@fr'] and values(rows, "l") == ['"fr"']


def test_strdt_to_xsd_string_and_strlang_give_canonical_terms() -> None:
    rows = answers(':a :p "x" .', 'SELECT ?v ?w ?same { ?s :p ?o BIND(STRDT(?o, xsd:string) AS ?v)'
                   ' BIND(STRLANG(?o, "EN-gb") AS ?w) BIND(sameTerm(?v, ?o) AS ?same) }')
    assert rows == [{"v": lit("x"), "w": lit("x", lang="en-gb"), "same": lit("true", "boolean")}]


def test_term_equality_is_not_value_equality() -> None:
    """"01"^^xsd:integer and "1"^^xsd:integer are two terms of one value:
    DISTINCT keeps both, a join does not match them, `=` does."""
    data = ':a :p "01"^^xsd:integer . :b :q "1"^^xsd:integer .'
    assert len(answers(data, "SELECT DISTINCT ?v { ?s ?p ?v }")) == 2
    assert answers(data, "SELECT * { ?s :p ?v . ?t :q ?v }") == []
    assert len(answers(data, "SELECT * { ?s :p ?v . ?t :q ?w FILTER(?v = ?w) }")) == 1


# ------------------------------------ 2. ORDER BY across numeric datatypes


def test_order_by_mixes_integers_and_decimals_by_value() -> None:
    data = ':a :p 2 . :b :p 1.5 . :c :p 1 . :d :p "0.5"^^xsd:double . :e :p "010"^^xsd:integer .'
    rows = answers(data, "SELECT ?v { ?s :p ?v } ORDER BY ?v")
    assert [str(r["v"]) for r in rows] == ["0.5", "1", "1.5", "2", "010"]
    rows = answers(data, "SELECT ?v { ?s :p ?v } ORDER BY DESC(?v) LIMIT 2 OFFSET 1")
    assert [str(r["v"]) for r in rows] == ["2", "1.5"]


def test_order_by_puts_unbound_first_then_blank_iri_literal() -> None:
    data = ':a :p :x . :b :p _:n . :c :p 1 . :d :q 1 .'
    rows = answers(data, "SELECT ?s ?v { ?s ?pp ?o OPTIONAL { ?s :p ?v } } ORDER BY ?v ?s")
    kinds = [type(r.get("v")).__name__ for r in rows]
    assert kinds == ["NoneType", "BNode", "URIRef", "Literal"]


def test_min_max_over_mixed_numerics_by_value() -> None:
    rows = answers(':a :p 2 . :a :p 1.5 . :a :p "1e1"^^xsd:double .',
                   "SELECT (MIN(?v) AS ?lo) (MAX(?v) AS ?hi) { ?s :p ?v }")
    assert rows == [{"lo": lit("1.5", "decimal"), "hi": lit("1e1", "double")}]


# ------------------------ 3. dateTime with and without a timezone (XSD order)


def test_datetime_without_timezone_compares_when_more_than_14_hours_apart() -> None:
    data = (':a :t "2002-01-01T00:00:00"^^xsd:dateTime . '
            ':b :t "2002-01-02T00:00:00Z"^^xsd:dateTime . '
            ':c :t "2002-01-01T10:00:00Z"^^xsd:dateTime .')
    rows = answers(data, "SELECT ?x ?y { ?x :t ?u . ?y :t ?v FILTER(?u < ?v) }")
    # a < b (24 h apart); a and c are 10 h apart: indeterminate, an error
    assert sorted((str(r["x"])[-1], str(r["y"])[-1]) for r in rows) == [("a", "b"), ("c", "b")]


def test_datetime_with_and_without_timezone_are_never_equal() -> None:
    data = ':a :t "2002-01-01T00:00:00"^^xsd:dateTime . :b :t "2002-01-01T00:00:00Z"^^xsd:dateTime .'
    rows = answers(data, "SELECT ?x ?y { ?x :t ?u . ?y :t ?v FILTER(?u != ?v) }")
    assert len(rows) == 2


def test_datetime_in_two_timezones_compares_as_instants() -> None:
    data = (':a :t "2002-01-01T12:00:00+02:00"^^xsd:dateTime . '
            ':b :t "2002-01-01T10:00:00Z"^^xsd:dateTime .')
    rows = answers(data, "SELECT ?x { ?x :t ?u . :b :t ?v FILTER(?u = ?v) }")
    assert len(rows) == 2


def test_dates_compare_with_and_without_timezone() -> None:
    data = ':a :t "2002-01-01"^^xsd:date . :b :t "2002-01-03Z"^^xsd:date .'
    rows = answers(data, "SELECT ?x { ?x :t ?u . :b :t ?v FILTER(?u < ?v) }")
    assert values(rows, "x") == ["<http://ex/a>"]


# ------------------------------------------- 4. REDUCED: lax cardinality


def test_reduced_accepts_any_count_between_distinct_and_full() -> None:
    q = compile_query("SELECT REDUCED ?v { ?s ?p ?v }").query
    x = (("v", ("l", "x", "", "")),)
    view = {frozenset({("v", Literal("x"))}): 1}
    full = w3c.Expected([{"v": Literal("x")}] * 3)
    assert w3c._compare(q, view, full, lax=True) is None
    assert w3c._compare(q, {frozenset({("v", Literal("x"))}): 4}, full, lax=True) is not None
    assert w3c._compare(q, {}, full, lax=True) is not None
    assert w3c._compare(q, view, full, lax=False) is not None  # strict: the full count
    assert w3c._lax_problem([x, x], [x, x, x]) is None


def test_reduced_is_answered_within_its_bounds() -> None:
    rows = answers(':a :p "x" . :b :p "x" .', "SELECT REDUCED ?v { ?s :p ?v }")
    assert 1 <= len(rows) <= 2 and {r["v"] for r in rows} == {Literal("x")}


def test_reduced_query_parses_to_distinct() -> None:
    q = compile_query("SELECT REDUCED ?v { ?s ?p ?v }").query
    assert isinstance(q.pattern, A.Distinct)


# ------------------------------------------- found by the fuzzer (issue 15)


def test_filter_of_a_false_constant_removes_every_row() -> None:
    """rdflib's translation dropped a FILTER whose expression Python finds
    false (``if filters:``), so FILTER(0) kept every row."""
    for constant in ('0', 'false', '""', '"0"^^xsd:integer', '"NaN"^^xsd:double'):
        assert answers(":a :p 1 .", f"SELECT ?s {{ ?s :p ?o FILTER({constant}) }}") == []
        rows = answers(":a :p 1 . :a :q 2 .",
                       f"SELECT ?s ?w {{ ?s :p ?o OPTIONAL {{ ?s :q ?w FILTER({constant}) }} }}")
        assert rows == [{"s": URIRef("http://ex/a")}]


def test_literals_keep_their_lexical_form_whoever_builds_them_first() -> None:
    """rdflib normalised "01"^^xsd:integer to "1" in any Literal built before
    views.parse was imported (a case built at import time lost its form)."""
    import subprocess
    import sys

    code = ("import views.terms, rdflib; from rdflib import Literal, XSD; "
            "print(Literal('01', datatype=XSD.integer))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "01"


def test_a_date_cast_to_datetime_is_its_midnight() -> None:
    rows = answers(':a :p "2002-01-01"^^xsd:date . :b :p "2002-01-01Z"^^xsd:date .',
                   "SELECT ?s ?z { ?s :p ?o BIND(xsd:dateTime(?o) AS ?z) } ORDER BY ?s")
    assert values(rows, "z") == [lit("2002-01-01T00:00:00", "dateTime").n3(),
                                 lit("2002-01-01T00:00:00Z", "dateTime").n3()]


def test_an_ill_typed_literal_cast_to_string_is_its_text() -> None:
    """SPARQL 1.1 §17.5: xsd:string of any literal; an ill-typed one has no
    value, so its lexical form."""
    rows = answers(':a :p "abc"^^xsd:integer .', "SELECT ?z { ?s :p ?o BIND(xsd:string(?o) AS ?z) }")
    assert rows == [{"z": lit("abc")}]


def test_an_ill_typed_boolean_cast_to_a_number_is_an_error() -> None:
    rows = answers(':a :p "tru"^^xsd:boolean .', "SELECT ?s ?z { ?s :p ?o BIND(xsd:integer(?o) AS ?z) }")
    assert rows == [{"s": URIRef("http://ex/a")}]


def test_durations_compare_by_the_xsd_partial_order_across_their_types() -> None:
    data = (':a :d "P1M"^^xsd:yearMonthDuration . :b :d "P40D"^^xsd:dayTimeDuration . '
            ':c :d "P30D"^^xsd:duration . :e :d "PT720H"^^xsd:dayTimeDuration .')
    rows = answers(data, "SELECT ?x ?y { ?x :d ?u . ?y :d ?v FILTER(?u < ?v) }")
    # P1M is 28 to 31 days: before 40 days, indeterminate against 30 (an error)
    assert sorted((str(r["x"])[-1], str(r["y"])[-1]) for r in rows) == [("a", "b"), ("c", "b"),
                                                                         ("e", "b")]
    rows = answers(data, "SELECT ?x ?y { ?x :d ?u . ?y :d ?v FILTER(?u = ?v && ?x != ?y) }")
    assert sorted((str(r["x"])[-1], str(r["y"])[-1]) for r in rows) == [("c", "e"), ("e", "c")]


def test_language_tagged_strings_with_one_tag_are_ordered() -> None:
    data = ':a :p "b"@en . :b :p "a"@EN . :c :p "a"@fr .'
    rows = answers(data, "SELECT ?x ?y { ?x :p ?u . ?y :p ?v FILTER(?u < ?v) }")
    assert [(str(r["x"])[-1], str(r["y"])[-1]) for r in rows] == [("b", "a")]


def test_nan_equals_nothing_not_even_itself() -> None:
    rows = answers(':a :p "NaN"^^xsd:double .', "SELECT ?s { ?s :p ?o FILTER(?o = ?o) }")
    assert rows == []
    rows = answers(':a :p "NaN"^^xsd:double .', "SELECT ?s { ?s :p ?o FILTER(sameTerm(?o, ?o)) }")
    assert len(rows) == 1


def test_ebv_of_an_ill_typed_number_is_false() -> None:
    """SPARQL 1.1 §17.2.2 (pyoxigraph errs instead: its deviation D8)."""
    rows = answers(':a :p "abc"^^xsd:integer .', "SELECT ?s { ?s :p ?o FILTER(!?o) }")
    assert len(rows) == 1


def test_year_month_day_and_timezone_of_a_date() -> None:
    """XPath's year-from-date and friends (pyoxigraph agrees; SPARQL 1.1 names
    dateTime only): HOURS of a date stays an error."""
    rows = answers(':a :p "2002-01-03-05:00"^^xsd:date .',
                   "SELECT ?y ?m ?d ?z ?tz ?h { ?s :p ?o BIND(YEAR(?o) AS ?y) BIND(MONTH(?o) AS ?m) "
                   "BIND(DAY(?o) AS ?d) BIND(TIMEZONE(?o) AS ?z) BIND(TZ(?o) AS ?tz) "
                   "BIND(HOURS(?o) AS ?h) }")
    assert rows == [{"y": lit("2002", "integer"), "m": lit("1", "integer"), "d": lit("3", "integer"),
                     "z": lit("-PT5H", "dayTimeDuration"), "tz": lit("-05:00")}]


def test_doubles_cast_to_string_as_xpath_writes_them() -> None:
    """F&O 3.1 §19.1.2.2: decimal notation from 1e-6 up to 1e6, else the XSD
    canonical form (``1E10`` lacked its ``.0``, ``1e-05`` was Python's)."""
    data = ':a :p "1e10"^^xsd:double . :b :p "0.00001"^^xsd:double . :c :p "1.2345678912e-7"^^xsd:double .'
    rows = answers(data, "SELECT ?s ?z { ?s :p ?o BIND(xsd:string(?o) AS ?z) } ORDER BY ?s")
    assert [str(r["z"]) for r in rows] == ["1.0E10", "0.00001", "1.2345678912E-7"]


def test_order_by_a_variable_the_query_does_not_project_is_refused() -> None:
    """ORDER BY is applied to the projected solutions when read; SPARQL orders
    before projecting, so ``SELECT ?z … ORDER BY ?s`` was silently unordered."""
    import pytest

    from views.errors import UnsupportedFeature

    with pytest.raises(UnsupportedFeature, match="does not project"):
        compile_query("SELECT ?z { ?s ?p ?z } ORDER BY ?s")
    compile_query("SELECT * { ?s ?p ?z } ORDER BY ?s")  # projected: fine



def test_a_computed_decimal_has_one_form_per_value() -> None:
    """A decimal an expression computes has one lexical form per value,
    whatever the operands' forms (fuzzer seed 8989: ``?o - ?o`` over "1.50"
    and "1.0" made two groups, "0.00" and "0.0"); each value is
    pyoxigraph's for the same expression."""
    from decimal import Decimal

    import pyoxigraph as ox
    from rdflib import XSD

    from views.functions import arithmetic

    def dec(s: str) -> Literal:
        return Literal(s, datatype=XSD.decimal)

    same = [[("-", "1.50", "1.50"), ("-", "1.0", "1.0"), ("-", "0.0", "0.00"), ("*", "0.000", "7")],
            [("+", "1.25", "0.25"), ("+", "1.20", "0.30"), ("*", "0.50", "3.000")],
            [("*", "2.50", "4"), ("+", "9.90", "0.10")], [("/", "1", "8"), ("-", "0.250", "0.125")]]
    store = ox.Store()
    for cases in same:
        forms = set()
        for op, a, b in cases:
            ours = arithmetic(op, dec(a), dec(b))
            theirs = next(iter(store.query(
                f"SELECT ({a} {op} {b} AS ?x) WHERE {{}}")))["x"]  # type: ignore[index]
            assert Decimal(str(ours)) == Decimal(theirs.value), (op, a, b)
            forms.add(str(ours))
        assert len(forms) == 1, forms


def test_an_integer_past_the_largest_double_promotes_to_infinity() -> None:
    """XPath promotes an integer to xs:double with IEEE 754's overflow (F&O
    3.1 §4.2, §19.1.2.2): 10⁴⁰⁰ becomes INF, -10⁴⁰⁰ -INF; Python's ``float``
    raised OverflowError on it, which failed the job. Comparisons and
    arithmetic with a double, a cast, and both signs; pyoxigraph cannot
    oracle it (its integers are 64-bit), so the answers are the spec's."""
    big = "1" + "0" * 400
    data = f':a :p {big} . :b :p -{big} .'
    rows = answers(data, "SELECT ?s ?m ?d ?lt ?eq { ?s :p ?o BIND(?o * 2.0e0 AS ?m) "
                         "BIND(xsd:double(?o) AS ?d) BIND(?o < 1.0e0 AS ?lt) "
                         "BIND(?o = \"INF\"^^xsd:double AS ?eq) } ORDER BY ?s")
    inf, minus = lit("INF", "double"), lit("-INF", "double")
    true, false = lit("true", "boolean"), lit("false", "boolean")
    assert rows == [{"s": URIRef("http://ex/a"), "m": inf, "d": inf, "lt": false, "eq": true},
                    {"s": URIRef("http://ex/b"), "m": minus, "d": minus, "lt": true, "eq": false}]
    kept = answers(data, "SELECT ?s { ?s :p ?o FILTER(?o > 1.0e300) }")
    assert kept == [{"s": URIRef("http://ex/a")}]


def test_round_takes_a_half_toward_positive_infinity() -> None:
    """fn:round (F&O 3.1 §4.4.4) rounds a half toward positive infinity:
    ROUND(-0.5) is 0, not -1 (Python's ROUND_HALF_UP goes away from zero).
    Found by the fuzzer (seed 10404: a FILTER on the EBV of ROUND(-0.5)
    kept no row where pyoxigraph kept every one); the answers here are
    pyoxigraph's."""
    data = ":a :p -0.5 . :b :p -1.5 . :c :p 2.5 . :d :p -2.5 . :e :p -0.4 ."
    rows = answers(data, "SELECT ?s ?r { ?s :p ?o BIND(ROUND(?o) AS ?r) } ORDER BY ?s")
    assert [r["r"] for r in rows] == [lit("0.0", "decimal"), lit("-1.0", "decimal"),
                                      lit("3.0", "decimal"), lit("-2.0", "decimal"),
                                      lit("0.0", "decimal")]
    assert answers(":a :p 1 .", "SELECT ?s { ?s :p ?o FILTER(!ROUND(-0.5)) }") == \
        [{"s": URIRef("http://ex/a")}]


def test_substr_takes_integer_positions_only() -> None:
    """SUBSTR's positions are xsd:integer (SPARQL 1.1 §17.4.3.3), a derived
    type too; a decimal or a double, even a whole one, is a type error (it
    was rounded, as XPath's fn:substring does). The answers are
    pyoxigraph's."""
    data = (':a :p "1.5"^^xsd:decimal . :b :p "1.0E0"^^xsd:double . :c :p "2.0"^^xsd:decimal . '
            ':d :p "2"^^xsd:int . :e :p 0 . :f :p -1 . :g :p 5 .')
    rows = answers(data, 'SELECT ?s ?x { ?s :p ?o BIND(SUBSTR("abcd", ?o) AS ?x) } ORDER BY ?s')
    assert [r.get("x") for r in rows] == [None, None, None, lit("bcd"), lit("abcd"),
                                          lit("abcd"), lit("")]
    rows = answers(data, 'SELECT ?s ?x { ?s :p ?o BIND(SUBSTR("abcd", 2, ?o) AS ?x) } ORDER BY ?s')
    assert [r.get("x") for r in rows] == [None, None, None, lit("bc"), lit(""), lit(""),
                                          lit("bcd")]


def test_a_signed_number_in_an_expression_is_the_term_it_spells() -> None:
    """SPARQL's tokens are longest-match (§19.8 [146]–[154]): ``-0`` in an
    expression is the one token ``"-0"^^xsd:integer``, as in a pattern or
    VALUES, not unary minus applied to ``0``. rdflib's grammar read the sign
    as an operator there: ``STR(-0)`` was ``"0"``, ``STR(+1.50)`` ``"1.5"``,
    and ``-0`` from VALUES was not sameTerm the ``-0`` of a FILTER. With a
    space, ``- 0`` is the operator; after an operand, ``2 -1`` is a
    subtraction ([116]). The rows are the spec's: pyoxigraph keeps numbers
    by value (``STR(-0)`` is ``"0"`` there)."""
    rows = answers(":a :p 1 .", "SELECT ?s ?x ?y ?z ?w ?b ?d ?e ?f { ?s :p ?o "
                   "BIND(STR(-0) AS ?x) BIND(STR(+1.50) AS ?y) BIND(STR(-1.0e0) AS ?z) "
                   "BIND(STR(-0010.50) AS ?w) BIND(-0 AS ?b) BIND(?o -1 AS ?d) "
                   "BIND(STR(- 0) AS ?e) BIND(-2*3 AS ?f) }")
    assert rows == [{"s": URIRef("http://ex/a"), "x": lit("-0"), "y": lit("+1.50"),
                     "z": lit("-1.0e0"), "w": lit("-0010.50"), "b": lit("-0", "integer"),
                     "d": lit("0", "integer"), "e": lit("0"), "f": lit("-6", "integer")}]
    same = answers(':a :p "-0"^^xsd:integer .',
                   "SELECT ?s { ?s :p ?o FILTER(sameTerm(?o, -0)) }")
    assert same == [{"s": URIRef("http://ex/a")}]


def test_a_prefixed_names_escapes_are_not_in_its_iri() -> None:
    """``:a\\.b`` is ``<http://ex/a.b>``: the backslash of a local name's
    escape is dropped (SPARQL 1.1 §4.1.1.1, §19.8 [173]), a ``%41`` kept as
    written ([171]). rdflib's grammar kept the backslash (no row matched,
    and a BIND of it failed to serialise); pyoxigraph agrees with these."""
    rows = answers(":x :p <http://ex/a.b> , <http://ex/c%41> .",
                   "SELECT ?s ?e ?t { ?s :p :a\\.b . ?s :p :c%41 "
                   "BIND(:e\\~f\\-g\\=h AS ?e) BIND(:p\\?\\#\\/ AS ?t) }")
    assert rows == [{"s": URIRef("http://ex/x"), "e": URIRef("http://ex/e~f-g=h"),
                     "t": URIRef("http://ex/p?#/")}]


def test_a_float_is_single_precision() -> None:
    """xsd:float's value space is IEEE single precision (XSD 1.1 §3.3.5):
    ``"0.1"^^xsd:float`` is 0.100000001490116…, not xsd:double's 0.1, so the
    two are unequal; a decimal compared with a float is promoted to a float
    (F&O 3.1 §4.2), so ``0.1`` equals it; past the largest float a literal
    is INF, and 16777217 is 16777216. Before design note 210 floats held
    doubles: the first comparison was true, the cast gave 0.1, and a literal past
    the largest float was finite. The
    answers agree with pyoxigraph's, which the term fuzzer now also asks."""
    data = (':a :p "0.1"^^xsd:float . :b :p "0.2"^^xsd:float . '
            ':c :p "3.4028236e38"^^xsd:float . :d :p "16777217"^^xsd:float .')
    rows = answers(data, "SELECT ?s ?eq ?dec ?in { ?s :p ?o BIND(?o = 0.1e0 AS ?eq) "
                         "BIND(?o = 0.1 AS ?dec) BIND(xsd:double(?o) IN (0.10000000149011612e0, "
                         "0.20000000298023224e0, \"INF\"^^xsd:double, 16777216e0) AS ?in) } "
                         "ORDER BY ?s")
    true, false = lit("true", "boolean"), lit("false", "boolean")
    assert rows == [{"s": URIRef(f"http://ex/{s}"), "eq": false, "dec": d, "in": true}
                    for s, d in (("a", true), ("b", false), ("c", false), ("d", false))]
    above = answers(data, "SELECT ?s { ?s :p ?o FILTER(?o > 0.1e0 && ?o < 1) }")
    assert sorted(r["s"] for r in above) == [URIRef("http://ex/a"), URIRef("http://ex/b")]
    total = answers(data, "SELECT ?eq { { SELECT (SUM(?o) AS ?t) { ?s :p ?o FILTER(?o < 1) } } "
                          "BIND(?t = \"0.3\"^^xsd:float && DATATYPE(?t) = xsd:float AS ?eq) }")
    assert total == [{"eq": true}]  # 0.1f + 0.2f is 0.3f, in a float


def test_a_datetime_holds_any_year_and_any_precision() -> None:
    """XSD 1.1 §3.3.7, §D.2: a year has four digits or more (``0000`` is 1 BCE,
    ``-0001`` 2 BCE; a leading zero only in four), seconds any number of
    fractional digits. With Python's datetime every year outside 1–9999
    was ill-typed, ``…:00.0000001`` equalled ``…:00`` and ``…:00.9999999``
    was ill-typed (its microseconds rounded to a million). The rows are the
    spec's; pyoxigraph agrees with every one."""
    stamps = {"a": "-0001-12-31T24:00:00Z", "b": "0000-01-01T00:00:01Z",
              "c": "2002-01-01T00:00:00Z", "d": "2002-01-01T00:00:00.0000001Z",
              "e": "2002-01-01T00:00:00.9999999Z", "f": "10000-01-01T00:00:00Z"}
    data = " ".join(f':{k} :p "{v}"^^xsd:dateTime .' for k, v in stamps.items())
    rows = answers(data, "SELECT ?s ?o ?y ?sec { ?s :p ?o BIND(YEAR(?o) AS ?y) "
                         "BIND(SECONDS(?o) AS ?sec) } ORDER BY ?o")
    assert [(r["s"], r["y"], r["sec"]) for r in rows] == [
        (URIRef(f"http://ex/{k}"), lit(y, "integer"), lit(s, "decimal")) for k, y, s in
        (("a", "0", "0.0"), ("b", "0", "1.0"), ("c", "2002", "0.0"), ("d", "2002", "0.0000001"),
         ("e", "2002", "0.9999999"), ("f", "10000", "0.0"))]
    later = answers(data, 'SELECT ?s { ?s :p ?o FILTER(?o > "2002-01-01T00:00:00Z"^^xsd:dateTime '
                          '&& ?o < "2002-01-01T00:00:01Z"^^xsd:dateTime) }')
    assert sorted(r["s"] for r in later) == [URIRef("http://ex/d"), URIRef("http://ex/e")]
    first = answers(data, "SELECT (MIN(?o) AS ?m) { ?s :p ?o }")
    assert first == [{"m": lit(stamps["a"], "dateTime")}]


def test_a_datetime_the_calendar_refuses_is_ill_typed() -> None:
    """February 29th of a year not leap (1900: divisible by 100, not 400),
    a year with a leading zero past four digits: ill-typed, so ``<`` on
    them is an error and FILTER drops the row."""
    data = (':a :p "1900-02-29"^^xsd:date . :b :p "2000-02-29"^^xsd:date . '
            ':c :p "02002-01-01T00:00:00Z"^^xsd:dateTime .')
    rows = answers(data, 'SELECT ?s { ?s :p ?o FILTER(?o < "3000-01-01"^^xsd:date '
                         '|| ?o < "3000-01-01T00:00:00Z"^^xsd:dateTime) }')
    assert [r["s"] for r in rows] == [URIRef("http://ex/b")]


def test_a_number_with_whitespace_in_its_form_is_ill_typed() -> None:
    """RDF 1.1 §5.3: a literal is ill-typed when its lexical form is not in
    its datatype's lexical space, and XSD's lexical spaces hold no
    whitespace (the whiteSpace facet collapses text before a cast: F&O 3.1
    §19.2 strips it there). ``" 1 "^^xsd:integer`` was read as 1; now it
    compares with no number, while ``xsd:integer(" 12 ")`` is 12."""
    data = ':a :p " 1 "^^xsd:integer . :b :p "1"^^xsd:integer . :c :p "2.5 "^^xsd:double .'
    rows = answers(data, "SELECT ?s { ?s :p ?o FILTER(?o > 0) }")
    assert [r["s"] for r in rows] == [URIRef("http://ex/b")]
    cast = answers(":a :p 1 .", 'SELECT ?c { ?s :p ?o BIND(xsd:integer(" 12\\t") AS ?c) }')
    assert cast == [{"c": lit("12", "integer")}]


def test_a_duration_holds_any_size_and_any_precision() -> None:
    """XSD 1.1 §3.3.6: a duration's value is whole months and decimal
    seconds, of any size. Through Python's datetime ``PT0.0000001S``
    equalled ``PT0S``, ``P10000Y`` led past its years (an error), and
    ``P400Y`` against 146,097 days and a microsecond lost the microsecond
    to a double. ``PT1.S`` and ``PT.5S`` are seconds by XSD 1.1's
    duSecondFrag. The rows are the spec's; pyoxigraph agrees with each."""
    spans = {"a": "-PT0.0000001S", "b": "PT0S", "c": "PT.5S", "d": "PT1.S", "e": "P146097D",
             "f": "P146097DT0.000001S", "g": "P10000Y"}
    data = " ".join(f':{k} :p "{v}"^^xsd:duration .' for k, v in spans.items())
    rows = answers(data, "SELECT ?s ?o { ?s :p ?o } ORDER BY ?o")
    assert [str(r["s"])[-1] for r in rows] == ["a", "b", "c", "d", "e", "f", "g"]
    rows = answers(data, 'SELECT ?s { ?s :p ?o FILTER(?o > "P400Y"^^xsd:duration) }')
    assert sorted(str(r["s"])[-1] for r in rows) == ["f", "g"]
    rows = answers(data, 'SELECT ?s { ?s :p ?o FILTER(?o = "PT0S"^^xsd:dayTimeDuration) }')
    assert [str(r["s"])[-1] for r in rows] == ["b"]
    rows = answers(data, 'SELECT ?s { ?s :p ?o FILTER(?o = "PT1S"^^xsd:dayTimeDuration) }')
    assert [str(r["s"])[-1] for r in rows] == ["d"]


def test_a_time_with_more_digits_than_a_decimal_context_holds_is_exact() -> None:
    """Seconds to the 28th decimal place against a whole second: Python's
    default decimal context (28 digits) rounded their sum with the day's
    seconds, so the later instant equalled the earlier."""
    data = (':a :p "2002-01-01T00:00:00.0000000000000000000000000001Z"^^xsd:dateTime . '
            ':b :p "PT999999999999999999999999.000000000001S"^^xsd:dayTimeDuration .')
    rows = answers(data, 'SELECT ?s { ?s :p ?o FILTER(?o > "2002-01-01T00:00:00Z"^^xsd:dateTime '
                         '|| ?o > "PT999999999999999999999999S"^^xsd:dayTimeDuration) }')
    assert sorted(str(r["s"])[-1] for r in rows) == ["a", "b"]


def test_a_date_or_duration_spelled_with_other_digits_is_ill_typed() -> None:
    """XSD's digits are 0–9 (§3.3.6.1, §D.2); Python's ``\\d`` and ``int``
    take any Unicode decimal digit, so ``"٢٠٠٢-01-01"^^xsd:date`` equalled
    2002's first of January."""
    data = (':a :p "\u0662\u0660\u0660\u0662-01-01"^^xsd:date . :b :p "2002-01-01"^^xsd:date . '
            ':c :p "P\u0661D"^^xsd:dayTimeDuration . :d :p "P1D"^^xsd:dayTimeDuration .')
    rows = answers(data, 'SELECT ?s { ?s :p ?o FILTER(?o = "2002-01-01"^^xsd:date '
                         '|| ?o = "PT24H"^^xsd:dayTimeDuration) }')
    assert sorted(str(r["s"])[-1] for r in rows) == ["b", "d"]


def test_a_float_is_written_with_its_own_shortest_digits() -> None:
    """A float cast to a string is its shortest digits that single it out
    among floats (F&O 3.1 §19.1.2.2: a string that casts back to the same
    value; a double's are its shortest among doubles), and a computed float
    is written so. The float nearest 0.1 was written with the digits of
    its value as a double, ``"0.10000000149011612"``: a string unequal to
    ``"0.1"``. pyoxigraph and Saxon write these digits."""
    data = ':a :p "0.1"^^xsd:float . :b :p "0.2"^^xsd:float . :c :p "123456.7"^^xsd:float .'
    rows = answers(data, "SELECT ?s ?text ?third { ?s :p ?o BIND(xsd:string(?o) AS ?text) "
                         "BIND(?o / 3 AS ?third) } ORDER BY ?s")
    assert [(r["text"], r["third"]) for r in rows] == [
        (lit("0.1"), lit("0.033333335", "float")), (lit("0.2"), lit("0.06666667", "float")),
        (lit("123456.7"), lit("41152.234", "float"))]
    total = answers(data, "SELECT (SUM(?o) AS ?t) { ?s :p ?o FILTER(?o < 1) }")
    assert total == [{"t": lit("0.3", "float")}]


def test_iri_of_a_string_that_is_no_absolute_iri_is_an_error() -> None:
    """SPARQL 1.1 §17.4.2.8: IRI's result "must result in an absolute IRI".
    ``IRI("a b")`` was the IRI ``<a b>`` (a space: no IRI holds one) and,
    without a base, ``IRI("rel")`` the relative ``<rel>``; both are errors,
    as in pyoxigraph. With a base the relative one resolves."""
    data = ':a :p "a b" . :b :p "http://ex/c" . :c :p "rel" . :d :p "http://ex/{x}" .'
    query = "SELECT ?s ?i { ?s :p ?o BIND(IRI(?o) AS ?i) } ORDER BY ?s"
    rows = answers(data, query)
    assert [r.get("i") for r in rows] == [None, URIRef("http://ex/c"), None, None]
    rows = answers(data, "BASE <http://ex/base/> " + query)
    assert [r.get("i") for r in rows] == [None, URIRef("http://ex/c"), URIRef("http://ex/base/rel"), None]


def test_a_date_time_or_duration_cast_to_a_string_is_its_canonical_form() -> None:
    """F&O 3.1 §19.1.2.2: a cast to xsd:string writes the value's canonical
    form (XSD 1.1 §3.3.6.2, §3.3.7.2, §3.3.9.2), as it already did for
    numbers and booleans; the text was the literal's own form, so
    ``xsd:string("PT90M"^^xsd:dayTimeDuration)`` was ``"PT90M"``, not
    ``"PT1H30M"``. A cast to xsd:dateTime writes the canonical form too.
    STR keeps the lexical form. The strings are pyoxigraph's."""
    forms = {"a": ('"2002-01-01T24:00:00.000-00:00"^^xsd:dateTime', "2002-01-02T00:00:00Z"),
             "b": ('"2002-01-01T10:00:05.10+05:30"^^xsd:dateTime', "2002-01-01T10:00:05.1+05:30"),
             "c": ('"2002-01-01+00:00"^^xsd:date', "2002-01-01Z"),
             "d": ('"PT90M"^^xsd:dayTimeDuration', "PT1H30M"),
             "e": ('"-P1DT25H"^^xsd:dayTimeDuration', "-P2DT1H"),
             "f": ('"P1Y13M"^^xsd:yearMonthDuration', "P2Y1M"),
             "g": ('"P0Y"^^xsd:yearMonthDuration', "P0M"),
             "h": ('"-PT0.50S"^^xsd:duration', "-PT0.5S"),
             "i": ('"P1DT0.000S"^^xsd:duration', "P1D")}
    data = " ".join(f":{k} :p {v} ." for k, (v, _) in forms.items())
    rows = answers(data, "SELECT ?s ?text ?lex { ?s :p ?o BIND(xsd:string(?o) AS ?text) "
                         "BIND(STR(?o) AS ?lex) } ORDER BY ?s")
    assert [str(r["text"]) for r in rows] == [text for _, text in forms.values()]
    assert [str(r["lex"]) for r in rows] == [v.split('"')[1] for v, _ in forms.values()]
    cast = answers(data, "SELECT ?t { ?s :p ?o FILTER(?s IN (:a, :c)) BIND(xsd:dateTime(?o) AS ?t) } "
                         "ORDER BY ?t")
    assert cast == [{"t": lit("2002-01-01T00:00:00Z", "dateTime")},
                    {"t": lit("2002-01-02T00:00:00Z", "dateTime")}]


def test_strlang_with_a_tag_that_is_not_bcp47_is_an_error() -> None:
    """RDF 1.1 §3.3: a language tag is a well-formed BCP 47 one; STRLANG
    made ``"a"@abcdefghi`` (nine letters), which no parser of RDF reads
    back. pyoxigraph errs too."""
    data = ':a :p "abcdefghi" . :b :p "en-GB" . :c :p "x-whatever" . :d :p "en-a" .'
    rows = answers(data, 'SELECT ?s ?t { ?s :p ?o BIND(STRLANG("x", ?o) AS ?t) } ORDER BY ?s')
    assert [r.get("t") for r in rows] == [None, lit("x", lang="en-GB"), lit("x", lang="x-whatever"),
                                          None]


def test_a_sum_of_floats_is_rounded_once_to_a_float() -> None:
    """A SUM of floats is the float nearest their exact sum (design notes
    153, 220): 1 + 2^-24 + 2^-80 lies just past the halfway point between
    1 and 1 + 2^-23, so it is 1 + 2^-23 (``"1.0000001"``). Through the
    double nearest the sum — the halfway point itself — ties-to-even gave
    1. (XPath's own sum adds float by float, in an order of its own, and
    gives 1 too: the exact sum is this engine's rule, note 153.)"""
    data = (':a :p "1"^^xsd:float . :b :p "5.9604645E-8"^^xsd:float . '
            ':c :p "8.2718061E-25"^^xsd:float .')
    assert answers(data, "SELECT (SUM(?o) AS ?t) { ?s :p ?o }") == [{"t": lit("1.0000001", "float")}]


def test_group_by_an_expression_without_a_name() -> None:
    """SPARQL 1.1 §11.1: ``GROUP BY (?o + 1)`` groups by the expression's
    value (an error is a key of its own) though no variable names it.
    rdflib's algebra gave the key as None, which failed as "unsupported
    feature: expression None"; it is bound to a hidden variable now. The
    counts are pyoxigraph's."""
    data = ':a :p 1, 2, "x", "y"@en . :b :p 1, 3 . :c :p 2 .'
    rows = answers(data, "SELECT (COUNT(*) AS ?n) { ?s :p ?o } GROUP BY (?o + 1)")
    assert sorted(int(r["n"]) for r in rows) == [1, 2, 2, 2]  # 2, 3, 4 and the error
    rows = answers(data, "SELECT ?k (SUM(?o) AS ?t) { ?s :p ?o FILTER(isNumeric(?o)) } "
                         "GROUP BY (?o > 1) (STR(?s) AS ?k) ORDER BY ?k ?t")
    assert [(str(r["k"])[-1], int(r["t"])) for r in rows] == [("a", 1), ("a", 2), ("b", 1),
                                                               ("b", 3), ("c", 2)]


def test_a_select_expression_names_an_earlier_one_in_a_grouped_query() -> None:
    """§18.2.4.1: the SELECT expressions are Extends in their written order,
    so ``(?t * 2 AS ?u)`` after ``(SUM(?o) AS ?t)`` doubles the sum. rdflib
    read ``?t`` there as SAMPLE(?t) over the group's members, where ?t is
    unbound: ``?u`` was never bound (design note 223). (pyoxigraph refuses
    the query, reading §11.4 strictly.) ORDER BY an aggregate the query
    does not project is refused in words, not as ``?__agg_1__``."""
    data = ":a :p 1, 2 . :b :p 4 ."
    rows = answers(data, "SELECT ?s (SUM(?o) AS ?t) (?t * 2 AS ?u) { ?s :p ?o } GROUP BY ?s "
                         "ORDER BY ?s")
    assert [(str(r["s"])[-1], int(r["t"]), int(r["u"])) for r in rows] == [("a", 3, 6), ("b", 4, 8)]
    with pytest.raises(UnsupportedFeature, match="ORDER BY an aggregate"):
        compile_query(QPREFIXES + "SELECT ?s { ?s :p ?o } GROUP BY ?s ORDER BY DESC(COUNT(*))")


def test_a_decimal_cast_to_a_string_keeps_every_digit() -> None:
    """F&O 3.1 §19.1.2.2: a decimal's string is its canonical form, exactly.
    The cast normalised in Python's default decimal context (28 digits):
    ``xsd:string(1.000000000000000000000000000000001)`` was ``"1"`` and
    ``123456789012345678901234567890.5`` became ``"123456789012345678901234567900"``
    (design note 224)."""
    data = (':a :p "1.000000000000000000000000000000001"^^xsd:decimal . '
            ':b :p "123456789012345678901234567890.5"^^xsd:decimal . :c :p "-0.50"^^xsd:decimal .')
    rows = answers(data, "SELECT ?s ?t { ?s :p ?o BIND(xsd:string(?o) AS ?t) } ORDER BY ?s")
    assert [str(r["t"]) for r in rows] == ["1.000000000000000000000000000000001",
                                           "123456789012345678901234567890.5", "-0.5"]

"""The dictionary's sort keys (``views.sortkey``) order terms as ORDER BY's
total order does (``views.compare.order_key`` of the term): every pair of a
catalogue rich in the terms that order hard (every numeric type and form,
NaN, infinities, signed zeros, long and tiny numbers, strings with NUL and
astral characters, tagged strings, dateTimes either side of a timezone,
dates, durations, booleans, ill-typed and unknown literals, IRIs, blank
nodes), and random numbers, strings and instants against one another."""

from __future__ import annotations

import itertools
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st
from rdflib import BNode, Literal, URIRef
from rdflib.term import Identifier

from tests.engine.fuzz_terms import BNODES, CATALOGUE, IRIS, X, lit
from views.compare import order_key
from views.sortkey import sort_key
from views.terms import fields_of, term_of

EXTRA: tuple[Identifier, ...] = (
    lit("123456789012345678901234567890", "integer"), lit("-123456789012345678901234567890", "integer"),
    lit("0.000000000000000000000000000001", "decimal"), lit("-0.0", "decimal"),
    lit("-0.00000000000000000000000000001", "decimal"), lit("100", "decimal"), lit("1e2", "double"),
    lit("4.9E-324", "double"), lit("-4.9E-324", "double"), lit("1.7976931348623157E308", "double"),
    lit("-0.0E0", "double"), lit("0.0E0", "double"), lit("0.1", "double"), lit("0.1", "decimal"),
    lit("0.1", "float"), lit("-1", "double"), lit("-1.5", "decimal"), lit("-1.25", "decimal"),
    lit("-1.2", "decimal"), lit("99", "byte"), lit("300", "byte"), lit("-5", "nonNegativeInteger"),
    lit("a\x00b"), lit("a\x00"), lit("a\x01"), lit("a"), lit("\U0001F600"), lit("\uffff"),
    lit("ab\x00", lang="en"), lit("ab", lang="en"), lit("ab", lang="de"),
    lit("9999-12-31T23:00:00-05:00", "dateTime"), lit("0001-01-01T00:00:00", "dateTime"),
    lit("2002-01-01T24:00:00", "dateTime"), lit("2002-01-01T23:59:59.999999Z", "dateTime"),
    lit("P99999999999Y", "duration"), lit("-P1D", "dayTimeDuration"), lit("PT0S", "dayTimeDuration"),
    lit("PT0.0000001S", "dayTimeDuration"), lit("-PT0.0000001S", "duration"), lit("PT.5S", "duration"),
    lit("P10000Y", "yearMonthDuration"), lit("-P10000Y", "duration"), lit("P\u0661D", "duration"),
    lit("x", "boolean"), lit("", "integer"), lit("a", X + "anyURI"), lit("2002-01-01", "gYear"),
    URIRef("http://ex/a\x00"), URIRef("http://ex/"), URIRef("http://ex/é"), BNode("a"), BNode("a0"),
)


def _sign(x: object, y: object) -> int:
    return (x > y) - (x < y)  # type: ignore[operator]


def _agree(terms: list[Identifier]) -> None:
    fields = list(dict.fromkeys(fields_of(t) for t in terms))
    keys = {f: sort_key(*f) for f in fields}
    orders = {f: order_key(term_of(*f)) for f in fields}
    for a, b in itertools.combinations(fields, 2):
        assert _sign(keys[a], keys[b]) == _sign(orders[a], orders[b]), (a, b)
        assert keys[a] != keys[b], (a, b)  # one key per term: a group's extreme is one term


def test_sort_keys_order_the_catalogue_as_order_by_does() -> None:
    _agree([*CATALOGUE, *EXTRA, *IRIS, *BNODES])


_DECIMALS = st.decimals(allow_nan=False, allow_infinity=False, places=None)
_NUMBERS = st.one_of(
    st.integers(-10**30, 10**30).map(lambda i: lit(str(i), "integer")),
    _DECIMALS.map(lambda d: lit(format(d, "f"), "decimal")),
    st.floats(allow_nan=True, allow_infinity=True).map(lambda f: lit(repr(f).replace("inf", "INF")
                                                                    .replace("nan", "NaN"), "double")),
    st.floats(width=32).map(lambda f: lit(repr(f).replace("inf", "INF").replace("nan", "NaN"), "float")))
_OTHERS = st.one_of(
    st.text(max_size=6).map(lit),
    st.text(max_size=6).map(lambda s: Literal(s, lang="en")),
    st.datetimes().map(lambda d: lit(d.isoformat(), "dateTime")),
    st.datetimes().map(lambda d: lit(d.isoformat() + "+14:00", "dateTime")),
    st.text(alphabet="ab/#é\x00", max_size=5).map(lambda s: URIRef("http://ex/" + s)))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_NUMBERS, _OTHERS), min_size=2, max_size=12))
def test_sort_keys_order_random_terms_as_order_by_does(terms: list[Identifier]) -> None:
    _agree(terms)


def test_a_number_keys_by_its_exact_value() -> None:
    """1, 1.0 and 1.0E0 tie on value (the datatype then decides), and a
    decimal just above a double's exact value sorts after the double."""
    near = Decimal.from_float(0.1) + Decimal("1e-60")
    _agree([lit("1", "integer"), lit("1.0", "decimal"), lit("1.0E0", "double"),
            lit(format(near, "f"), "decimal"), lit("0.1", "double")])
    one = [sort_key(*fields_of(t))[:8] for t in (lit("1", "integer"), lit("1.0E0", "double"))]
    assert one[0] == one[1]

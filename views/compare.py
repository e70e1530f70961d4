"""Value comparison and ordering of RDF terms: the one definition the engine,
the reference evaluator and every executor use (architecture decision 8).

- ``compare``: SPARQL's ``<``, ``>``, ``<=``, ``>=`` (SPARQL 1.1 §17.3 operator
  mapping): numbers with type promotion (XPath op:numeric-less-than), strings
  by code point (language-tagged ones with the same tag too), booleans, xsd:dateTime and xsd:date by the XML Schema partial
  order (a timezoned and an untimezoned value compare through the ±14 h range
  of the implicit timezone; inside it the comparison is indeterminate, a type
  error), durations by the XSD partial order (all three types).
- ``equals``: SPARQL's ``=`` (op:numeric-equal and friends, else RDFterm-equal).
- ``order_key``: ORDER BY's total order (SPARQL 1.1 §15.1): unbound < blank
  nodes < IRIs < literals; literals by ``<`` wherever it is defined, then a
  deterministic fallback (datatype, lexical form, language).
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from rdflib import XSD
from rdflib.term import BNode, Identifier, Literal, URIRef

from views.durations import DURATION_TYPES, Duration, duration_key, duration_of
from views.durations import order as duration_order
from views.moments import Moment, date_moment_of, moment_of
from views.terms import (
    EXACT,
    RDF_LANGSTRING,
    ExprError,
    Number,
    is_plain_string,
    number_of,
    numeric_family,
    numeric_type,
    numeric_value,
    promote,
    to_kind,
)

_FOURTEEN_HOURS = Decimal(14 * 3600)


def datetime_value(t: Identifier) -> Moment:
    """The value of an xsd:dateTime literal (with or without a timezone); an
    ExprError if it is not one or ill-typed."""
    if not isinstance(t, Literal) or t.datatype != XSD.dateTime:
        raise ExprError("not a dateTime")
    return moment_of(str(t))


def date_value(t: Identifier) -> Moment:
    """An xsd:date as the dateTime of its first instant (XSD 1.1 §3.3.9)."""
    if not isinstance(t, Literal) or t.datatype != XSD.date:
        raise ExprError("not a date")
    return date_moment_of(str(t))


def duration_value(t: Identifier) -> Duration:
    """The value of an xsd:duration or a subtype (``views.durations``)."""
    if not isinstance(t, Literal) or t.datatype not in DURATION_TYPES:
        raise ExprError("not a duration")
    return duration_of(str(t), t.datatype)


def _instants(x: Moment, y: Moment) -> int:
    """-1/0/1 for two points in time by the XML Schema order relation
    (XSD 1.1 §3.3.7 / XSD 1.0 §3.2.7.4): an untimezoned value stands for any
    time in its ±14 h range; an answer inside that range is indeterminate."""
    if (x.tz is None) == (y.tz is None):
        return _cmp(x.instant, y.instant)
    if x.tz is None:
        return -_instants(y, x)
    if x.instant < EXACT.subtract(y.local, _FOURTEEN_HOURS):
        return -1
    if x.instant > EXACT.add(y.local, _FOURTEEN_HOURS):
        return 1
    raise ExprError("indeterminate comparison of a timezoned and an untimezoned value")


def _cmp(x: Any, y: Any) -> int:
    return (x > y) - (x < y)


def _numeric(a: Identifier, b: Identifier) -> int:
    ka, kb = numeric_type(a), numeric_type(b)
    assert ka is not None and kb is not None
    kind = promote(ka, kb)
    x, y = to_kind(numeric_value(a), kind), to_kind(numeric_value(b), kind)
    if isinstance(x, float) and (math.isnan(x) or math.isnan(y)):  # type: ignore[arg-type]
        raise ExprError("NaN is not ordered")
    return _cmp(x, y)


def compare(a: Identifier, b: Identifier) -> int:
    """-1/0/1 for two comparable terms (SPARQL 1.1 §17.3), else an ExprError.

    >>> from rdflib import Literal
    >>> compare(Literal("1.5", datatype=XSD.decimal), Literal("02", datatype=XSD.integer))
    -1
    """
    if not (isinstance(a, Literal) and isinstance(b, Literal)):
        raise ExprError("only literals are ordered")
    if numeric_type(a) and numeric_type(b):
        return _numeric(a, b)
    if is_plain_string(a) and is_plain_string(b):
        return _cmp(str(a), str(b))
    if a.language is not None and a.language == b.language:
        return _cmp(str(a), str(b))  # an extension SPARQL 1.2 makes: one tag, by code point
    da, db = a.datatype, b.datatype
    if da in DURATION_TYPES and db in DURATION_TYPES:
        return duration_order(duration_value(a), duration_value(b))
    if da != db:
        raise ExprError("incomparable terms")
    if da == XSD.boolean:
        return _cmp(_boolean(a), _boolean(b))
    if da == XSD.dateTime:
        return _instants(datetime_value(a), datetime_value(b))
    if da == XSD.date:
        return _instants(date_value(a), date_value(b))
    raise ExprError("incomparable terms")


def _boolean(t: Literal) -> bool:
    return _boolean_of(str(t))


def _boolean_of(lexical: str) -> bool:
    if lexical not in ("true", "false", "1", "0"):
        raise ExprError("ill-typed boolean")
    return lexical in ("true", "1")


def equals(a: Identifier, b: Identifier) -> bool:
    """SPARQL's ``=`` (§17.3): the XPath equality of the operands' values
    where both have one (NaN equals nothing; a timezoned and an untimezoned
    dateTime are never equal), else RDFterm-equal (§17.4.1.7): the same term,
    false for terms of different known kinds, an error for two literals we
    cannot tell apart by value."""
    if isinstance(a, Literal) and isinstance(b, Literal):
        try:
            return compare(a, b) == 0
        except ExprError:
            pass
        if a == b and not _nan(a):
            return True
        if _known(a) and _known(b):
            return False
        raise ExprError("literals of unknown datatypes with different forms")
    return a == b and type(a) is type(b)


def _nan(t: Literal) -> bool:
    try:
        v = numeric_value(t)
    except ExprError:
        return False
    return isinstance(v, float) and math.isnan(v)


def _known(t: Literal) -> bool:
    """A literal whose value we know (a well-formed one of the types ``compare``
    orders, or a language-tagged string): differing from another such term
    means differing in value."""
    if t.language is not None or is_plain_string(t):
        return True
    try:
        _value_of(t)
        return True
    except ExprError:
        return False


def _value_of(t: Literal) -> object:
    return _value_of_form(str(t), t.datatype)


def _value_of_form(lexical: str, datatype: URIRef | None) -> object:
    """The value of a literal of this form and datatype (not a string)."""
    if datatype is not None and numeric_family(datatype) is not None:
        return number_of(lexical, datatype)
    if datatype in DURATION_TYPES:
        return duration_of(lexical, datatype)
    reader = _READERS.get(datatype) if datatype is not None else None
    if reader is None:
        raise ExprError("no known value")
    return reader(lexical)


_READERS = {XSD.boolean: _boolean_of, XSD.dateTime: moment_of, XSD.date: date_moment_of}


def same_term(a: Identifier, b: Identifier) -> bool:
    """sameTerm (§17.4.1.8): term equality, not value equality."""
    return a == b and type(a) is type(b)


# ------------------------------------------------------------- ORDER BY


def order_key(t: Identifier | None) -> tuple:  # type: ignore[type-arg]
    """A total order for ORDER BY, MIN, MAX and SAMPLE (SPARQL 1.1 §15.1):
    unbound < blank nodes < IRIs < literals. Literals that ``compare`` orders
    sit in one group per comparable family, keyed so that the key order
    agrees with ``<`` (a timezoned and an untimezoned instant compare as if
    the latter were UTC, which is inside the range the order relation leaves
    indeterminate); ties and incomparable literals fall back to datatype,
    lexical form and language.

    >>> from rdflib import Literal
    >>> sorted([Literal(2), Literal("1.5", datatype=XSD.decimal), None], key=order_key)
    [None, rdflib.term.Literal('1.5', datatype=rdflib.term.URIRef('http://www.w3.org/2001/XMLSchema#decimal')), rdflib.term.Literal('2', datatype=rdflib.term.URIRef('http://www.w3.org/2001/XMLSchema#integer'))]
    """
    if t is None:
        return (0,)
    if isinstance(t, BNode):
        return (1, str(t))
    if isinstance(t, URIRef):
        return (2, str(t))
    assert isinstance(t, Literal)
    return literal_order_key(str(t), t.datatype, t.language)


def literal_order_key(lexical: str, datatype: URIRef | None, lang: str | None) -> tuple:  # type: ignore[type-arg]
    """``order_key`` of the literal of this lexical form, datatype and
    language, without the literal (the dictionary's sort keys,
    ``views.sortkey``)."""
    group, value = _family(lexical, datatype, lang)
    named = RDF_LANGSTRING if lang is not None else datatype if datatype is not None else XSD.string
    return (3, group, value, str(named), lexical, lang or "")


def _family(lexical: str, datatype: URIRef | None, lang: str | None) -> tuple[int, Any]:
    """The comparable family of a literal and its value's key within it."""
    if lang is not None:
        return 3, (lang, lexical)
    if datatype is None or datatype == XSD.string:
        return 2, lexical
    if numeric_family(datatype) is not None:
        try:
            v: Number = number_of(lexical, datatype)
        except ExprError:
            return 9, 0
        if isinstance(v, float) and math.isnan(v):
            return 1, 0
        return 0, v
    try:
        value = _value_of_form(lexical, datatype)
    except ExprError:
        return 9, 0
    if isinstance(value, Moment):  # an untimezoned one as if in UTC
        return (4 if datatype == XSD.dateTime else 5), value.instant
    if isinstance(value, Duration):  # a linear extension of their partial order
        return 7, duration_key(value)
    return 6, value  # booleans

"""RDF term helpers for the expression language (SPARQL 1.1 §17.1, XSD types)."""

from __future__ import annotations

import hashlib
import math
from decimal import Decimal, InvalidOperation

from rdflib import XSD
from rdflib.term import BNode, Identifier, Literal, URIRef

Number = int | Decimal | float


class ExprError(Exception):
    """A SPARQL expression evaluation error (§17.3): not a failure of the engine."""


RDF_LANGSTRING = URIRef("http://www.w3.org/1999/02/22-rdf-syntax-ns#langString")
INTEGER_TYPES = {XSD[t] for t in (
    "integer", "int", "long", "short", "byte", "nonNegativeInteger", "nonPositiveInteger",
    "negativeInteger", "positiveInteger", "unsignedLong", "unsignedInt", "unsignedShort",
    "unsignedByte")}
NUMERIC_RANK = {XSD.integer: 0, XSD.decimal: 1, XSD.float: 2, XSD.double: 3}
TRUE = Literal("true", datatype=XSD.boolean)
FALSE = Literal("false", datatype=XSD.boolean)


def boolean(v: bool) -> Literal:
    return TRUE if v else FALSE


def numeric_type(t: Identifier) -> URIRef | None:
    """The numeric family of a literal (integer, decimal, float, double) or None."""
    if not isinstance(t, Literal) or t.datatype is None:
        return None
    if t.datatype in INTEGER_TYPES:
        return XSD.integer
    return t.datatype if t.datatype in NUMERIC_RANK else None


def numeric_value(t: Identifier) -> Number:
    """The value of a numeric literal; an ExprError if it is not one or ill-typed."""
    kind = numeric_type(t)
    if kind is None:
        raise ExprError("not a number")
    lex = str(t).strip()
    try:
        if kind == XSD.integer:
            if not lex or any(c not in "+-0123456789" for c in lex):
                raise ValueError(lex)
            return int(lex)
        if kind == XSD.decimal:
            if any(c in "eEnN" for c in lex):
                raise ValueError(lex)
            return Decimal(lex)
        return _parse_float(lex)
    except (ValueError, InvalidOperation):
        raise ExprError(f"ill-typed {kind}: {lex}") from None


def _parse_float(lex: str) -> float:
    special = {"INF": math.inf, "+INF": math.inf, "-INF": -math.inf, "NaN": math.nan}
    if lex in special:
        return special[lex]
    if lex.lower() in ("inf", "+inf", "-inf", "nan", "infinity", "-infinity"):
        raise ValueError(lex)
    return float(lex)


def make_numeric(v: Number, kind: URIRef) -> Literal:
    """A literal of numeric family ``kind`` holding ``v`` in canonical form."""
    if kind == XSD.integer:
        return Literal(str(int(v)), datatype=XSD.integer)
    if kind == XSD.decimal:
        d = Decimal(v)
        s = format(d, "f")
        if "." not in s:
            s += ".0"
        return Literal(s, datatype=XSD.decimal)
    f = float(v)
    if math.isnan(f):
        return Literal("NaN", datatype=kind)
    if math.isinf(f):
        return Literal("INF" if f > 0 else "-INF", datatype=kind)
    return Literal(repr(f).replace("e", "E"), datatype=kind)


def promote(a: URIRef, b: URIRef) -> URIRef:
    return a if NUMERIC_RANK[a] >= NUMERIC_RANK[b] else b


def to_kind(v: Number, kind: URIRef) -> Number:
    if kind == XSD.integer:
        return v
    if kind == XSD.decimal:
        return Decimal(v) if not isinstance(v, float) else Decimal(repr(v))
    return float(v)


def is_string_literal(t: Identifier) -> bool:
    """A simple literal, an xsd:string or a language-tagged string."""
    return isinstance(t, Literal) and (t.datatype in (None, XSD.string) or t.language is not None)


def is_plain_string(t: Identifier) -> bool:
    """A simple literal or an xsd:string (no language tag)."""
    return isinstance(t, Literal) and t.language is None and t.datatype in (None, XSD.string)


def datatype_of(t: Literal) -> URIRef:
    if t.language is not None:
        return RDF_LANGSTRING
    return t.datatype if t.datatype is not None else XSD.string


def ebv(t: Identifier) -> bool:
    """Effective boolean value (SPARQL 1.1 §17.2.2)."""
    if not isinstance(t, Literal):
        raise ExprError("no EBV for a non-literal")
    if t.datatype == XSD.boolean:
        lex = str(t)
        if lex not in ("true", "false", "1", "0"):
            return False
        return lex in ("true", "1")
    if numeric_type(t) is not None:
        try:
            v = numeric_value(t)
        except ExprError:
            return False
        return not (v == 0 or (isinstance(v, float) and math.isnan(v)))
    if is_string_literal(t) and t.language is None:
        return len(str(t)) > 0
    raise ExprError("no EBV")


def order_key(t: Identifier | None) -> tuple:  # type: ignore[type-arg]
    """A total order for ORDER BY, MIN, MAX and SAMPLE (SPARQL 1.1 §15.1):
    unbound < blank nodes < IRIs < literals; numbers by value, then the rest by
    datatype, lexical form and language."""
    if t is None:
        return (0,)
    if isinstance(t, BNode):
        return (1, str(t))
    if isinstance(t, URIRef):
        return (2, str(t))
    assert isinstance(t, Literal)
    if numeric_type(t) is not None:
        try:
            v = numeric_value(t)
            if not (isinstance(v, float) and math.isnan(v)):
                return (3, 0, float(v), str(t.datatype), str(t))
        except ExprError:
            pass
    if is_plain_string(t):
        return (3, 1, str(t), "", "")
    if t.datatype == XSD.dateTime:
        try:
            from views.functions import datetime_value
            dt = datetime_value(t)
            return (3, 2, dt.timestamp(), "", str(t))
        except ExprError:
            pass
    return (3, 3, str(datatype_of(t)), str(t), t.language or "")


# ------------------------------------------------------- dictionary encoding

TermFields = tuple[int, str, str | None, str | None]
KINDS = {URIRef: 0, BNode: 1, Literal: 2}


def digest(t: Identifier) -> bytes:
    """The dictionary key of a term (decision 2): SHA-1 of its N-Triples form."""
    return hashlib.sha1(t.n3().encode("utf-8")).digest()


def fields_of(t: Identifier) -> TermFields:
    """(kind, lexical form, datatype, language) of a term, as the dictionary
    stores it.

    >>> fields_of(Literal("a", lang="en"))
    (2, 'a', None, 'en')
    """
    dt = t.datatype if isinstance(t, Literal) else None
    lang = t.language if isinstance(t, Literal) else None
    return KINDS[type(t)], str(t), (str(dt) if dt is not None else None), lang


def term_of(kind: int, lexical: str, datatype: str | None, lang: str | None) -> Identifier:
    """The term of dictionary fields (inverse of ``fields_of``).

    >>> term_of(*fields_of(Literal("01", datatype=XSD.integer)))
    rdflib.term.Literal('01', datatype=rdflib.term.URIRef('http://www.w3.org/2001/XMLSchema#integer'))
    """
    if kind == 0:
        return URIRef(lexical)
    if kind == 1:
        return BNode(lexical)
    return Literal(lexical, lang=lang, datatype=URIRef(datatype) if datatype else None)

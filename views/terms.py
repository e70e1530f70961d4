"""RDF term helpers for the expression language (SPARQL 1.1 §17.1, XSD types)."""

from __future__ import annotations

import hashlib
import math
import re
import struct
from decimal import MAX_EMAX, MAX_PREC, MIN_EMIN, ROUND_FLOOR, Context, Decimal
from fractions import Fraction

import rdflib
from rdflib import XSD
from rdflib.term import BNode, Identifier, Literal, URIRef

# Keep lexical forms: "01"^^xsd:integer is a term of its own (RDF 1.1 term
# equality), so rdflib must not rewrite it to "1" when it builds a Literal.
rdflib.NORMALIZE_LITERALS = False

Number = int | Decimal | float
# Decimals added, subtracted and normalised without rounding: a sum is its exact value,
# as Postgres's ``numeric`` computes it in a rendered SUM (design note 153)
EXACT = Context(prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN)


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


def canonical(t: Identifier) -> Identifier:
    """The one representation of an RDF term (RDF 1.1 Concepts §3.3): a simple
    literal is an ``xsd:string``, written without its datatype; a language tag
    is lower case (tags compare case-insensitively, BCP 47 §2.1.1). Term
    equality is not value equality: ``"01"^^xsd:integer`` stays as it is.

    >>> canonical(Literal("abc", datatype=XSD.string)) == Literal("abc")
    True
    >>> canonical(Literal("chat", lang="FR-be")).language
    'fr-be'
    >>> canonical(Literal("01", datatype=XSD.integer))
    rdflib.term.Literal('01', datatype=rdflib.term.URIRef('http://www.w3.org/2001/XMLSchema#integer'))
    """
    if type(t) is not Literal:
        return t
    lang = t.language
    if lang is not None:
        return t if lang == lang.lower() else Literal(str(t), lang=lang.lower())
    if t.datatype == XSD.string:
        return Literal(str(t))
    return t


def boolean(v: bool) -> Literal:
    return TRUE if v else FALSE


def numeric_type(t: Identifier) -> URIRef | None:
    """The numeric family of a literal (integer, decimal, float, double) or None."""
    if not isinstance(t, Literal) or t.datatype is None:
        return None
    return numeric_family(t.datatype)


def numeric_family(datatype: URIRef) -> URIRef | None:
    """``numeric_type`` of a literal of this datatype."""
    if datatype in INTEGER_TYPES:
        return XSD.integer
    return datatype if datatype in NUMERIC_RANK else None


# XSD 1.1 §3.3 lexical spaces (whitespace is collapsed before a cast, never in a literal)
_LEXICAL = {
    XSD.integer: re.compile(r"[+-]?[0-9]+"),
    XSD.decimal: re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)"),
    XSD.float: re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?INF|NaN"),
}
_LEXICAL[XSD.double] = _LEXICAL[XSD.float]
# the value ranges of the integer types derived from xsd:integer (XSD 1.1 §3.4)
_RANGES: dict[URIRef, tuple[int | None, int | None]] = {
    XSD.nonNegativeInteger: (0, None), XSD.positiveInteger: (1, None),
    XSD.nonPositiveInteger: (None, 0), XSD.negativeInteger: (None, -1),
    XSD.long: (-(2**63), 2**63 - 1), XSD.int: (-(2**31), 2**31 - 1),
    XSD.short: (-(2**15), 2**15 - 1), XSD.byte: (-128, 127),
    XSD.unsignedLong: (0, 2**64 - 1), XSD.unsignedInt: (0, 2**32 - 1),
    XSD.unsignedShort: (0, 2**16 - 1), XSD.unsignedByte: (0, 255),
}


def numeric_value(t: Identifier) -> Number:
    """The value of a numeric literal; an ExprError if it is not one or ill-typed.

    >>> numeric_value(Literal("+01", datatype=XSD.integer))
    1
    >>> numeric_value(Literal("1_0", datatype=XSD.integer))
    Traceback (most recent call last):
    ...
    views.terms.ExprError: ill-typed http://www.w3.org/2001/XMLSchema#integer: 1_0
    """
    if numeric_type(t) is None:
        raise ExprError("not a number")
    assert isinstance(t, Literal) and t.datatype is not None
    return number_of(str(t), t.datatype)


def number_of(lexical: str, datatype: URIRef) -> Number:
    """``numeric_value`` of the literal with this lexical form and datatype,
    without building it (a numeric datatype)."""
    kind = numeric_family(datatype)
    if kind is None:
        raise ExprError("not a number")
    lex = lexical  # never stripped: RDF 1.1 §5.3 (a cast strips before it reads)
    if not _LEXICAL[kind].fullmatch(lex):
        raise ExprError(f"ill-typed {kind}: {lex}")
    if kind == XSD.integer:
        v = int(lex)
        lo, hi = _RANGES.get(datatype, (None, None))
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise ExprError(f"{lex} is out of the range of {datatype}")
        return v
    if kind == XSD.decimal:
        return Decimal(lex)
    if kind == XSD.float and lex not in _SPECIAL:
        return nearest_single(Decimal(lex))  # one rounding, from the decimal itself
    f = _parse_float(lex)
    return single(f) if kind == XSD.float else f


_SPECIAL = {"INF": math.inf, "+INF": math.inf, "-INF": -math.inf, "NaN": math.nan}


def _parse_float(lex: str) -> float:
    return _SPECIAL[lex] if lex in _SPECIAL else float(lex)


def make_numeric(v: Number, kind: URIRef) -> Literal:
    """A literal of numeric family ``kind`` holding ``v`` in canonical form
    (a double's digits are its shortest, a float's ``shortest_single``'s,
    each as Python writes a double: SQL writes alike, migrations 0027,
    0039)."""
    if kind == XSD.integer:
        return Literal(str(int(v)), datatype=XSD.integer)
    if kind == XSD.decimal:  # no trailing zero after the point, no negative zero
        s = plain(Decimal(v))
        return Literal(s if "." in s else s + ".0", datatype=XSD.decimal)
    f = to_kind(v, kind)
    assert isinstance(f, float)
    if math.isnan(f):
        return Literal("NaN", datatype=kind)
    if math.isinf(f):
        return Literal("INF" if f > 0 else "-INF", datatype=kind)
    if kind == XSD.float:
        f = float(shortest_single(f))  # a double with the float's digits, nine or fewer
    return Literal(repr(f).replace("e", "E"), datatype=kind)


def plain(d: Decimal) -> str:
    """``d`` written exactly in fixed notation: no exponent, no trailing
    zero after the point, no point when whole, no negative zero.

    >>> [plain(Decimal(x)) for x in ("1.50", "1E+2", "-0.0", "0.1000000000000000000000000000001")]
    ['1.5', '100', '0', '0.1000000000000000000000000000001']
    """
    return format(d.normalize(EXACT), "f") if d else "0"


def promote(a: URIRef, b: URIRef) -> URIRef:
    return a if NUMERIC_RANK[a] >= NUMERIC_RANK[b] else b


def to_kind(v: Number, kind: URIRef) -> Number:
    if kind == XSD.integer:
        return v
    if kind == XSD.decimal:
        return Decimal(v) if not isinstance(v, float) else Decimal(repr(v))
    if kind == XSD.double:
        return double(v)
    return single(v) if isinstance(v, float) else nearest_single(v)


def single(v: float) -> float:
    """The xsd:float nearest ``v`` (XSD 1.1 §3.3.5: IEEE single precision,
    ±INF past the largest, a signed zero below the smallest).

    >>> single(0.1), single(1e39), single(-1e-46), single(16777217.0)
    (0.10000000149011612, inf, -0.0, 16777216.0)
    """
    try:
        return _SINGLE.unpack(_SINGLE.pack(v))[0]  # type: ignore[no-any-return]
    except OverflowError:
        return math.copysign(math.inf, v)


_SINGLE = struct.Struct("<f")
_BITS = struct.Struct("<I")
_HALF = Decimal("0.5")


def nearest_single(v: int | Decimal | Fraction) -> float:
    """The xsd:float nearest the exact value ``v`` (ties to even; ±INF past
    the largest, a signed zero below the smallest), rounded once. Through a
    double (``single(double(v))``) it was rounded twice, and a value just
    past a halfway point between two floats whose nearest double is that
    point went to the wrong side: ``"1.00000005960464477550"^^xsd:float``
    was 1 (design note 219).

    >>> nearest_single(Decimal("1.00000005960464477550")), nearest_single(Decimal("1.0000000596046447753"))
    (1.0000001192092896, 1.0)
    """
    x = double(v)
    f = single(x)
    if not math.isfinite(x) or f == x:
        return f
    a, fa = abs(x), abs(f)
    lo, hi = (fa, _next_single(fa, 1)) if fa < a else (_next_single(fa, -1), fa)
    halfway = (lo + _bound(hi)) / 2  # exact: 25 bits
    if a != halfway:  # the double is not a halfway point: it rounds as v does
        return f
    exact = abs(Fraction(v))
    return math.copysign(hi if exact > halfway else lo if exact < halfway else fa, x)


def _next_single(a: float, step: int) -> float:
    """The float ``step`` (1 or -1) places from the non-negative float ``a``:
    INF after the largest, the largest before INF."""
    return _SINGLE.unpack(_BITS.pack(_BITS.unpack(_SINGLE.pack(a))[0] + step))[0]  # type: ignore[no-any-return]


def _bound(f: float) -> float:
    """A float neighbour as the end of a rounding interval: INF stands for
    2^128, where the largest float's interval ends."""
    return 2.0 ** 128 if math.isinf(f) else f


def shortest_single(v: float) -> Decimal:
    """The digits of a finite xsd:float ``v``: the shortest decimal nearer
    to it than to any other float, a decimal exactly halfway excluded; of
    those, the nearest to it (an even last digit on a tie). Postgres writes
    a float4 so (Ryu, without the halfway bounds), and a rendered SUM must
    end as the interpreter does (``pv_float_lexical``, migration 0039).

    >>> [str(shortest_single(single(x))) for x in (0.1, 0.3, 1 / 3, 3.4028235e38, -1e-45, 0.0)]
    ['0.1', '0.3', '0.33333334', '3.4028235E+38', '-1E-45', '0']
    """
    if v == 0 or not math.isfinite(v):
        return Decimal(v)
    x = Decimal(abs(v))  # exact
    lo, hi = (EXACT.divide(EXACT.add(x, Decimal(_bound(_next_single(abs(v), step)))), 2)
              for step in (-1, 1))  # the halfway points to the neighbours
    for digits in range(1, 10):
        shift = digits - 1 - x.adjusted()
        q = x.scaleb(shift, EXACT)
        below = q.to_integral_value(rounding=ROUND_FLOOR)
        rest = EXACT.subtract(q, below)
        nearer = rest > _HALF or (rest == _HALF and below % 2 == 1)
        for n in ((below + 1, below) if nearer else (below, below + 1)):
            d = n.scaleb(-shift, EXACT)
            if lo < d < hi:
                return d.copy_negate() if v < 0 else d
    raise AssertionError(f"no digits for {v!r}")  # nine digits always single out a float


def double(v: Number | Fraction) -> float:
    """``v`` as a double: the nearest one, and ±INF past the largest (XPath
    casts to xs:double and promotes to it with IEEE 754's overflow; Python's
    ``float`` raises OverflowError for an integer or a fraction that large)."""
    try:
        return float(v)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


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


# ------------------------------------------------------- dictionary encoding

TermFields = tuple[int, str, str | None, str | None]
KINDS = {URIRef: 0, BNode: 1, Literal: 2}


def digest(t: Identifier) -> bytes:
    """The dictionary key of a term (decision 2): SHA-1 of its canonical
    N-Triples form, so one RDF term has one key (decision 8).

    >>> digest(Literal("a", datatype=XSD.string)) == digest(Literal("a"))
    True
    """
    return digest_of(*fields_of(t))


def digest_of(kind: int, lexical: str, datatype: str | None, lang: str | None) -> bytes:
    """``digest`` of the term with these dictionary fields (``fields_of``:
    canonical), without building the term: how bulk writes key their terms.

    >>> digest_of(2, "01", str(XSD.integer), None) == digest(Literal("01", datatype=XSD.integer))
    True
    """
    return hashlib.sha1(n3_of(kind, lexical, datatype, lang).encode("utf-8")).digest()


_INF_NAN_TYPES = (str(XSD.float), str(XSD.double), str(XSD.decimal))


def n3_of(kind: int, lexical: str, datatype: str | None, lang: str | None) -> str:
    """The N3 form rdflib 7 writes for the term of these (canonical) fields
    (``Identifier.n3()``), which the dictionary's digests have hashed since
    the first release: a copy of ``Literal._literal_n3`` and
    ``_quote_encode``, quirks included — a literal holding a newline is
    triple-quoted; a float, double or decimal whose text Python reads as
    infinite or NaN has ``inf``/``Infinity``/``nan`` rewritten
    (``"inf"^^xsd:double`` is written as ``"INF"^^xsd:double`` is).
    ``tests/storage/test_bulk_terms.py`` checks it against rdflib.

    >>> n3_of(2, 'say "hi"', None, "en")
    '"say \\\\"hi\\\\""@en'
    """
    if kind == 0:
        return f"<{lexical}>"
    if kind == 1:
        return "_:" + lexical
    encoded = _quoted(lexical)
    if lang:
        return f"{encoded}@{lang}"
    if datatype is None:
        return encoded
    if datatype in _INF_NAN_TYPES:
        try:
            v = float(lexical)
        except ValueError:
            v = 0.0
        if math.isinf(v):
            encoded = encoded.replace("inf", "INF").replace("Infinity", "INF")
        if math.isnan(v):
            encoded = encoded.replace("nan", "NaN")
    return f"{encoded}^^<{datatype}>"


def _quoted(lexical: str) -> str:
    if "\n" in lexical:
        encoded = lexical.replace("\\", "\\\\")
        if '"""' in lexical:
            encoded = encoded.replace('"""', '\\"\\"\\"')
        if encoded[-1] == '"' and encoded[-2] != "\\":
            encoded = encoded[:-1] + "\\" + '"'
        return '"""' + encoded.replace("\r", "\\r") + '"""'
    return '"' + lexical.replace("\\", "\\\\").replace('"', '\\"').replace("\r", "\\r") + '"'


def fields_of(t: Identifier) -> TermFields:
    """(kind, lexical form, datatype, language) of a term, as the dictionary
    stores it.

    >>> fields_of(Literal("a", lang="en"))
    (2, 'a', None, 'en')
    >>> fields_of(Literal("a", datatype=XSD.string))
    (2, 'a', None, None)
    """
    t = canonical(t)
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
    return canonical(Literal(lexical, lang=lang, datatype=URIRef(datatype) if datatype else None))

"""SPARQL 1.1 built-in functions on RDF terms (§17.4), eager and deterministic.

Each function takes evaluated argument terms and returns a term or raises
ExprError. The special forms (&&, ||, IF, COALESCE, BOUND, IN, EXISTS) live in
``views.expr``.
"""

from __future__ import annotations

import hashlib
import math
import random
import re
import uuid
from collections.abc import Callable
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, localcontext
from functools import lru_cache
from typing import Any
from urllib.parse import quote

import re2
from rdflib import XSD
from rdflib.term import BNode, Identifier, Literal, URIRef

from views import langtags, xsregex
from views.compare import compare, date_value, datetime_value, equals, same_term
from views.durations import DURATION_TYPES, canonical_duration
from views.iris import is_absolute_iri, resolve
from views.moments import Moment, canonical_date, canonical_datetime, canonical_moment, moment_of
from views.terms import (
    EXACT,
    ExprError,
    Number,
    boolean,
    datatype_of,
    ebv,
    is_plain_string,
    is_string_literal,
    make_numeric,
    numeric_type,
    numeric_value,
    plain,
    promote,
    shortest_single,
    to_kind,
)

Fn = Callable[..., Identifier]
FUNCTIONS: dict[str, Fn] = {}


def fn(*names: str) -> Callable[[Fn], Fn]:
    def register(f: Fn) -> Fn:
        for n in names:
            FUNCTIONS[n] = f
        return f
    return register


# ------------------------------------------------------------------ operators


def numeric_of(t: Identifier) -> tuple[Number, URIRef]:
    """A numeric literal's value and family; an ExprError for anything else."""
    kind = numeric_type(t)
    if kind is None:
        raise ExprError("not a number")
    return numeric_value(t), kind


def arithmetic(op: str, a: Identifier, b: Identifier) -> Literal:
    """Numeric + - * / with type promotion (XPath op:numeric-*)."""
    va, ka = numeric_of(a)
    vb, kb = numeric_of(b)
    kind = promote(ka, kb)
    if op == "/" and kind == XSD.integer:
        kind = XSD.decimal
    # Promoted to one kind, so the pair is int/int, Decimal/Decimal or float/float,
    # which the type of to_kind cannot say.
    x: Any = to_kind(va, kind)
    y: Any = to_kind(vb, kind)
    if op == "+":
        r = EXACT.add(x, y) if kind == XSD.decimal else x + y
    elif op == "-":
        r = EXACT.subtract(x, y) if kind == XSD.decimal else x - y
    elif op == "*":
        r = x * y
    else:
        if y == 0:
            if kind in (XSD.float, XSD.double):
                r = math.nan if x == 0 or math.isnan(x) else math.copysign(math.inf, x)
            else:
                raise ExprError("division by zero")
        else:
            r = x / y
    return make_numeric(r, kind)


def _operator(op: str) -> Fn:
    return lambda a, b: arithmetic(op, a, b)


for _op in "+-*/":
    FUNCTIONS[_op] = _operator(_op)


@fn("neg")
def _neg(a: Identifier) -> Literal:
    v, k = numeric_of(a)
    return make_numeric(-v, k)


@fn("pos")
def _pos(a: Identifier) -> Literal:
    v, k = numeric_of(a)
    return make_numeric(v, k)


@fn("!")
def _not(a: Identifier) -> Literal:
    return boolean(not ebv(a))


FUNCTIONS["="] = lambda a, b: boolean(equals(a, b))
FUNCTIONS["!="] = lambda a, b: boolean(not equals(a, b))
FUNCTIONS["<"] = lambda a, b: boolean(compare(a, b) < 0)
FUNCTIONS[">"] = lambda a, b: boolean(compare(a, b) > 0)
FUNCTIONS["<="] = lambda a, b: boolean(compare(a, b) <= 0)
FUNCTIONS[">="] = lambda a, b: boolean(compare(a, b) >= 0)


# ---------------------------------------------------------------- term tests


FUNCTIONS["SAMETERM"] = lambda a, b: boolean(same_term(a, b))


FUNCTIONS["ISIRI"] = FUNCTIONS["ISURI"] = lambda a: boolean(isinstance(a, URIRef))
FUNCTIONS["ISBLANK"] = lambda a: boolean(isinstance(a, BNode))
FUNCTIONS["ISLITERAL"] = lambda a: boolean(isinstance(a, Literal))


@fn("ISNUMERIC")
def _is_numeric(a: Identifier) -> Literal:
    try:
        numeric_value(a)
        return boolean(True)
    except ExprError:
        return boolean(False)


@fn("STR")
def _str(a: Identifier) -> Literal:
    if isinstance(a, BNode):
        raise ExprError("STR of a blank node")
    return Literal(str(a))


@fn("LANG")
def _lang(a: Identifier) -> Literal:
    if not isinstance(a, Literal):
        raise ExprError("LANG of a non-literal")
    return Literal(a.language or "")


@fn("DATATYPE")
def _datatype(a: Identifier) -> URIRef:
    if not isinstance(a, Literal):
        raise ExprError("DATATYPE of a non-literal")
    return datatype_of(a)


@fn("IRI", "URI")
def _iri(a: Identifier, base: Identifier | None = None) -> URIRef:
    """IRI(str) (SPARQL 1.1 §17.4.2.8): the string resolved against the
    query's base; it "must result in an absolute IRI", so a relative result
    (no base) or one with a character no IRI holds is an error."""
    if isinstance(a, URIRef):
        return a
    if not is_plain_string(a):
        raise ExprError("IRI of a non-string")
    iri = resolve(str(a), str(base)) if base is not None else str(a)
    if not is_absolute_iri(iri):
        raise ExprError(f"not an absolute IRI: {iri!r}")
    return URIRef(iri)


@fn("LANGMATCHES")
def _langmatches(tag: Identifier, rng: Identifier) -> Literal:
    if not (is_plain_string(tag) and is_plain_string(rng)):
        raise ExprError("LANGMATCHES needs simple literals")
    t, r = str(tag).lower(), str(rng).lower()
    if r == "*":
        return boolean(t != "")
    return boolean(t == r or t.startswith(r + "-"))


@fn("STRDT")
def _strdt(a: Identifier, d: Identifier) -> Literal:
    if not is_plain_string(a) or not isinstance(d, URIRef):
        raise ExprError("STRDT arguments")
    return Literal(str(a), datatype=d)


@fn("STRLANG")
def _strlang(a: Identifier, lang: Identifier) -> Literal:
    """STRLANG (§17.4.3.10): the tag must be a well-formed BCP 47 one (RDF
    1.1 §3.3), else an error."""
    if not is_plain_string(a) or not is_plain_string(lang) or not langtags.well_formed(str(lang)):
        raise ExprError("STRLANG arguments")
    return Literal(str(a), lang=str(lang))


# ------------------------------------------------------------------- strings


def _string(a: Identifier) -> Literal:
    if not is_string_literal(a):
        raise ExprError("not a string literal")
    return a  # type: ignore[return-value]


def _like(src: Literal, value: str) -> Literal:
    """A string result carrying the source's language tag or xsd:string type."""
    if src.language is not None:
        return Literal(value, lang=src.language)
    return Literal(value, datatype=src.datatype)


def _compatible(a: Literal, b: Literal) -> None:
    """Argument compatibility rules (§17.4.3.1.1)."""
    if b.language is not None and a.language != b.language:
        raise ExprError("incompatible string arguments")


@fn("STRLEN")
def _strlen(a: Identifier) -> Literal:
    return Literal(len(str(_string(a))), datatype=XSD.integer)


@fn("UCASE")
def _ucase(a: Identifier) -> Literal:
    return _like(_string(a), str(a).upper())


@fn("LCASE")
def _lcase(a: Identifier) -> Literal:
    return _like(_string(a), str(a).lower())


@fn("SUBSTR")
def _substr(a: Identifier, start: Identifier, length: Identifier | None = None) -> Literal:
    """SPARQL 1.1 §17.4.3.3: positions are xsd:integer (or a type derived
    from it); a decimal or a double is a type error, as its signature says
    (XPath's fn:substring, which rounds doubles, is not SPARQL's)."""
    s = str(_string(a))
    first = _integer(start)
    if length is None:
        return _like(a, s[max(first, 1) - 1:])  # type: ignore[arg-type]
    lo, hi = max(first, 1), first + _integer(length)
    return _like(a, s[lo - 1:max(hi - 1, lo - 1)])  # type: ignore[arg-type]


def _integer(t: Identifier) -> int:
    """The value of an xsd:integer (or derived) literal, else a type error."""
    if numeric_type(t) != XSD.integer:
        raise ExprError("not an xsd:integer")
    return int(numeric_value(t))  # type: ignore[arg-type]


def _half_up(d: Decimal) -> Decimal:
    """XPath's fn:round of a decimal: the nearest integer, a half toward
    positive infinity (-0.5 → 0, -1.5 → -1, 2.5 → 3; Python's ROUND_HALF_UP
    goes away from zero), computed exactly whatever its digits."""
    _, digits, exponent = d.as_tuple()
    with localcontext() as ctx:
        ctx.prec = max(ctx.prec, len(digits) + max(int(exponent), 0) + 2)
        return (d + Decimal("0.5")).to_integral_value(rounding=ROUND_FLOOR)


@fn("STRSTARTS")
def _strstarts(a: Identifier, b: Identifier) -> Literal:
    _compatible(_string(a), _string(b))
    return boolean(str(a).startswith(str(b)))


@fn("STRENDS")
def _strends(a: Identifier, b: Identifier) -> Literal:
    _compatible(_string(a), _string(b))
    return boolean(str(a).endswith(str(b)))


@fn("CONTAINS")
def _contains(a: Identifier, b: Identifier) -> Literal:
    _compatible(_string(a), _string(b))
    return boolean(str(b) in str(a))


@fn("STRBEFORE")
def _strbefore(a: Identifier, b: Identifier) -> Literal:
    _compatible(_string(a), _string(b))
    i = str(a).find(str(b))
    if i < 0:
        return Literal("")
    return _like(a, str(a)[:i])  # type: ignore[arg-type]


@fn("STRAFTER")
def _strafter(a: Identifier, b: Identifier) -> Literal:
    _compatible(_string(a), _string(b))
    i = str(a).find(str(b))
    if i < 0:
        return Literal("")
    return _like(a, str(a)[i + len(str(b)):])  # type: ignore[arg-type]


@fn("ENCODE_FOR_URI")
def _encode(a: Identifier) -> Literal:
    return Literal(quote(str(_string(a)), safe="-_.~"))


@fn("CONCAT")
def _concat(*args: Identifier) -> Literal:
    strs = [_string(a) for a in args]
    text = "".join(str(s) for s in strs)
    langs = {s.language for s in strs}
    if len(langs) == 1 and None not in langs and strs:
        return Literal(text, lang=strs[0].language)
    if strs and all(s.datatype == XSD.string for s in strs):
        return Literal(text, datatype=XSD.string)
    return Literal(text)


_FLAGS = "ismxq"  # XPath's flags (F&O §5.6.1.1)
_LINEAR = re2.Options()
_LINEAR.log_errors = False


def _regex(pattern: Identifier, flags: Identifier | None) -> Any:
    """The pattern compiled by RE2, whose matching is linear in the text: a
    view's ``REGEX(?x, "^(a+)+$")`` cannot backtrack for minutes. Patterns RE2
    cannot run in linear time (back-references) are an expression error."""
    if not is_plain_string(pattern) or (flags is not None and not is_plain_string(flags)):
        raise ExprError("REGEX pattern and flags must be simple literals")
    given = str(flags or "")
    unknown = set(given) - set(_FLAGS)
    if unknown:
        raise ExprError(f"unknown regex flag {min(unknown)}")
    return _compiled(str(pattern), "".join(sorted(set(given))))


@lru_cache(maxsize=1024)  # bounded: a pattern may come from the data (REGEX(?x, ?p))
def _compiled(pattern: str, flags: str) -> Any:
    try:
        return re2.compile(xsregex.translate(pattern, flags), _LINEAR)
    except re2.error as e:
        raise ExprError(f"regex {pattern!r} is not supported (linear-time RE2): "
                        f"{e.args[0] if e.args else e}") from None


@fn("REGEX")
def _regex_fn(text: Identifier, pattern: Identifier, flags: Identifier | None = None) -> Literal:
    return boolean(_regex(pattern, flags).search(str(_string(text))) is not None)


@fn("REPLACE")
def _replace(text: Identifier, pattern: Identifier, repl: Identifier,
             flags: Identifier | None = None) -> Literal:
    """F&O 3.1 §5.6.3: an error when the pattern matches the empty string;
    ``$N`` in the replacement is the Nth group's match (``$0`` the whole
    match), ``\\$`` and ``\\\\`` a dollar and a backslash; with the q flag the
    replacement is literal."""
    rx = _regex(pattern, flags)
    if rx.search(""):
        raise ExprError("REPLACE pattern matches the empty string")
    if not is_plain_string(repl):
        raise ExprError("REPLACE replacement must be a simple literal")
    parts = [str(repl)] if "q" in str(flags or "") else _replacement(str(repl), rx.groups)
    return _like(_string(text), rx.sub(lambda m: "".join(
        p if isinstance(p, str) else (m.group(p) or "") for p in parts), str(_string(text))))


def _replacement(text: str, groups: int) -> list[str | int]:
    """The replacement as text and group numbers (F&O 3.1 §5.6.3: of the
    digits after ``$``, the longest run naming a group, or one digit; the
    rest are text).

    >>> _replacement("[$10]\\\\$2$2", 1)
    ['[', 1, '0]$2']
    """
    parts: list[str | int] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            if text[i + 1:i + 2] not in ("\\", "$"):
                raise ExprError("REPLACE: \\ must escape \\ or $")
            parts.append(text[i + 1])
            i += 2
        elif c == "$":
            j = i + 1
            while j < len(text) and text[j].isascii() and text[j].isdigit():
                j += 1
            if j == i + 1:
                raise ExprError("REPLACE: $ must be followed by a digit")
            n = j
            while n > i + 2 and int(text[i + 1:n]) > groups:
                n -= 1  # F&O: the last digit is text while the number names no group
            group = int(text[i + 1:n])
            parts += [group] if group <= groups else []  # F&O: an absent group is empty
            parts.append(text[n:j])
            i = j
        else:
            parts.append(c)
            i += 1
    merged: list[str | int] = []
    for p in parts:
        if isinstance(p, str) and merged and isinstance(merged[-1], str):
            merged[-1] += p
        elif p != "":
            merged.append(p)
    return merged


# ------------------------------------------------------------------- numbers


def _rounding(name: str, py: Callable[[float], float], dec: Callable[[Decimal], Decimal]
              ) -> None:
    def f(a: Identifier) -> Literal:
        v, k = numeric_of(a)
        if k == XSD.integer:
            return make_numeric(v, k)
        if k == XSD.decimal:
            return make_numeric(dec(Decimal(v)), k)  # type: ignore[arg-type]
        if math.isnan(v) or math.isinf(v):  # type: ignore[arg-type]
            return make_numeric(v, k)
        r = py(v)  # type: ignore[arg-type]
        # F&O: a float's or double's zero keeps the argument's sign (round(-0.4e0) is -0.0e0)
        return make_numeric(math.copysign(r, v) if r == 0 else r, k)  # type: ignore[arg-type]
    FUNCTIONS[name] = f


_rounding("ROUND", lambda v: math.floor(v + 0.5), _half_up)
_rounding("CEIL", math.ceil, lambda d: d.to_integral_value(rounding=ROUND_CEILING))
_rounding("FLOOR", math.floor, lambda d: d.to_integral_value(rounding=ROUND_FLOOR))


@fn("ABS")
def _abs(a: Identifier) -> Literal:
    v, k = numeric_of(a)
    return make_numeric(abs(v), k)  # type: ignore[arg-type]


# ------------------------------------------------------------- dates, hashes


def _day_value(a: Identifier) -> Moment:
    """An xsd:dateTime's value, or an xsd:date's: YEAR, MONTH, DAY, TIMEZONE
    and TZ take both (XPath's year-from-date and friends; SPARQL 1.1 names
    dateTime only, pyoxigraph takes both)."""
    if isinstance(a, Literal) and a.datatype == XSD.date:
        return date_value(a)
    return datetime_value(a)


def _dt_part(name: str, get: Callable[[Moment], int], dates: bool) -> None:
    def f(a: Identifier) -> Literal:
        return make_numeric(get((_day_value if dates else datetime_value)(a)), XSD.integer)
    FUNCTIONS[name] = f


_dt_part("YEAR", lambda d: d.year, dates=True)
_dt_part("MONTH", lambda d: d.month, dates=True)
_dt_part("DAY", lambda d: d.day, dates=True)
_dt_part("HOURS", lambda d: d.hour, dates=False)
_dt_part("MINUTES", lambda d: d.minute, dates=False)


@fn("SECONDS")
def _seconds(a: Identifier) -> Literal:
    return make_numeric(datetime_value(a).second, XSD.decimal)


@fn("TIMEZONE")
def _timezone(a: Identifier) -> Literal:
    minutes = _day_value(a).tz
    if minutes is None:
        raise ExprError("no timezone")
    if minutes == 0:
        return Literal("PT0S", datatype=XSD.dayTimeDuration)
    sign, minutes = ("-" if minutes < 0 else ""), abs(minutes)
    h, m = divmod(minutes, 60)
    return Literal(f"{sign}PT{h}H" + (f"{m}M" if m else ""), datatype=XSD.dayTimeDuration)


@fn("TZ")
def _tz(a: Identifier) -> Literal:
    _day_value(a)
    m = re.search(r"(Z|[+-][0-9][0-9]:[0-9][0-9])$", str(a))
    return Literal(m.group(1) if m else "")


def _hash(name: str, algo: str) -> None:
    def f(a: Identifier) -> Literal:
        if not is_plain_string(a):
            raise ExprError(f"{name} of a non-string")
        return Literal(hashlib.new(algo, str(a).encode()).hexdigest())
    FUNCTIONS[name] = f


for _n, _a in (("MD5", "md5"), ("SHA1", "sha1"), ("SHA256", "sha256"), ("SHA384", "sha384"),
               ("SHA512", "sha512")):
    _hash(_n, _a)


# --------------------------------------------------------------------- casts


def _cast_string(a: Identifier) -> Literal:
    """xsd:string(a) (SPARQL 1.1 §17.5, F&O 3.1 §19.1.2): the canonical form
    of a number, a boolean, a dateTime, a date or a duration; any other
    literal (an ill-typed one too: it has no value) or IRI, its text."""
    if isinstance(a, BNode):
        raise ExprError("cast of a blank node")
    try:
        if isinstance(a, Literal) and a.datatype == XSD.boolean:
            return Literal("true" if _cast_boolean(a) == boolean(True) else "false")
        if (kind := numeric_type(a)) is not None:
            return Literal(canonical_number(numeric_value(a), kind))
        if isinstance(a, Literal) and a.datatype == XSD.dateTime:
            return Literal(canonical_datetime(str(a)))
        if isinstance(a, Literal) and a.datatype == XSD.date:
            return Literal(canonical_date(str(a)))
        if isinstance(a, Literal) and a.datatype in DURATION_TYPES:
            return Literal(canonical_duration(str(a), a.datatype))
    except ExprError:
        pass  # ill-typed: its lexical form
    return Literal(str(a))


def canonical_number(v: object, kind: URIRef | None = None) -> str:
    """The XPath string of a number (F&O 3.1 §19.1.2.2, the xsd:string cast,
    SPARQL 1.1 §17.5): a double or a float from 1e-6 up to 1e6 as a
    decimal, others in the XSD canonical form with an exponent; a double's
    digits its shortest, a float's (``kind`` xsd:float) ``shortest_single``'s.

    >>> [canonical_number(x) for x in (1.0, 0.00001, 1e10, 1.2345678912e-7, -0.0, 1.50)]
    ['1', '0.00001', '1.0E10', '1.2345678912E-7', '-0', '1.5']
    >>> from views.terms import single
    >>> canonical_number(single(0.1)), canonical_number(single(0.1), XSD.float)
    ('0.10000000149011612', '0.1')
    """
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "INF" if v > 0 else "-INF"
        if v == 0:
            return "-0" if math.copysign(1, v) < 0 else "0"
        d = shortest_single(v) if kind == XSD.float else Decimal(repr(v))
        if Decimal("0.000001") <= abs(d) < 1_000_000:
            return plain(d)
        sign, digits, exp = d.normalize().as_tuple()
        rest = "".join(map(str, digits[1:])) or "0"
        return f"{'-' if sign else ''}{digits[0]}.{rest}E{len(digits) - 1 + int(exp)}"
    return plain(Decimal(v))  # type: ignore[arg-type]


XML_SPACE = " \t\n\r"  # what XSD's whiteSpace collapse strips before a cast (F&O 3.1 §19.2)


def _cast_numeric(kind: URIRef) -> Fn:
    def f(a: Identifier) -> Literal:
        if isinstance(a, Literal) and a.datatype == XSD.boolean:  # ill-typed: an error
            return make_numeric(1 if _cast_boolean(a) == boolean(True) else 0, kind)
        if numeric_type(a) is not None:
            v = numeric_value(a)
            if (kind in (XSD.integer, XSD.decimal) and isinstance(v, float)
                    and (math.isnan(v) or math.isinf(v))):
                raise ExprError("cannot cast NaN/INF")
            if kind == XSD.integer:
                return make_numeric(int(v), kind)
            return make_numeric(to_kind(v, kind), kind)
        if is_plain_string(a):
            lex = str(a).strip(XML_SPACE)
            probe = Literal(lex, datatype=kind)
            return make_numeric(numeric_value(probe), kind)
        raise ExprError("cast to a number")
    return f


def _cast_boolean(a: Identifier) -> Literal:
    if isinstance(a, Literal) and a.datatype == XSD.boolean:
        if str(a) not in ("true", "false", "1", "0"):
            raise ExprError("ill-typed boolean")
        return boolean(str(a) in ("true", "1"))
    if numeric_type(a) is not None:
        v = numeric_value(a)
        return boolean(not (v == 0 or (isinstance(v, float) and math.isnan(v))))
    if is_plain_string(a):
        lex = str(a).strip(XML_SPACE)
        if lex not in ("true", "false", "1", "0"):
            raise ExprError("cast to boolean")
        return boolean(lex in ("true", "1"))
    raise ExprError("cast to boolean")


def _cast_datetime(a: Identifier) -> Literal:
    """xsd:dateTime(a): a date's midnight (F&O 3.1 §19.1.5), a dateTime or
    a string's value, in the canonical form (``24:00:00`` the next day's
    midnight, a zero offset ``Z``) as a computed number is."""
    if isinstance(a, Literal) and a.datatype == XSD.date:
        return Literal(canonical_moment(date_value(a)), datatype=XSD.dateTime)
    if isinstance(a, Literal) and (a.datatype == XSD.dateTime or is_plain_string(a)):
        return Literal(canonical_moment(moment_of(str(a).strip(XML_SPACE))), datatype=XSD.dateTime)
    raise ExprError("cast to dateTime")


FUNCTIONS[str(XSD.string)] = _cast_string
FUNCTIONS[str(XSD.boolean)] = _cast_boolean
FUNCTIONS[str(XSD.dateTime)] = _cast_datetime
for _k in (XSD.integer, XSD.decimal, XSD.float, XSD.double):
    FUNCTIONS[str(_k)] = _cast_numeric(_k)


# ------------------------------------------- functions of an update's evaluation only
# A view's query may not call them (``views.parse`` refuses them: a maintained
# view must be a function of its data); an update's WHERE may, each call made
# once per solution (design note 225). NOW() is a constant of the request.


@fn("RAND")
def _rand() -> Literal:
    return make_numeric(random.random(), XSD.double)


@fn("UUID")
def _uuid() -> URIRef:
    return URIRef(f"urn:uuid:{uuid.uuid4()}")


@fn("STRUUID")
def _struuid() -> Literal:
    return Literal(str(uuid.uuid4()))


@fn("BNODE")
def _bnode() -> BNode:
    return BNode()

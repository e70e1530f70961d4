"""ORDER BY's total order (``views.compare.order_key``) as bytes: a term's
sort key, a byte string that compares (bytewise, shorter first on a common
prefix) as the term's ``order_key`` does, so a rendered group finds its
MIN, MAX and SAMPLE in SQL (``server.executors.sql.render``) as the
interpreter does in Python. The dictionary keeps a typed literal's
(``terms.sortkey``, ``stored_key``); SQL writes the others from their text
(``pv_sort_key``, migration 0029: a term's text holds no NUL there, so
it needs no escape).

Every part of the key is self-delimiting, so the parts after it decide only
where it ties:

- the key's tags (kind, a literal's comparable family): one byte;
- text: its UTF-8 (surrogates passed, so code point order is byte order)
  with 0x00 escaped as 0x00 0x01, ended by 0x00 0x00;
- a number (every numeric type, by exact value: ``1`` and ``1.0E0`` tie):
  a class byte (-INF, negative, zero, positive, INF), then for a nonzero
  its decimal exponent (4 bytes) and significant digits (each + 1, ended by
  0), all complemented when negative;
- a dateTime or a date: its exact seconds from 1970 (an untimezoned one
  read as UTC), as a number (migration 0036; any year, any precision);
- a duration, as the instant it leads to from its first reference
  (``views.durations.duration_key``): exact seconds from 1970, as a number
  (migration 0038; it was microseconds in 8 bytes);
- a boolean: 0 or 1.

A string's and a tagged string's value is the whole term, so their keys
stop after it (``order_key``'s datatype, lexical form and language only
repeat it).

The keys are stored: a change to this encoding or to ``order_key`` needs a
migration that writes every term's again (as 0029 first wrote them).

>>> x = "http://www.w3.org/2001/XMLSchema#"
>>> sort_key(2, "1.5", x + "decimal", None) < sort_key(2, "2", x + "integer", None)
True
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from rdflib.term import URIRef

from views.compare import literal_order_key

# families whose value is the whole term (a string, a tagged string): the
# key's datatype, lexical form and language repeat it, and are left out
_WHOLE = (2, 3)
_NEG_INF, _NEGATIVE, _ZERO, _POSITIVE, _POS_INF = range(5)
_BIAS = 1 << 31


def sort_key(kind: int, lexical: str, datatype: str | None, lang: str | None) -> bytes:
    """The sort key of the term of these dictionary fields
    (``views.terms.fields_of``: kind 0 IRI, 1 blank node, 2 literal)."""
    if kind != 2:  # a blank node, an IRI: by label, by IRI (order_key's 1 and 2)
        out = bytearray((2 if kind == 0 else 1,))
        _text(out, lexical)
        return bytes(out)
    key = literal_order_key(lexical, URIRef(datatype) if datatype is not None else None, lang)
    _, family, value, named, lexical, lang_ = key
    out = bytearray((3, family))
    _VALUES[family](out, value)
    if family not in _WHOLE:
        for part in (named, lexical, lang_):
            _text(out, part)
    return bytes(out)


def stored_key(kind: int, lexical: str, datatype: str | None, lang: str | None) -> bytes | None:
    """The sort key the dictionary keeps for a term: a typed literal's; an
    IRI's, a blank node's, a string's and a tagged string's are their
    text's, which SQL writes itself (``pv_sort_key``, migration 0029)."""
    return None if kind != 2 or datatype is None else sort_key(kind, lexical, datatype, lang)


def text_key(s: str) -> bytes:
    """Text as a key's part: escaped UTF-8 and its end, self-delimiting."""
    return s.encode("utf-8", "surrogatepass").replace(b"\x00", b"\x00\x01") + b"\x00\x00"


def _text(out: bytearray, s: str) -> None:
    out += text_key(s)


def _number(out: bytearray, v: Any) -> None:
    if isinstance(v, float) and v in (float("inf"), float("-inf")):
        out.append(_POS_INF if v > 0 else _NEG_INF)
        return
    sign, digits, exponent = Decimal(v).as_tuple()  # exact, whatever the type
    assert isinstance(exponent, int)
    text = "".join(map(str, digits)).lstrip("0")
    if not text:
        out.append(_ZERO)
        return
    stripped = text.rstrip("0")
    place = len(text) + exponent  # the value is 0.<stripped> × 10^place
    body = (place + _BIAS).to_bytes(4, "big") + bytes(int(d) + 1 for d in stripped) + b"\x00"
    if sign:  # a larger magnitude sorts first, a shorter significand last
        out.append(_NEGATIVE)
        out += bytes(0xFF - b for b in body)
    else:
        out.append(_POSITIVE)
        out += body


def _text_pair(out: bytearray, v: tuple[str, str]) -> None:
    for s in v:
        _text(out, s)


def _boolean(out: bytearray, v: bool) -> None:
    out.append(int(v))


def _nothing(out: bytearray, v: Any) -> None:
    """A family whose members tie on value (NaN, the ill-typed)."""


# ``views.compare._family``'s families and their values' encodings
_VALUES: dict[int, Callable[[bytearray, Any], None]] = {0: _number, 1: _nothing, 2: _text, 3: _text_pair, 4: _number, 5: _number,
           6: _boolean, 7: _number, 9: _nothing}

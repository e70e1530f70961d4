"""The values of xsd:duration, xsd:dayTimeDuration and xsd:yearMonthDuration
(XSD 1.1 §3.3.6, §3.4.26, §3.4.27): months and exact seconds of any size,
and their order (design note 213).

A duration's value is a whole number of months and a decimal number of
seconds. Durations are partially ordered by where they lead from four
reference dateTimes (XSD 1.1 §3.3.6.2): P < Q when, from each, P ends
before Q. The sum is exact here; it went through Python's datetime before,
where ``PT0.0000001S`` equalled ``PT0S`` and ``P10000Y`` could not be
compared.

>>> duration_of("P1Y2M3DT4H5M6.7S", XSD.duration)
Duration(months=14, seconds=Decimal('273906.7'))
>>> order(duration_of("P1M", XSD.duration), duration_of("P27D", XSD.duration))
1
>>> order(duration_of("P1M", XSD.duration), duration_of("P30D", XSD.duration))
Traceback (most recent call last):
...
views.terms.ExprError: indeterminate comparison of durations
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import NamedTuple

from rdflib.namespace import XSD
from rdflib.term import URIRef

from views.moments import DAY, days_from_civil
from views.terms import EXACT, ExprError, plain

DURATION_TYPES = (XSD.duration, XSD.dayTimeDuration, XSD.yearMonthDuration)

# XSD 1.1 §3.3.6.1: ASCII digits only; seconds as duSecondFrag, whose
# unsignedDecimalPtNumeral allows "1." and ".5"
_N = "([0-9]+)"
_FORM = re.compile(rf"(-)?P(?:{_N}Y)?(?:{_N}M)?(?:{_N}D)?"
                   rf"(?:T(?:{_N}H)?(?:{_N}M)?(?:([0-9]+(?:\.[0-9]*)?|\.[0-9]+)S)?)?")


class Duration(NamedTuple):
    months: int
    seconds: Decimal


def duration_of(lexical: str, datatype: URIRef) -> Duration:
    """The value of a duration of this lexical form and datatype (one of
    ``DURATION_TYPES``); an ExprError when the form is not one."""
    m = _FORM.fullmatch(lexical)
    if not m or lexical.endswith(("P", "T")) or not any(m.groups()[1:]):
        raise ExprError("ill-typed duration")
    neg, y, mo, d, h, mi, s = m.groups()
    if datatype == XSD.dayTimeDuration and (y or mo):
        raise ExprError("ill-typed dayTimeDuration")
    if datatype == XSD.yearMonthDuration and (d or h or mi or s):
        raise ExprError("ill-typed yearMonthDuration")
    months = int(y or 0) * 12 + int(mo or 0)
    whole = ((int(d or 0) * 24 + int(h or 0)) * 60 + int(mi or 0)) * 60
    seconds = EXACT.add(Decimal(whole), Decimal(s or 0))  # any number of digits
    return Duration(-months, EXACT.minus(seconds)) if neg else Duration(months, seconds)


# XSD 1.1 §3.3.6.2: the four dateTimes durations are ordered from (year,
# month; each the month's first instant, in UTC)
_REFERENCES = ((1696, 9), (1697, 2), (1903, 3), (1903, 7))


def _leads_to(reference: tuple[int, int], d: Duration) -> Decimal:
    """Seconds from 1970 to the reference plus the duration (XSD 1.1 §E.3.3:
    a reference is a month's first day, so months add without pinning the
    day), in any year."""
    year, month = divmod(reference[0] * 12 + reference[1] - 1 + d.months, 12)
    return EXACT.add(Decimal(days_from_civil(year, month + 1, 1) * DAY), d.seconds)


def order(x: Duration, y: Duration) -> int:
    """-1/0/1 by the XSD partial order: equal when the months and seconds
    are; before when from every reference; else an ExprError
    (indeterminate)."""
    if x == y:
        return 0
    signs = {_cmp(_leads_to(r, x), _leads_to(r, y)) for r in _REFERENCES}
    if len(signs) == 1 and 0 not in signs:
        return signs.pop()
    raise ExprError("indeterminate comparison of durations")


def duration_key(d: Duration) -> Decimal:
    """Where the duration leads from the first reference: a linear extension
    of the partial order (ORDER BY's, ``views.compare.order_key``)."""
    return _leads_to(_REFERENCES[0], d)


def _cmp(x: Decimal, y: Decimal) -> int:
    return (x > y) - (x < y)


def canonical_duration(lexical: str, datatype: URIRef) -> str:
    """The canonical form of a duration (XSD 1.1 §3.3.6.2,
    durationCanonicalMap; F&O 3.1 §19.1.2.2 casts to a string so): months
    as years and months, seconds as days, hours, minutes and seconds, zero
    parts left out, zero itself ``PT0S`` (``P0M`` for a yearMonthDuration,
    §3.4.26.2); an ExprError when ill-typed.

    >>> canonical_duration("-P1DT25H", XSD.dayTimeDuration), canonical_duration("P1Y13M", XSD.duration)
    ('-P2DT1H', 'P2Y1M')
    >>> canonical_duration("-PT0S", XSD.duration), canonical_duration("P0Y", XSD.yearMonthDuration)
    ('PT0S', 'P0M')
    """
    months, seconds = duration_of(lexical, datatype)
    if not months and not seconds:
        return "P0M" if datatype == XSD.yearMonthDuration else "PT0S"
    out = "-P" if months < 0 or seconds < 0 else "P"
    years, months = divmod(abs(months), 12)
    out += (f"{years}Y" if years else "") + (f"{months}M" if months else "")
    whole = int(seconds.copy_abs())  # exact (abs() rounds to the context)
    fraction = EXACT.subtract(seconds.copy_abs(), Decimal(whole))
    minutes, second = divmod(whole, 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    out += f"{days}D" if days else ""
    rest = EXACT.add(Decimal(second), fraction)
    if hours or minutes or rest:
        out += ("T" + (f"{hours}H" if hours else "") + (f"{minutes}M" if minutes else "")
                + (f"{plain(rest)}S" if rest else ""))
    return out

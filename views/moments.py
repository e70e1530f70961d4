"""The values of xsd:dateTime and xsd:date (XSD 1.1 §3.3.7, §3.3.9, §D.2):
a year of any size (``0000`` is 1 BCE, ``-0001`` 2 BCE, ``12345`` after
9999), seconds to any precision, an optional timezone, and the point on the
time line they name, in exact seconds.

Python's datetime held years 1 to 9999 and microseconds: a year outside was
ill-typed, ``…:00.0000001`` equalled ``…:00``, and ``…:00.9999999`` (its
microseconds rounded to a million) was ill-typed.

>>> m = moment_of("2002-01-01T24:00:00.5Z")  # XSD: 24:00:00 only at its first instant
Traceback (most recent call last):
...
views.terms.ExprError: ill-typed dateTime
>>> m = moment_of("-0001-12-31T24:00:00+01:00")
>>> (m.year, m.month, m.day, m.hour, m.tz), m.instant == moment_of("0000-01-01T00:00:00+01:00").instant
((0, 1, 1, 0, 60), True)
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from decimal import Decimal

from views.terms import EXACT, ExprError, plain

_YEAR = r"(-?(?:[1-9][0-9]{3,}|0[0-9]{3}))"
_TZ = r"(Z|[+-](?:(?:0[0-9]|1[0-3]):[0-5][0-9]|14:00))?"
_2 = "([0-9][0-9])"  # XSD's digits are ASCII (Python's \d is any Unicode digit)
_DATETIME = re.compile(_YEAR + rf"-{_2}-{_2}T{_2}:{_2}:([0-9][0-9](?:\.[0-9]+)?)" + _TZ)
_DATE = re.compile(_YEAR + rf"-{_2}-{_2}" + _TZ)
DAY = 86_400
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class Moment:
    """A dateTime's or a date's fields (24:00:00 already the next day's
    midnight) and its timezone in minutes east of UTC, None when absent."""

    year: int
    month: int
    day: int
    hour: int
    minute: int
    second: Decimal
    tz: int | None

    @property
    def local(self) -> Decimal:
        """Seconds from 1970-01-01T00:00:00 to the fields, as if in UTC."""
        days = days_from_civil(self.year, self.month, self.day)
        return EXACT.add(Decimal(days * DAY + self.hour * 3600 + self.minute * 60), self.second)

    def timestamp(self) -> dt.datetime | None:
        """The instant as Python's datetime: None without a timezone, or out
        of the years datetime holds (the dictionary's ``ts``)."""
        if self.tz is None:
            return None
        try:
            return _EPOCH + dt.timedelta(microseconds=round(self.instant * 1_000_000))
        except (OverflowError, ValueError):
            return None

    @property
    def instant(self) -> Decimal:
        """The point on the time line: the fields less the timezone's offset
        (an untimezoned value read as UTC)."""
        return EXACT.subtract(self.local, Decimal(60 * (self.tz or 0)))


def days_from_civil(y: int, m: int, d: int) -> int:
    """Days from 1970-01-01 in the proleptic Gregorian calendar, for any year
    (XSD 1.1: year 0 is 1 BCE).

    >>> days_from_civil(1970, 1, 1), days_from_civil(2000, 3, 1), days_from_civil(0, 3, 1)
    (0, 11017, -719468)
    """
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def civil_from_days(z: int) -> tuple[int, int, int]:
    """``days_from_civil``'s inverse.

    >>> civil_from_days(-719468), civil_from_days(11017)
    ((0, 3, 1), (2000, 3, 1))
    """
    z += 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + (3 if mp < 10 else -9)
    return yoe + era * 400 + (m <= 2), m, d


def _days_in(y: int, m: int) -> int:
    if m == 2:
        return 29 if y % 4 == 0 and (y % 100 != 0 or y % 400 == 0) else 28
    return 30 if m in (4, 6, 9, 11) else 31


def _zone(tz: str | None) -> int | None:
    if not tz:
        return None
    if tz == "Z":
        return 0
    return (1 if tz[0] == "+" else -1) * (int(tz[1:3]) * 60 + int(tz[4:6]))


def moment_of(lexical: str) -> Moment:
    """An xsd:dateTime's value; an ExprError when the form is not one."""
    m = _DATETIME.fullmatch(lexical)
    if not m:
        raise ExprError("ill-typed dateTime")
    y, mo, d, h, mi, s, tz = m.groups()
    year, month, day, hour, minute, second = int(y), int(mo), int(d), int(h), int(mi), Decimal(s)
    if not (1 <= month <= 12 and 1 <= day <= _days_in(year, month) and minute < 60
            and second < 60 and (hour < 24 or (hour == 24 and minute == 0 and second == 0))):
        raise ExprError("ill-typed dateTime")
    if hour == 24:  # XSD 1.1 §3.3.7: the next day's first instant
        year, month, day = civil_from_days(days_from_civil(year, month, day) + 1)
        hour = 0
    return Moment(year, month, day, hour, minute, second, _zone(tz))


def date_moment_of(lexical: str) -> Moment:
    """An xsd:date's value: its first instant (XSD 1.1 §3.3.9)."""
    m = _DATE.fullmatch(lexical)
    if not m:
        raise ExprError("ill-typed date")
    y, mo, d, tz = m.groups()
    year, month, day = int(y), int(mo), int(d)
    if not (1 <= month <= 12 and 1 <= day <= _days_in(year, month)):
        raise ExprError("ill-typed date")
    return Moment(year, month, day, 0, 0, Decimal(0), _zone(tz))


def canonical_datetime(lexical: str) -> str:
    """The canonical form of an xsd:dateTime (XSD 1.1 §3.3.7.2,
    dateTimeCanonicalMap; F&O 3.1 §19.1.2.2 casts to a string so): 24:00:00
    as the next day's midnight, seconds without trailing zeros, a zero
    offset as ``Z``; an ExprError when ill-typed.

    >>> canonical_datetime("2002-01-01T24:00:00.000-00:00"), canonical_datetime("-0001-02-03T04:05:06.70+05:30")
    ('2002-01-02T00:00:00Z', '-0001-02-03T04:05:06.7+05:30')
    """
    return canonical_moment(moment_of(lexical))


def canonical_moment(m: Moment) -> str:
    """A moment's canonical dateTime form (``canonical_datetime``)."""
    return f"{_day(m)}T{m.hour:02d}:{m.minute:02d}:{_seconds(m.second)}{_offset(m.tz)}"


def canonical_date(lexical: str) -> str:
    """The canonical form of an xsd:date (XSD 1.1 §3.3.9.2): a zero offset
    as ``Z``; an ExprError when ill-typed.

    >>> canonical_date("12345-06-07+00:00"), canonical_date("0000-01-01")
    ('12345-06-07Z', '0000-01-01')
    """
    m = date_moment_of(lexical)
    return _day(m) + _offset(m.tz)


def _day(m: Moment) -> str:
    year = f"{'-' if m.year < 0 else ''}{abs(m.year):04d}"
    return f"{year}-{m.month:02d}-{m.day:02d}"


def _seconds(s: Decimal) -> str:
    whole = int(s)
    if s == whole:
        return f"{whole:02d}"
    return f"{whole:02d}" + plain(EXACT.subtract(s, Decimal(whole)))[1:]  # ".5" of "0.5"


def _offset(tz: int | None) -> str:
    if tz is None:
        return ""
    if tz == 0:
        return "Z"
    return f"{'-' if tz < 0 else '+'}{abs(tz) // 60:02d}:{abs(tz) % 60:02d}"

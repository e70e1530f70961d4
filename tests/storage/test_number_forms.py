"""Migration 0027's functions write a rendered SUM's value as the interpreter
does (``views.terms.make_numeric``, whose doubles are Python's ``repr``, an
oracle outside our SQL): the same lexical form for every double of a wide
sample — random bit patterns (subnormals, the largest, every exponent),
whole numbers past 2^53 (where Postgres writes more digits than needed),
the fixed/exponent boundaries — for floats (migration 0035) and for decimals; and the sums and
averages a rendered SUM and AVG compute, as the interpreter computes them."""

from __future__ import annotations

import math
import random
import struct
from decimal import Decimal

import sqlalchemy as sa
from rdflib import XSD, URIRef

from views.aggregates import nearest_double, nearest_single_sum
from views.terms import EXACT, make_numeric, single


def _doubles(rng: random.Random) -> list[float]:
    special = [0.0, -0.0, 1.0, -1.0, 0.1, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
               math.inf, -math.inf, math.nan, 2.0 ** 53, 2.0 ** 53 + 2, 2.0 ** 63, 2.0 ** 64]
    edges = [s * 10.0 ** k * m for k in range(-8, 22) for m in (1.0, 9.999999999999998, 1.5)
             for s in (1, -1)]
    bits = [struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0] for _ in range(20000)]
    whole = [float(rng.randint(-10 ** 19, 10 ** 19)) for _ in range(3000)]
    plain = [rng.uniform(-1e4, 1e4) for _ in range(3000)]
    return special + edges + bits + whole + plain


def _column(c: sa.Connection, sql: str, values: list, kind: str) -> list[str]:
    return [r[0] for r in c.execute(sa.text(
        f"SELECT {sql} FROM unnest(CAST(:v AS {kind}[])) WITH ORDINALITY AS u(x, n) ORDER BY n"),
        {"v": values})]


def _written_alike(url: str, function: str, values: list, kind: URIRef) -> None:
    """``function`` writes each value as ``make_numeric`` writes it as ``kind``."""
    engine = sa.create_engine(url)
    with engine.connect() as c:
        if kind == XSD.decimal:
            got = _column(c, f"{function}(x)", [format(v, "f") for v in values], "numeric")
        else:
            got = _column(c, f"{function}(x)", values, "float8")
    engine.dispose()
    want = [str(make_numeric(v, kind)) for v in values]
    wrong = [(v, g, w) for v, g, w in zip(values, got, want, strict=True) if g != w]
    assert not wrong, wrong[:10]


def test_a_double_is_written_as_the_interpreter_writes_it(migrated: str) -> None:
    _written_alike(migrated, "pv_double_lexical", _doubles(random.Random(153)), XSD.double)


def test_a_float_is_written_as_the_interpreter_writes_it(migrated: str) -> None:
    """Migrations 0035 and 0039: ``pv_float_lexical``, a double rounded to
    the nearest float (overflow to INF and underflow to a signed zero,
    where Postgres's cast raises) and written as ``make_numeric`` writes an
    xsd:float: its shortest digits (``shortest_single``, Python's exact
    decimals; Postgres's float4 text), as a double's. Beside random bit
    patterns, the floats at and next to short decimals of every magnitude,
    where a shorter decimal halfway between two floats is to be passed by."""
    rng = random.Random(210)
    top, tiny = 3.4028234663852886e38, 2.0 ** -149
    edges = [top, -top, 3.4028235677973366e38, 3.4028235677973362e38, 1e39, tiny, tiny / 2,
             tiny * 0.5000001, -tiny / 2, 1e-46, 16777217.0, 0.1, 0.30000000447034836,
             1.5e10, 1.5000001e10]
    floats = [struct.unpack("f", struct.pack("I", rng.getrandbits(32)))[0] for _ in range(20000)]
    near = [struct.unpack("f", struct.pack("I", bits + step))[0]
            for j in range(-45, 39, 3) for k in rng.sample(range(1, 10000), 40)
            if 0 < (bits := struct.unpack("I", struct.pack("f", single(float(f"{k}e{j}"))))[0]) < 0x7F7FFFFF
            for step in (-1, 0, 1)]
    _written_alike(migrated, "pv_float_lexical", _doubles(rng) + edges + floats + near, XSD.float)


def test_a_decimal_is_written_as_the_interpreter_writes_it(migrated: str) -> None:
    rng = random.Random(7)
    values = [Decimal(f"{rng.randint(-10 ** 12, 10 ** 12)}E{rng.randint(-20, 20)}")
              for _ in range(3000)]
    values += [Decimal(0), Decimal("0.000"), Decimal("-0.50"), Decimal(100), Decimal("1E+30"),
               Decimal("12345678901234567890123456789.123456789")]
    _written_alike(migrated, "pv_decimal_lexical", values, XSD.decimal)


def test_a_double_sum_is_the_double_nearest_to_the_exact_sum(migrated: str) -> None:
    """``pv_double_scaled`` and ``pv_double_sum`` against the interpreter's
    ``nearest_double`` (Python's exact fractions): random doubles of every
    magnitude (subnormals, the largest: sums past it are infinite, where
    Postgres's own double addition refuses the overflow) with exact
    decimals among them; NaN and the infinities; an exact zero."""
    rng = random.Random(42)
    doubles = [d for d in _doubles(rng) if math.isfinite(d)]
    cases: list[tuple[list[float], list[Decimal]]] = [
        (rng.sample(doubles, rng.randint(1, 6)),
         [Decimal(f"{rng.randint(-10 ** 20, 10 ** 20)}E{rng.randint(-25, 5)}")
          for _ in range(rng.randint(0, 2))]) for _ in range(2000)]
    cases += [([1.7976931348623157e308] * 2, []), ([1.7976931348623157e308, -1e308], []),
              ([0.1, 0.2], [Decimal(3)]), ([-0.0], []), ([5e-324, -5e-324], []),
              ([0.1] * 10, [])]
    engine = sa.create_engine(migrated)
    with engine.connect() as c:
        for doubles_, exacts in cases:
            got = c.execute(sa.text(
                "SELECT pv_double_sum(0, 0, 0, (SELECT sum(x) FROM unnest(CAST(:x AS numeric[])) x), "
                "(SELECT sum(pv_double_scaled(d)) FROM unnest(CAST(:d AS float8[])) d))"),
                {"x": [format(x, "f") for x in exacts], "d": doubles_}).scalar()
            want = nearest_double([*doubles_, *exacts])
            assert got == want and math.copysign(1, got) == math.copysign(1, want), \
                (doubles_, exacts, got, want)
        for nans, pinf, ninf, want in ((1, 0, 0, math.nan), (0, 1, 1, math.nan),
                                        (0, 2, 0, math.inf), (0, 0, 1, -math.inf)):
            got = c.execute(sa.text("SELECT pv_double_sum(:a, :b, :c, 1, 5)"),
                            {"a": nans, "b": pinf, "c": ninf}).scalar()
            assert got == want or (math.isnan(got) and math.isnan(want))
    engine.dispose()


def test_a_float_sum_is_the_float_nearest_to_the_exact_sum(migrated: str) -> None:
    """Migration 0041's ``pv_single_sum`` against ``nearest_single_sum``
    (Python's exact fractions): random floats, and sums placed just past,
    just short of and at the halfway point between two floats, where the
    double nearest the sum is that point and rounding through it picked
    the wrong float; the largest float's edge (infinity) and the smallest's
    (zero)."""
    rng = random.Random(220)
    floats = [struct.unpack("<f", struct.pack("<I", rng.getrandbits(31)))[0] for _ in range(3000)]
    floats = [f for f in floats if math.isfinite(f)]
    cases = [rng.sample(floats, rng.randint(1, 5)) for _ in range(1500)]
    for _ in range(500):  # a float, half the gap to the next, and a nudge far below it
        f = struct.unpack("<f", struct.pack("<I", rng.randrange(0x00800000, 0x7F000000)))[0]
        gap = struct.unpack("<f", struct.pack("<I", struct.unpack("<I", struct.pack("<f", f))[0]
                                               + 1))[0] - f
        nudge = math.ldexp(1.0, math.frexp(gap)[1] - rng.randint(30, 60))
        cases.append([f, gap / 2, rng.choice([nudge, -nudge, 0.0])])
    top = 3.4028234663852886e38
    cases += [[top, top], [top, 2.0 ** 103], [top, 2.0 ** 103, -(2.0 ** 70)], [2.0 ** -149, -(2.0 ** -149)]]
    engine = sa.create_engine(migrated)
    with engine.connect() as c:
        for members in cases:
            got = c.execute(sa.text(
                "SELECT pv_single_sum(0, 0, 0, 0, (SELECT sum(pv_double_scaled(d)) "
                "FROM unnest(CAST(:d AS float8[])) d))"), {"d": members}).scalar()
            assert got == nearest_single_sum(members), (members, got)
    engine.dispose()


def test_a_decimal_average_divides_as_pythons_decimals(migrated: str) -> None:
    """``pv_decimal_div``: Python's default context (28 significant digits,
    ties to even) over random quotients of every magnitude and exact ties
    at the 29th digit, where rounding half away from zero would differ."""
    rng = random.Random(11)
    cases = [(Decimal(f"{rng.randint(-10 ** rng.randint(1, 40), 10 ** rng.randint(1, 40))}"
                      f"E{rng.randint(-30, 10)}"),
              Decimal(rng.choice([rng.randint(1, 10), rng.randint(1, 10 ** 6), 3, 7, 1024])))
             for _ in range(6000)]
    for _ in range(1500):
        tie = Decimal(rng.randint(10 ** 27, 10 ** 28 - 1) * 10 + 5).scaleb(rng.randint(-40, 10))
        n = Decimal(rng.choice([1, 2, 4, 5, 8, 16, 25]))
        cases.append((EXACT.multiply(tie, n), n))
    engine = sa.create_engine(migrated)
    with engine.connect() as c:
        got = [r[0] for r in c.execute(sa.text(
            "SELECT pv_decimal_lexical(pv_decimal_div(x, n)) FROM unnest(CAST(:x AS numeric[]), "
            "CAST(:n AS numeric[])) WITH ORDINALITY AS u(x, n, i) ORDER BY i"),
            {"x": [format(x, "f") for x, _ in cases], "n": [format(n, "f") for _, n in cases]})]
    want = [str(make_numeric(x / n, XSD.decimal)) for x, n in cases]
    wrong = [(x, n, g, w) for (x, n), g, w in zip(cases, got, want, strict=True) if g != w]
    assert not wrong, wrong[:10]
    engine.dispose()


def test_a_double_average_that_underflows_is_zero_not_refused(migrated: str) -> None:
    engine = sa.create_engine(migrated)
    with engine.connect() as c:
        for s, n in ((5e-324, 2), (-5e-324, 2), (5e-324 * 3, 2), (1.5, 3), (math.inf, 2)):
            got = c.execute(sa.text("SELECT pv_double_div(CAST(:s AS float8), :n)"),
                            {"s": s, "n": n}).scalar()
            want = s / n
            assert got == want and math.copysign(1, got) == math.copysign(1, want), (s, n, got)
    engine.dispose()

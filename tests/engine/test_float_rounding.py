"""An xsd:float's value is the float nearest its decimal form, rounded once
(XSD 1.1 §3.3.5; design note 219), checked against pyoxigraph (Rust's
correctly rounded ``f32`` parse): forms just either side of the halfway
point between two floats, where rounding through a double went wrong."""

from __future__ import annotations

import random
import struct
from decimal import Decimal, localcontext

import pyoxigraph as ox
from rdflib import XSD

from views.terms import number_of

_STORE = ox.Store()


def _pyoxigraph_value(form: str) -> float:
    query = (f'SELECT (<{XSD}double>("{form}"^^<{XSD}float>) AS ?v) {{}}')
    return float(next(iter(_STORE.query(query)))["v"].value)  # type: ignore[index]


def _halfway_forms(rng: random.Random, count: int) -> list[str]:
    forms = []
    with localcontext() as ctx:
        ctx.prec = 60
        for _ in range(count):
            bits = rng.randrange(1, 0x7F7FFFFF)
            lo, hi = (struct.unpack("<f", struct.pack("<I", b))[0] for b in (bits, bits + 1))
            halfway = (Decimal(lo) + Decimal(hi)) / 2  # exact: 25 bits
            nudge = halfway * Decimal(f"1e-{rng.randint(18, 40)}")
            for form in (halfway + nudge, halfway - nudge, halfway):
                forms.append(format(form, "e") if rng.random() < 0.5 else format(form, "f"))
    return forms


def test_a_float_form_beside_a_halfway_point_rounds_as_pyoxigraph_does() -> None:
    forms = _halfway_forms(random.Random(219), 1500) + [
        "1.00000005960464477550", "3.4028235677973366e38",  # was 1; was INF
        "7.0064923216240853546186479164495806565e-46", "-0.0"]
    differ = [f for f in forms if number_of(f, XSD.float) != _pyoxigraph_value(f)]
    assert differ == []

"""xsd:float is single precision (XSD 1.1 §3.3.5; design note 210): a float
literal's value is the nearest IEEE single, not the nearest double. The
dictionary's ``num`` (a filter's value) and ``sortkey`` of every float term
are written again from ``views.terms.number_of``, which now rounds;
``pv_float``, a double rounded to the nearest single (±INF past the
largest, a signed zero below the smallest, where Postgres's own cast
raises), and ``pv_float_lexical``, a float written as
``views.terms.make_numeric`` writes it (its value's digits as a double's,
``pv_double_lexical``: Postgres's shortest float4 digits are not Python's
when a shorter one rounds to the float by a tie), let a rendered SUM and
AVG of floats end as the interpreter's do.

Revision ID: 0035
Revises: 0034
Create Date: 2026-12-07 08:00:00
"""

from __future__ import annotations

import math

from alembic import op
from rdflib import URIRef

from storage.migrate import rewrite_terms
from views.sortkey import stored_key
from views.terms import ExprError, number_of

revision = '0035'
down_revision = '0034'
branch_labels = None
depends_on = None

FLOAT = "http://www.w3.org/2001/XMLSchema#float"

FUNCTIONS = r"""
CREATE OR REPLACE FUNCTION pv_float(x float8) RETURNS float8
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT CASE
        WHEN x = 'NaN'::float8 OR x IN ('Infinity', '-Infinity') THEN x
        -- 2^128 - 2^103, halfway past the largest float: rounds to infinity (ties to even)
        WHEN abs(x) >= 3.4028235677973366e38 THEN sign(x) * 'Infinity'::float8
        -- 2^-150, half the smallest: rounds to zero (ties to even)
        WHEN abs(x) <= 7.006492321624085e-46 THEN CASE WHEN x::text LIKE '-%' THEN '-0'::float8
                                                        ELSE 0 END
        ELSE x::float4::float8 END
$$;
CREATE OR REPLACE FUNCTION pv_float_lexical(x float8) RETURNS text
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT pv_double_lexical(pv_float(x))
$$;
"""


def _num(lexical: str) -> float | None:
    try:
        v = float(number_of(lexical, URIRef(FLOAT)))
    except ExprError:
        return None
    return v if math.isfinite(v) else None


def upgrade() -> None:
    op.execute(FUNCTIONS)
    rewrite_terms(op.get_bind(), "kind = 2 AND datatype = :float", {"float": FLOAT},
                  {"num": ("float8", lambda r: _num(r.lexical)),
                   "sortkey": ("bytea", lambda r: stored_key(r.kind, r.lexical, r.datatype, r.lang))})


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS pv_float_lexical(float8)")
    op.execute("DROP FUNCTION IF EXISTS pv_float(float8)")

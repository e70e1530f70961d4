"""A SUM (and AVG) of floats is the float nearest the exact sum, rounded
once (``views.aggregates.nearest_single_sum``, design note 220): it was
the double nearest the sum, then the float nearest that double, and a sum
just past a halfway point between two floats whose nearest double is that
point went to the wrong float. ``pv_single_sum`` takes the exact sum
``pv_double_sum`` takes and reads it as a float4 (Postgres's ``float4in``
rounds a decimal once), past the largest float an infinity and below half
the smallest a zero, where ``float4in`` raises.

Revision ID: 0041
Revises: 0040
Create Date: 2026-12-07 12:30:00
"""

from __future__ import annotations

from alembic import op

revision = '0041'
down_revision = '0040'
branch_labels = None
depends_on = None

# the sum's scale in pv_double_sum is 10^1074: at or past (2^128 - 2^103) it
# rounds to an infinite float, at or below 2^-150 to zero (round half to even)
ROUNDS_TO_INFINITY = (2 ** 128 - 2 ** 103) * 10 ** 1074
ROUNDS_TO_ZERO = 10 ** 1074 // 2 ** 150

SINGLE_SUM = rf"""
CREATE OR REPLACE FUNCTION pv_single_sum(nans numeric, pinf numeric, ninf numeric,
                                         exact numeric, scaled numeric) RETURNS float8
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN nans > 0 OR (pinf > 0 AND ninf > 0) THEN 'NaN'::float8
                WHEN pinf > 0 THEN 'Infinity'::float8
                WHEN ninf > 0 THEN '-Infinity'::float8
                WHEN abs(s) <= {ROUNDS_TO_ZERO} THEN 0::float8
                WHEN abs(s) >= {ROUNDS_TO_INFINITY}
                THEN CASE WHEN s > 0 THEN 'Infinity'::float8 ELSE '-Infinity'::float8 END
                ELSE (s::text || 'e-1074')::float4::float8 END
    FROM (SELECT (coalesce(exact, 0) * power(2::numeric, 1074) + coalesce(scaled, 0))
                 * power(5::numeric, 1074) AS s) AS x
$$;
"""


def upgrade() -> None:
    op.execute(SINGLE_SUM)


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS pv_single_sum(numeric, numeric, numeric, numeric, "
               "numeric)")

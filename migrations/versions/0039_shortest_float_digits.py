"""A computed xsd:float is written with the float's own shortest digits
(``views.terms.shortest_single``, design note 214): ``0.1f + 0.2f`` is
``"0.3"^^xsd:float``, where it was ``"0.30000001192092896"``, the float's
value written as a double's. ``pv_float_lexical`` takes the digits
Postgres writes for a float4 (Ryu, shortest, a decimal exactly halfway to
a neighbour excluded: what ``shortest_single`` computes) and writes them
as ``pv_double_lexical`` writes a double, whose shortest digits they are
(nine or fewer).

Revision ID: 0039
Revises: 0038
Create Date: 2026-12-07 11:30:00
"""

from __future__ import annotations

from alembic import op

revision = '0039'
down_revision = '0038'
branch_labels = None
depends_on = None

SHORTEST = r"""
CREATE OR REPLACE FUNCTION pv_float_lexical(x float8) RETURNS text
LANGUAGE sql IMMUTABLE STRICT SET extra_float_digits = 1 AS $$
    SELECT pv_double_lexical(CAST(CAST(CAST(pv_float(x) AS float4) AS text) AS float8))
$$;
"""

AS_DOUBLE = r"""
CREATE OR REPLACE FUNCTION pv_float_lexical(x float8) RETURNS text
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT pv_double_lexical(pv_float(x))
$$;
"""


def upgrade() -> None:
    op.execute(SHORTEST)


def downgrade() -> None:
    op.execute(AS_DOUBLE)

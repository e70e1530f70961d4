"""``views.solutions``: how many solutions a view's results hold, counted
with their multiplicity (the sum of its root's annotations). A view whose
state holds few rows can still have many solutions — a projection of a
large join keeps only its distinct results stored (design note 147) — and
the router renders its batches by the larger of the two
(``server.maintenance.jobs.unrendered``). Set when a state is built, kept by
each job's end from the ΔV it records; NULL for a view not built since.

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-26 13:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0024'
down_revision = '0023'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("views", sa.Column("solutions", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    op.drop_column("views", "solutions")

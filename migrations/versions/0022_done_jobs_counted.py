"""Done jobs leave the queue after a while, counted (design note 143): the
queue gained a row per view woken by every write and kept it for ever, and
the metrics read every done job at each scrape. ``job_totals`` holds what
the metrics need of the jobs pruned (``storage.ops.prune``): counts by kind
and executor, failed attempts, and the histogram of their sizes.

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-26 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = '0022'
down_revision = '0021'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "job_totals",
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("executor", sa.Text(), nullable=False),
        sa.Column("done", sa.BigInteger(), nullable=False),
        sa.Column("failed", sa.BigInteger(), nullable=False),
        sa.Column("sized", sa.BigInteger(), nullable=False),
        sa.Column("triples", sa.BigInteger(), nullable=False),
        sa.Column("le", postgresql.ARRAY(sa.BigInteger()), nullable=False),
        sa.PrimaryKeyConstraint("kind", "executor", name="pk_job_totals"))


def downgrade() -> None:
    op.drop_table("job_totals")

"""``views.tally_epoch``: the epoch of the view's group tallies (design note
181). A rendered statement keeps, per group of a group node whose
aggregates are sums over its members (COUNT, SUM, AVG, none DISTINCT) or
extremes (MIN, MAX, SAMPLE), the tallies they are computed from, in a table
of their own
(``storage.krel.create_tally``), each row stamped with the epoch it was
written in. Only rows of the view's current epoch are read. Every job that
ends otherwise than by a rendered statement (``storage.views_repo.close``:
the interpreter, Spark, a backfill, pods entering or leaving) moves the
epoch on, so no tally written before a change the statement did not make
is read again: its group is recomputed from its members and written anew.

Revision ID: 0032
Revises: 0031
Create Date: 2026-11-28 16:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0032'
down_revision = '0031'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("views", sa.Column("tally_epoch", sa.BigInteger(), server_default="0",
                                     nullable=False))


def downgrade() -> None:
    op.drop_column("views", "tally_epoch")

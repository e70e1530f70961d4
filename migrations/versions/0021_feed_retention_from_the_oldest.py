"""A view's feed is compacted from its oldest delta (design note 142): the
view counts its deltas (``views.feed_deltas``), so retention's count cut
drops the oldest beyond it without reading the deltas kept, and an index
of each view's deltas by time finds the age cut. Reading 10,000 kept deltas
newest first for the count cut cost every job of a view whose feed was full
~7.5 ms.

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-26 09:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0021'
down_revision = '0020'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("views", sa.Column("feed_deltas", sa.BigInteger(), server_default="0",
                                     nullable=False))
    op.execute("UPDATE views v SET feed_deltas = (SELECT count(*) FROM view_changes c "
               "WHERE c.view_id = v.id)")
    op.create_index("ix_view_changes_view_id_at", "view_changes", ["view_id", "at"])


def downgrade() -> None:
    op.drop_index("ix_view_changes_view_id_at", "view_changes")
    op.drop_column("views", "feed_deltas")

"""A recorded ΔV's rows (``view_change_rows``) no longer reference their
head (``view_changes``) by a foreign key: the code that drops heads drops
their rows with them (``storage.feed``'s retention and compaction,
``storage.views_repo.drop_view``). The key's check ran once per row a job
recorded, as a query Postgres plans once per session: planned while the
feed was small, it scanned every head of every view for each row, and a
job recording 50 rows spent 5.4 ms in it after 600 jobs (design note 152).

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-26 20:00:00
"""

from __future__ import annotations

from alembic import op

revision = '0026'
down_revision = '0025'
branch_labels = None
depends_on = None

_KEY = "fk_view_change_rows_view_id_view_changes"


def upgrade() -> None:
    op.drop_constraint(_KEY, "view_change_rows", type_="foreignkey")


def downgrade() -> None:  # rows without a head (none, unless code dropped one alone) go first
    op.execute("DELETE FROM view_change_rows r WHERE NOT EXISTS (SELECT 1 FROM view_changes c "
               "WHERE c.view_id = r.view_id AND c.seq = r.seq)")
    op.create_foreign_key(_KEY, "view_change_rows", "view_changes", ["view_id", "seq"],
                          ["view_id", "seq"], ondelete="CASCADE")

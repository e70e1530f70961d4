"""A job turns on the capture of its view's ΔV in one round trip (design
note 122): the session's capture table made where missing and the
transaction's capture settings, in one function.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-25 08:00:00
"""

from __future__ import annotations

from alembic import op

revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
CREATE FUNCTION podviews_feed_capture(root text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  -- made once per session and emptied at each commit (made per transaction,
  -- ON COMMIT DROP, it cost a job ~5 ms of catalog writes: design note 119)
  CREATE TEMP TABLE IF NOT EXISTS feed_capture (vars TEXT NOT NULL, ids JSONB NOT NULL,
                                                k BIGINT NOT NULL) ON COMMIT DELETE ROWS;
  PERFORM set_config('podviews.capture', 'on', true), set_config('podviews.feed_root', root, true);
END $$""")


def downgrade() -> None:
    op.execute("DROP FUNCTION podviews_feed_capture(text)")

"""``podviews_delta_start`` no longer turns generic plans on for the rest
of the job's transaction (migration 0018 did): the statement that stages ΔG
reads its parameters through subqueries, so Postgres keeps one generic plan
of it by itself (``storage.changes.DELTA_G``), and the function now runs
with the job's claim for every job but a backfill
(``storage.views_repo.claim_and_lock``), the interpreter's included (design
note 142).

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-26 09:00:00
"""

from __future__ import annotations

from alembic import op

revision = '0020'
down_revision = '0019'
branch_labels = None
depends_on = None


def _delta_start(settings: str) -> str:
    return f"""
CREATE OR REPLACE FUNCTION podviews_delta_start() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF to_regclass('pg_temp.pv_dg') IS NULL THEN
    CREATE TEMP TABLE pv_dg (s bigint NOT NULL, p bigint NOT NULL, o bigint NOT NULL,
                             sign int NOT NULL, PRIMARY KEY (p, s, o));
  ELSE
    DELETE FROM pg_temp.pv_dg;
  END IF;
  PERFORM {settings};
END $$"""


def upgrade() -> None:
    op.execute(_delta_start("set_config('jit', 'off', true)"))


def downgrade() -> None:  # 0018's, as it ran
    op.execute(_delta_start("set_config('jit', 'off', true), "
                            "set_config('plan_cache_mode', 'force_generic_plan', true)"))

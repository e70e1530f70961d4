"""``podviews_delta_start`` (run with the claim of every job but a
backfill) has the rest of the job's transaction use generic plans again,
as migration 0018 had it: Postgres otherwise planned most of a small
batch's parameterised statements anew at each bind (the interpreter's ΔG
read, its lookups, the feed's record: 0.3–0.7 ms each), and a batch's
statements gain nothing from plans of its own values (design note 145).
Backfills keep custom plans.

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-26 12:00:00
"""

from __future__ import annotations

from alembic import op

revision = '0023'
down_revision = '0022'
branch_labels = None
depends_on = None

_EMPTY_DG = """
  IF to_regclass('pg_temp.pv_dg') IS NULL THEN
    CREATE TEMP TABLE pv_dg (s bigint NOT NULL, p bigint NOT NULL, o bigint NOT NULL,
                             sign int NOT NULL, PRIMARY KEY (p, s, o));
  ELSE
    DELETE FROM pg_temp.pv_dg;
  END IF;"""


def _delta_start(settings: str) -> str:
    return ("CREATE OR REPLACE FUNCTION podviews_delta_start() RETURNS void "
            f"LANGUAGE plpgsql AS $$\nBEGIN{_EMPTY_DG}\n  PERFORM {settings};\nEND $$")


# the settings this revision's function makes (0025 extends them)
SETTINGS = "set_config('jit', 'off', true), set_config('plan_cache_mode', 'force_generic_plan', true)"


def upgrade() -> None:
    op.execute(_delta_start(SETTINGS))


def downgrade() -> None:  # 0020's
    op.execute(_delta_start("set_config('jit', 'off', true)"))

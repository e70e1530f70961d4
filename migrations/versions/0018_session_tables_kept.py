"""A job's session tables are made once and emptied when a job starts using
them, not at each commit (design note 142).

- The capture table ``feed_captured`` loses ``ON COMMIT DELETE ROWS``:
  truncating it at commit (its heap, its TOAST table, a rebuild of the TOAST
  index) was ~0.6 ms of a small batch's ~1 ms commit. ``storage.feed.record``
  consumes what a job captured; the capture's start empties it too, so no
  row outlives the job that captured it whatever happens.
- ΔG's table ``pv_dg`` (``server.executors.sql.run``) is readied by a
  function, as the capture is: made where missing, emptied, JIT turned off
  for the transaction (note 88). A ``DO`` block did it, compiled anew at
  each batch. From there on the job's prepared statements run on generic
  plans: planning the staging statement for its parameters took ~0.7 ms
  each time, and Postgres kept choosing to.
- Neither says ``IF NOT EXISTS`` once made: that sends a notice each time.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-26 08:00:00
"""

from __future__ import annotations

from alembic import op

revision = '0018'
down_revision = '0017'
branch_labels = None
depends_on = None

CAPTURE = """
CREATE OR REPLACE FUNCTION podviews_feed_capture(root text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF to_regclass('pg_temp.feed_captured') IS NULL THEN
    CREATE TEMP TABLE feed_captured (vars TEXT NOT NULL, ids BIGINT[] NOT NULL,
                                     k BIGINT NOT NULL);
  ELSE
    DELETE FROM pg_temp.feed_captured;
  END IF;
  PERFORM set_config('podviews.capture', 'on', true), set_config('podviews.feed_root', root, true);
END $$"""

DELTA = """
CREATE OR REPLACE FUNCTION podviews_delta_start() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF to_regclass('pg_temp.pv_dg') IS NULL THEN
    CREATE TEMP TABLE pv_dg (s bigint NOT NULL, p bigint NOT NULL, o bigint NOT NULL,
                             sign int NOT NULL, PRIMARY KEY (p, s, o));
  ELSE
    DELETE FROM pg_temp.pv_dg;
  END IF;
  PERFORM set_config('jit', 'off', true), set_config('plan_cache_mode', 'force_generic_plan', true);
END $$"""

# migration 0016's, as it ran
OLD_CAPTURE = """
CREATE OR REPLACE FUNCTION podviews_feed_capture(root text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  CREATE TEMP TABLE IF NOT EXISTS feed_captured (vars TEXT NOT NULL, ids BIGINT[] NOT NULL,
                                           k BIGINT NOT NULL) ON COMMIT DELETE ROWS;
  PERFORM set_config('podviews.capture', 'on', true), set_config('podviews.feed_root', root, true);
END $$"""


def upgrade() -> None:
    op.execute(CAPTURE)
    op.execute(DELTA)


def downgrade() -> None:
    op.execute("DROP FUNCTION podviews_delta_start()")
    op.execute(OLD_CAPTURE)

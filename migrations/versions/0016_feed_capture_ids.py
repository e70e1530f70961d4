"""The change feed captures term-id arrays, not JSON (design note 130): a
root table's row changes go to the session's capture table as
``(vars, ids BIGINT[], k)``; ``storage.feed.record`` nets them per
(vars, ids) and builds a JSON binding only for the bindings whose count
moved. Building and grouping a JSONB document per captured row cost a path
view's small batch ~6 ms of its ~25.

The triggers stay as they are: their argument is the table's variables
(JSON), and the layout (``storage.krel``) makes the columns of n variables
``c0 … c(n-1)``, so the function derives its column list from it.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-25 16:30:00
"""

from __future__ import annotations

from alembic import op

revision = '0016'
down_revision = '0015'
branch_labels = None
depends_on = None

CAPTURE = """
CREATE OR REPLACE FUNCTION podviews_capture() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  cols text;
BEGIN
  IF current_setting('podviews.capture', true) IS DISTINCT FROM 'on' THEN
    RETURN NULL;
  END IF;
  SELECT coalesce(string_agg('r.c' || i, ', ' ORDER BY i), '')
    INTO cols FROM generate_series(0, jsonb_array_length(CAST(TG_ARGV[0] AS jsonb)) - 1) i;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    EXECUTE format('INSERT INTO pg_temp.feed_captured SELECT $1, ARRAY[%s]::bigint[], r.k '
                   'FROM new_rows r', cols) USING TG_ARGV[0];
  END IF;
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    EXECUTE format('INSERT INTO pg_temp.feed_captured SELECT $1, ARRAY[%s]::bigint[], -r.k '
                   'FROM old_rows r', cols) USING TG_ARGV[0];
  END IF;
  RETURN NULL;
END $$
"""


def _start(table: str, ids: str) -> str:
    """The function a job calls to turn the capture on (migration 0015), with
    the session's capture table ``table`` holding ids as ``ids``."""
    return f"""
CREATE OR REPLACE FUNCTION podviews_feed_capture(root text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  CREATE TEMP TABLE IF NOT EXISTS {table} (vars TEXT NOT NULL, ids {ids} NOT NULL,
                                           k BIGINT NOT NULL) ON COMMIT DELETE ROWS;
  PERFORM set_config('podviews.capture', 'on', true), set_config('podviews.feed_root', root, true);
END $$"""


OLD_CAPTURE = """
CREATE OR REPLACE FUNCTION podviews_capture() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('podviews.capture', true) IS DISTINCT FROM 'on' THEN
    RETURN NULL;
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    INSERT INTO pg_temp.feed_capture SELECT TG_ARGV[0], to_jsonb(n) - 'k', n.k FROM new_rows n;
  END IF;
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    INSERT INTO pg_temp.feed_capture SELECT TG_ARGV[0], to_jsonb(o) - 'k', -o.k FROM old_rows o;
  END IF;
  RETURN NULL;
END $$
"""


def upgrade() -> None:
    # a new name for the session's capture table: a session that made the old
    # one (JSONB ids) before the upgrade keeps it, unused
    op.execute(CAPTURE)
    op.execute(_start("feed_captured", "BIGINT[]"))


def downgrade() -> None:
    op.execute(OLD_CAPTURE)  # migration 0011's, as it was: migrations stay as they ran
    op.execute(_start("feed_capture", "JSONB"))

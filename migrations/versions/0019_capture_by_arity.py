"""The capture triggers of a view's root tables run static SQL (design note
142): one trigger function per number of columns, ``podviews_capture_<n>``,
its column list written into it, made on demand by
``podviews_capture_for(n)`` (which ``storage.krel.watch`` calls). The one
function of migration 0016 built the column list by a query and ran its
INSERT as dynamic SQL, planned at every statement that changed a root
table: ~0.2 ms of a small batch's rendered statement. Plpgsql caches a
trigger function's plans per table and session.

The tables watched already have their triggers made again on the function
of their arity, with the same argument (the table's variables).

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-26 08:30:00
"""

from __future__ import annotations

from alembic import op

revision = '0019'
down_revision = '0018'
branch_labels = None
depends_on = None

CAPTURE_FOR = r"""
CREATE FUNCTION podviews_capture_for(n int) RETURNS text LANGUAGE plpgsql AS $body$
DECLARE
  fn text := 'podviews_capture_' || n;
  cols text;
BEGIN
  IF to_regprocedure(fn || '()') IS NULL THEN
    PERFORM pg_advisory_xact_lock(hashtext('podviews_capture_for'));  -- two jobs at once
    IF to_regprocedure(fn || '()') IS NULL THEN
      SELECT coalesce(string_agg('r.c' || i, ', ' ORDER BY i), '') INTO cols
        FROM generate_series(0, n - 1) i;
      EXECUTE format($f$
CREATE FUNCTION %I() RETURNS trigger LANGUAGE plpgsql AS $b$
BEGIN
  IF current_setting('podviews.capture', true) IS DISTINCT FROM 'on' THEN
    RETURN NULL;
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    INSERT INTO pg_temp.feed_captured SELECT TG_ARGV[0], ARRAY[%s]::bigint[], r.k FROM new_rows r;
  END IF;
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    INSERT INTO pg_temp.feed_captured SELECT TG_ARGV[0], ARRAY[%s]::bigint[], -r.k FROM old_rows r;
  END IF;
  RETURN NULL;
END $b$$f$, fn, cols, cols);
    END IF;
  END IF;
  RETURN fn;
END $body$"""


def _rewire(function: str) -> str:
    """Every watched root table's triggers made again on ``function`` (an
    SQL expression of the table's arity ``n``), with their argument."""
    return f"""
DO $$
DECLARE
  t record;
  fn text;
BEGIN
  FOR t IN SELECT k.table_name, k.variables, jsonb_array_length(k.variables) AS n
           FROM krel_tables k JOIN pg_trigger g ON g.tgrelid = to_regclass(quote_ident(k.table_name))
           WHERE g.tgname = 'feed_insert'
  LOOP
    fn := {function};
    EXECUTE format('DROP TRIGGER feed_insert ON %I', t.table_name);
    EXECUTE format('DROP TRIGGER feed_update ON %I', t.table_name);
    EXECUTE format('DROP TRIGGER feed_delete ON %I', t.table_name);
    EXECUTE format('CREATE TRIGGER feed_insert AFTER INSERT ON %I REFERENCING NEW TABLE AS new_rows '
                   'FOR EACH STATEMENT EXECUTE FUNCTION %s(%L)', t.table_name, fn, t.variables::text);
    EXECUTE format('CREATE TRIGGER feed_update AFTER UPDATE ON %I REFERENCING OLD TABLE AS old_rows '
                   'NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION %s(%L)',
                   t.table_name, fn, t.variables::text);
    EXECUTE format('CREATE TRIGGER feed_delete AFTER DELETE ON %I REFERENCING OLD TABLE AS old_rows '
                   'FOR EACH STATEMENT EXECUTE FUNCTION %s(%L)', t.table_name, fn, t.variables::text);
  END LOOP;
END $$"""


def upgrade() -> None:
    op.execute(CAPTURE_FOR)
    op.execute(_rewire("quote_ident(podviews_capture_for(t.n))"))


def downgrade() -> None:
    op.execute(_rewire("'podviews_capture'"))
    op.execute("""
DO $$
DECLARE
  f record;
BEGIN
  FOR f IN SELECT proname FROM pg_proc WHERE proname ~ '^podviews_capture_[0-9]+$' LOOP
    EXECUTE format('DROP FUNCTION %I()', f.proname);
  END LOOP;
END $$""")
    op.execute("DROP FUNCTION podviews_capture_for(int)")

"""view changes: each batch's ΔV of a view's root, keyed by (view, seq), in
the transaction that advances the watermark (architecture decision 10);
``views.feed_floor``, the oldest position a consumer may resume from; the
capture trigger function of root K-relation tables (``storage.feed``)

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-23 14:30:00
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None

# A root K-relation table's row changes, written into the job's capture
# table while capture is on (storage.feed): TG_ARGV[0] is the table's
# variables (JSON), the row its term-id columns; k counts up for new rows,
# down for old ones, so their sum per row is its change.
CAPTURE = """
CREATE FUNCTION podviews_capture() RETURNS trigger LANGUAGE plpgsql AS $$
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
    op.create_table(
        'view_changes',
        sa.Column('view_id', sa.BigInteger(), nullable=False),
        sa.Column('seq', sa.BigInteger(), nullable=False),
        sa.Column('added', sa.BigInteger(), nullable=False),  # bindings added (with counts)
        sa.Column('removed', sa.BigInteger(), nullable=False),
        sa.Column('at', sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
        sa.ForeignKeyConstraint(['view_id'], ['views.id'],
                                name=op.f('fk_view_changes_view_id_views'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('view_id', 'seq', name=op.f('pk_view_changes')))
    op.create_table(
        'view_change_rows',
        sa.Column('view_id', sa.BigInteger(), nullable=False),
        sa.Column('seq', sa.BigInteger(), nullable=False),
        sa.Column('i', sa.Integer(), nullable=False),  # removals first, then additions
        sa.Column('k', sa.BigInteger(), nullable=False),  # + added, − removed (a count)
        sa.Column('binding', postgresql.JSONB(), nullable=False),  # {var: term id}
        sa.ForeignKeyConstraint(['view_id', 'seq'], ['view_changes.view_id', 'view_changes.seq'],
                                name=op.f('fk_view_change_rows_view_id_view_changes'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('view_id', 'seq', 'i', name=op.f('pk_view_change_rows')))
    op.add_column('views', sa.Column('feed_floor', sa.BigInteger(), nullable=False,
                                     server_default='0'))
    op.execute("UPDATE views SET feed_floor = watermark")
    op.execute(CAPTURE)
    conn = op.get_bind()
    for name, variables in conn.execute(sa.text(
            "SELECT k.table_name, k.variables FROM krel_tables k JOIN views v "
            "ON v.id = k.view_id AND v.root_node = k.node")):
        for statement in watch_statements(name, variables):
            conn.execute(sa.text(statement))


def watch_statements(table: str, variables: list[str]) -> list[str]:
    """The capture triggers of a root table (as ``storage.krel.watch`` makes them)."""
    arg = json.dumps(variables).replace("'", "''")
    out = []
    for op_, refs in (("INSERT", "NEW TABLE AS new_rows"),
                      ("UPDATE", "OLD TABLE AS old_rows NEW TABLE AS new_rows"),
                      ("DELETE", "OLD TABLE AS old_rows")):
        out.append(f'CREATE TRIGGER "feed_{op_.lower()}" AFTER {op_} ON "{table}" '
                   f"REFERENCING {refs} FOR EACH STATEMENT "
                   f"EXECUTE FUNCTION podviews_capture('{arg}')")
    return out


def downgrade() -> None:
    conn = op.get_bind()
    for (name,) in conn.execute(sa.text(
            "SELECT DISTINCT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
            "WHERE t.tgname LIKE 'feed_%' AND NOT t.tgisinternal")):
        for op_ in ("insert", "update", "delete"):
            conn.execute(sa.text(f'DROP TRIGGER IF EXISTS "feed_{op_}" ON "{name}"'))
    op.execute("DROP FUNCTION podviews_capture()")
    op.drop_column('views', 'feed_floor')
    op.drop_table('view_change_rows')
    op.drop_table('view_changes')

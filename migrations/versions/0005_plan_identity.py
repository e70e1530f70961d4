"""plan identity: K-relation tables keyed by content-derived node ids; each
view records the fingerprint of the plan its state was computed with (and
its root node and the engine code identity that checked it), so a plan
changed by an upgrade is rebuilt, never attached to old tables

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # existing state was keyed by post-order position: it cannot be trusted
    # under node ids, so existing views are rebuilt (fingerprint NULL)
    conn = op.get_bind()
    for (name,) in conn.execute(sa.text("SELECT table_name FROM krel_tables")):
        op.execute(f'DROP TABLE IF EXISTS "{name}"')
    op.execute("DELETE FROM krel_tables")
    op.alter_column('krel_tables', 'node', type_=sa.String(length=64),
                    postgresql_using='node::text')
    op.add_column('views', sa.Column('plan_fingerprint', sa.String(length=64), nullable=True))
    op.add_column('views', sa.Column('root_node', sa.String(length=64), nullable=True))
    op.add_column('views', sa.Column('plan_engine', sa.String(length=64), nullable=True))
    op.add_column('views', sa.Column('status_note', sa.Text(), nullable=True))
    op.drop_constraint(op.f('ck_views_status'), 'views', type_='check')
    op.create_check_constraint('status', 'views',
                               "status IN ('backfilling', 'rebuilding', 'ready', 'failed')")
    op.execute("UPDATE views SET status = 'rebuilding', "
               "status_note = 'state kept by node position before migration 0005' "
               "WHERE status = 'ready'")
    op.execute("INSERT INTO jobs (kind, view_id, payload, status, attempts, max_attempts) "
               "SELECT 'backfill', id, '{\"rebuild\": true}', 'queued', 0, 5 FROM views "
               "WHERE status = 'rebuilding'")


def downgrade() -> None:
    conn = op.get_bind()
    for (name,) in conn.execute(sa.text("SELECT table_name FROM krel_tables")):
        op.execute(f'DROP TABLE IF EXISTS "{name}"')
    op.execute("DELETE FROM krel_tables")
    op.execute("UPDATE views SET status = 'backfilling' WHERE status = 'rebuilding'")
    op.drop_constraint(op.f('ck_views_status'), 'views', type_='check')
    op.create_check_constraint('status', 'views',
                               "status IN ('backfilling', 'ready', 'failed')")
    for column in ('status_note', 'plan_engine', 'root_node', 'plan_fingerprint'):
        op.drop_column('views', column)
    op.alter_column('krel_tables', 'node', type_=sa.Integer(), postgresql_using='0')

"""krel tables

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21 17:25:45.092301
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('krel_tables',
    sa.Column('view_id', sa.BigInteger(), nullable=False),
    sa.Column('node', sa.Integer(), nullable=False),
    sa.Column('table_name', sa.String(length=63), nullable=False),
    sa.Column('variables', postgresql.JSONB(astext_type=sa.Text()), nullable=False),
    sa.ForeignKeyConstraint(['view_id'], ['views.id'], name=op.f('fk_krel_tables_view_id_views'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('view_id', 'node', 'table_name', name=op.f('pk_krel_tables'))
    )


def downgrade() -> None:
    conn = op.get_bind()
    for (name,) in conn.execute(sa.text("SELECT table_name FROM krel_tables")):
        op.execute(f'DROP TABLE IF EXISTS "{name}"')  # the per-view K-relations
    op.drop_table('krel_tables')

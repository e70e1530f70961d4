"""consent views

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-21 17:52:28.545753
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('consent_views',
    sa.Column('consent_id', sa.BigInteger(), nullable=False),
    sa.Column('view_id', sa.BigInteger(), nullable=False),
    sa.Column('granted_seq', sa.BigInteger(), nullable=True),
    sa.Column('revoked_seq', sa.BigInteger(), nullable=True),
    sa.ForeignKeyConstraint(['consent_id'], ['consents.id'], name=op.f('fk_consent_views_consent_id_consents'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['view_id'], ['views.id'], name=op.f('fk_consent_views_view_id_views'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('consent_id', 'view_id', name=op.f('pk_consent_views'))
    )
    # existing consents apply to the views they cover as of each view's watermark
    op.execute(
        "INSERT INTO consent_views (consent_id, view_id, granted_seq) "
        "SELECT c.id, v.id, v.watermark FROM consents c JOIN views v "
        "ON v.consumer_id = c.consumer_id WHERE c.revoked_at IS NULL "
        "AND (c.view_id IS NULL OR c.view_id = v.id)")


def downgrade() -> None:
    op.drop_table('consent_views')

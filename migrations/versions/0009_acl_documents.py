"""Web Access Control: a pod's ACL documents (``<resource>.acl``), kept
apart from its resources (they are no pod data: no view reads them), and a
version per pod that every ACL write bumps (cached decisions are keyed on it)

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23 13:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'acl_documents',
        sa.Column('pod_id', sa.BigInteger(), nullable=False),
        sa.Column('path', sa.Text(), nullable=False),  # the resource it controls
        sa.Column('root', sa.Text(), nullable=False),  # the pod's root IRI when written
        sa.Column('body', sa.Text(), nullable=False),  # N-Triples, absolute IRIs
        sa.Column('etag', sa.String(length=64), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False,
                  server_default=sa.func.now()),
        sa.ForeignKeyConstraint(['pod_id'], ['pods.id'],
                                name=op.f('fk_acl_documents_pod_id_pods'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('pod_id', 'path', name=op.f('pk_acl_documents')))
    op.add_column('pods', sa.Column('acl_version', sa.BigInteger(), nullable=False,
                                    server_default='0'))


def downgrade() -> None:
    op.drop_column('pods', 'acl_version')
    op.drop_table('acl_documents')

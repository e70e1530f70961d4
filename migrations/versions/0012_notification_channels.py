"""notification channels: Solid Notifications subscriptions to a view's
results (WebSocketChannel2023, WebhookChannel2023), their subscriber, the
position each has delivered up to and a webhook's retry state
(server/api/notify; design notes 90–99)

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-23 18:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'notification_channels',
        sa.Column('id', sa.BigInteger(), nullable=False),
        sa.Column('token_hash', sa.LargeBinary(), nullable=False),
        sa.Column('kind', sa.String(length=16), nullable=False),
        sa.Column('view_id', sa.BigInteger(), nullable=False),
        sa.Column('role', sa.String(length=16), nullable=False),
        sa.Column('agent_id', sa.BigInteger(), nullable=True),
        sa.Column('webid', sa.Text(), nullable=False),
        sa.Column('send_to', sa.Text(), nullable=True),
        sa.Column('position', sa.BigInteger(), nullable=False),
        sa.Column('status', sa.String(length=16), server_default='active', nullable=False),
        sa.Column('attempts', sa.Integer(), server_default='0', nullable=False),
        sa.Column('next_attempt', sa.DateTime(timezone=True), server_default=sa.func.now(),
                  nullable=False),
        sa.Column('last_error', sa.Text(), nullable=True),
        sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.func.now(),
                  nullable=False),
        sa.CheckConstraint("kind IN ('websocket', 'webhook')",
                           name=op.f('ck_notification_channels_kind')),
        sa.CheckConstraint("status IN ('active', 'dead', 'ended')",
                           name=op.f('ck_notification_channels_status')),
        sa.CheckConstraint("(kind = 'webhook') = (send_to IS NOT NULL)",
                           name=op.f('ck_notification_channels_send_to')),
        sa.ForeignKeyConstraint(['view_id'], ['views.id'],
                                name=op.f('fk_notification_channels_view_id_views'),
                                ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['agent_id'], ['agents.id'],
                                name=op.f('fk_notification_channels_agent_id_agents'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_notification_channels')),
        sa.UniqueConstraint('token_hash', name=op.f('uq_notification_channels_token_hash')))
    op.create_index(op.f('ix_notification_channels_view_id'), 'notification_channels',
                    ['view_id'])


def downgrade() -> None:
    op.drop_table('notification_channels')

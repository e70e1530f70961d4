"""view size: the rows a view's state holds, kept by every job that changes
it, so a view growing past the server's limit fails instead of taking the
server down

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 12:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # views built before keep 0 until their next backfill counts them
    op.add_column('views', sa.Column('state_rows', sa.BigInteger(), nullable=False,
                                     server_default='0'))


def downgrade() -> None:
    op.drop_column('views', 'state_rows')

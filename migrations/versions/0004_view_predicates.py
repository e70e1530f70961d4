"""view predicates: the predicate term ids a view's triple patterns can
match (NULL: any), so a write wakes only the views it can change

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22 10:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # existing views keep NULL: every write to their pods wakes them, as before
    op.add_column('views', sa.Column('predicates', postgresql.ARRAY(sa.BigInteger()),
                                     nullable=True))


def downgrade() -> None:
    op.drop_column('views', 'predicates')

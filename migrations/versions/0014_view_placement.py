"""Where a view's batches run (issue 21): the worker records, with each job
that did work, the executor and — on SQL — whether the batch ran as one
rendered statement or through the interpreter and why (``views.placement``),
so ``GET /views/{id}`` can say it without the API importing the executors.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-24 17:10:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("views", sa.Column("placement", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("views", "placement")

"""``dpop_proofs``: the DPoP proofs used, kept until they expire, so that
every API process refuses a replayed proof (RFC 9449 §11.1). Each process
kept its own memory, and the Helm chart runs two API replicas: a proof
replayed to the other was accepted (design note 188).

Revision ID: 0034
Revises: 0033
Create Date: 2026-11-29 05:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0034'
down_revision = '0033'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "dpop_proofs",
        sa.Column("digest", sa.LargeBinary(), nullable=False),
        sa.Column("expires", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("digest", name="pk_dpop_proofs"))
    op.create_index("ix_dpop_proofs_expires", "dpop_proofs", ["expires"])


def downgrade() -> None:
    op.drop_table("dpop_proofs")

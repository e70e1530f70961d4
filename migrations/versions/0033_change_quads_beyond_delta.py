"""``change_quads`` keeps only the part of a change's diff that is not its
ΔG: ΔG (``change_triples``) is part of the diff, with the same signs, so
a document's change is its change's rows of both tables
(``storage.documents.net_changes``). A diff all of whose triples enter or
leave the pod — most writes, and every load into a new pod — was written
twice (design note 186). The rows both tables hold are dropped here.

Revision ID: 0033
Revises: 0032
Create Date: 2026-11-29 03:00:00
"""

from __future__ import annotations

from alembic import op

revision = '0033'
down_revision = '0032'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("DELETE FROM change_quads q USING change_triples t WHERE q.seq = t.seq "
               "AND q.s = t.s AND q.p = t.p AND q.o = t.o AND q.sign = t.sign")


def downgrade() -> None:
    op.execute("INSERT INTO change_quads (seq, s, p, o, sign) "
               "SELECT seq, s, p, o, sign FROM change_triples ON CONFLICT DO NOTHING")

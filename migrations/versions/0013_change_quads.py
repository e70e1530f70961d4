"""Named graphs over documents (issue 19): each change keeps the resource's
own diff (``change_quads``) beside the default graph's ΔG
(``change_triples``), and the path of the resource it wrote (``changes.path``,
kept after the resource is deleted), so a view reading ``GRAPH ?doc`` or
``FROM <doc>`` learns which document gained or lost which triple; a
CONSTRUCT view may name a resource its graph is written into
(``views.target_pod``, ``views.target_path``).

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-23 18:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("views", sa.Column("target_pod", sa.BigInteger(), nullable=True))
    op.add_column("views", sa.Column("target_path", sa.Text(), nullable=True))
    op.add_column("changes", sa.Column("path", sa.Text(), nullable=True))
    op.execute("UPDATE changes c SET path = r.path FROM resources r WHERE r.id = c.resource_id")
    op.create_table(
        "change_quads",
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("s", sa.BigInteger(), nullable=False),
        sa.Column("p", sa.BigInteger(), nullable=False),
        sa.Column("o", sa.BigInteger(), nullable=False),
        sa.Column("sign", sa.SmallInteger(), nullable=False),
        sa.CheckConstraint("sign IN (-1, 1)", name=op.f("ck_change_quads_sign")),
        sa.PrimaryKeyConstraint("seq", "s", "p", "o", name=op.f("pk_change_quads")))
    # no foreign key (a per-row check; migration 0010): a statement trigger cascades
    op.execute("""
        CREATE FUNCTION change_quads_cascade() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          DELETE FROM change_quads c USING gone g WHERE c.seq = g.seq;
          RETURN NULL;
        END $$""")
    op.execute("CREATE TRIGGER change_quads_cascade AFTER DELETE ON changes "
               "REFERENCING OLD TABLE AS gone FOR EACH STATEMENT "
               "EXECUTE FUNCTION change_quads_cascade()")


def downgrade() -> None:
    op.execute("DROP TRIGGER change_quads_cascade ON changes")
    op.execute("DROP FUNCTION change_quads_cascade()")
    op.drop_table("change_quads")
    op.drop_column("changes", "path")
    op.drop_column("views", "target_path")
    op.drop_column("views", "target_pod")

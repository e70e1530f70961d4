"""Bulk writes (issue 21): the triples of a write are inserted without a
per-row foreign-key check, and quads keep only the index they are read by.

The foreign keys of ``quads``, ``pod_triples`` and ``change_triples`` checked
each inserted row against its parent (one index probe and row lock each:
most of a 335k-triple load's time in Postgres); their cascades become
statement-level triggers, which delete the children of all deleted parents
in one statement. ``quads`` is read by resource only (its primary key); its
(p, o), (o) and (s, p) indexes served no query (views read ``pod_triples``).
Measured in docs/DESIGN-NOTES.md (issue 21).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-23 15:10:00
"""

from __future__ import annotations

from alembic import op

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None

# child table, its key column, parent table, parent key, the foreign key's name
_CASCADES = (
    ("quads", "resource_id", "resources", "id", "fk_quads_resource_id_resources"),
    ("pod_triples", "pod_id", "pods", "id", "fk_pod_triples_pod_id_pods"),
    ("change_triples", "seq", "changes", "seq", "fk_change_triples_seq_changes"),
)
_INDEXES = (("ix_quads_p_o", ["p", "o"]), ("ix_quads_o", ["o"]), ("ix_quads_s_p", ["s", "p"]))


def upgrade() -> None:
    for child, column, parent, key, fk in _CASCADES:
        op.drop_constraint(fk, child, type_="foreignkey")
        op.execute(f"""
            CREATE FUNCTION {child}_cascade() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              DELETE FROM {child} c USING gone g WHERE c.{column} = g.{key};
              RETURN NULL;
            END $$""")
        op.execute(f"CREATE TRIGGER {child}_cascade AFTER DELETE ON {parent} "
                   f"REFERENCING OLD TABLE AS gone FOR EACH STATEMENT "
                   f"EXECUTE FUNCTION {child}_cascade()")
    for name, _ in _INDEXES:
        op.drop_index(name, table_name="quads")


def downgrade() -> None:
    for name, columns in _INDEXES:
        op.create_index(name, "quads", columns)
    for child, column, parent, key, fk in _CASCADES:
        op.execute(f"DROP TRIGGER {child}_cascade ON {parent}")
        op.execute(f"DROP FUNCTION {child}_cascade()")
        op.create_foreign_key(fk, child, parent, [column], [key], ondelete="CASCADE")

"""``podviews_all_removed(applied, wanted)``: true when a write applied to
the pod's default graph every one of the triples it removed from its
resource (``applied``: the rows of ``pod_triples`` it deleted or counted
down; ``wanted``: the triples removed), else an error of SQLSTATE 40001
(serialization failure), which the writers retry with a new snapshot
(``storage.db.retrying``). It is STABLE, so that a call of it over
counts alone is evaluated once, before the rows it gates (a one-time
filter), even where there are none.

``storage.changes._APPLY`` checks its outcome with it. A removed triple is
held by the resource, so its row exists and must be one or the other; a
lock that lost the row (Postgres's recheck of a row updated while the
write waited for it) would otherwise leave the default graph counting a
support that is gone (design note 179).

Revision ID: 0031
Revises: 0030
Create Date: 2026-11-28 12:00:00
"""

from __future__ import annotations

from alembic import op

revision = '0031'
down_revision = '0030'
branch_labels = None
depends_on = None

ALL_REMOVED = """
CREATE OR REPLACE FUNCTION podviews_all_removed(applied bigint, wanted bigint)
RETURNS boolean LANGUAGE plpgsql STABLE AS $$
BEGIN
  IF applied <> wanted THEN
    RAISE EXCEPTION 'a write applied % of its % removed triples to the pod''s graph', applied, wanted
      USING ERRCODE = '40001', HINT = 'run the transaction again';
  END IF;
  RETURN true;
END $$
"""


def upgrade() -> None:
    op.execute(ALL_REMOVED)


def downgrade() -> None:
    op.execute("DROP FUNCTION podviews_all_removed(bigint, bigint)")

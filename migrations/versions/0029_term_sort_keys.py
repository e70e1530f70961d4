"""``terms.sortkey``: each term's place in ORDER BY's total order as bytes
(``views.sortkey``: bytewise order is ``views.compare.order_key``'s), so a
rendered group takes its MIN, MAX and SAMPLE in SQL
(``server.executors.sql.render``) as the interpreter takes them. Every
writer fills it (``storage.terms``); the terms already held get theirs
here, a batch at a time.

Revision ID: 0029
Revises: 0028
Create Date: 2026-11-27 11:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from views.sortkey import sort_key

revision = '0029'
down_revision = '0028'
branch_labels = None
depends_on = None

BATCH = 10_000


def upgrade() -> None:
    op.execute("ALTER TABLE terms ADD COLUMN IF NOT EXISTS sortkey bytea")
    conn = op.get_bind()
    after = 0
    while True:
        rows = conn.execute(sa.text(
            "SELECT id, kind, lexical, datatype, lang FROM terms WHERE id > :after "
            "ORDER BY id LIMIT :n"), {"after": after, "n": BATCH}).all()
        if not rows:
            break
        conn.execute(sa.text(
            "UPDATE terms SET sortkey = k.key FROM unnest(CAST(:ids AS bigint[]), "
            "CAST(:keys AS bytea[])) AS k (id, key) WHERE terms.id = k.id"),
            {"ids": [r.id for r in rows],
             "keys": [sort_key(r.kind, r.lexical, r.datatype, r.lang) for r in rows]})
        after = rows[-1].id


def downgrade() -> None:
    op.execute("ALTER TABLE terms DROP COLUMN IF EXISTS sortkey")

"""A term's place in ORDER BY's total order as bytes (``views.sortkey``:
bytewise order is ``views.compare.order_key``'s), so a rendered group takes
its MIN, MAX and SAMPLE in SQL (``server.executors.sql.render``) as the
interpreter takes them: ``terms.sortkey`` holds a typed literal's (every
writer fills it, ``storage.terms``; the literals already held get theirs
here, a batch at a time), and ``pv_sort_key(terms)`` gives any term's —
an IRI's, a blank node's, a string's and a tagged string's written from
its text as ``views.sortkey`` writes them (Postgres text holds no NUL, so
nothing is escaped), a typed literal's read.

Revision ID: 0029
Revises: 0028
Create Date: 2026-11-27 11:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from views.sortkey import stored_key

revision = '0029'
down_revision = '0028'
branch_labels = None
depends_on = None

BATCH = 10_000


SORT_KEY = r"""
CREATE OR REPLACE FUNCTION pv_sort_key(t terms) RETURNS bytea
LANGUAGE sql STABLE AS $$
SELECT CASE
    WHEN t.sortkey IS NOT NULL THEN t.sortkey
    WHEN t.kind = 0 THEN '\x02'::bytea || convert_to(t.lexical, 'UTF8') || '\x0000'::bytea
    WHEN t.kind = 1 THEN '\x01'::bytea || convert_to(t.lexical, 'UTF8') || '\x0000'::bytea
    WHEN t.lang IS NOT NULL THEN '\x0303'::bytea || convert_to(t.lang, 'UTF8')
        || '\x0000'::bytea || convert_to(t.lexical, 'UTF8') || '\x0000'::bytea
    ELSE '\x0302'::bytea || convert_to(t.lexical, 'UTF8') || '\x0000'::bytea
END
$$
"""


def upgrade() -> None:
    op.execute("ALTER TABLE terms ADD COLUMN IF NOT EXISTS sortkey bytea")
    op.execute(SORT_KEY)
    conn = op.get_bind()
    after = 0
    while True:
        rows = conn.execute(sa.text(
            "SELECT id, kind, lexical, datatype, lang FROM terms WHERE id > :after "
            "AND kind = 2 AND datatype IS NOT NULL ORDER BY id LIMIT :n"),
            {"after": after, "n": BATCH}).all()
        if not rows:
            break
        conn.execute(sa.text(
            "UPDATE terms SET sortkey = k.key FROM unnest(CAST(:ids AS bigint[]), "
            "CAST(:keys AS bytea[])) AS k (id, key) WHERE terms.id = k.id"),
            {"ids": [r.id for r in rows],
             "keys": [stored_key(r.kind, r.lexical, r.datatype, r.lang) for r in rows]})
        after = rows[-1].id


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS pv_sort_key(terms)")
    op.execute("ALTER TABLE terms DROP COLUMN IF EXISTS sortkey")

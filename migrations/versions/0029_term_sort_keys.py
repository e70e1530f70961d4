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

from alembic import op

from storage.migrate import rewrite_terms
from views.sortkey import stored_key

revision = '0029'
down_revision = '0028'
branch_labels = None
depends_on = None



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
    rewrite_terms(op.get_bind(), "kind = 2 AND datatype IS NOT NULL", {},
                  {"sortkey": ("bytea", lambda r: stored_key(r.kind, r.lexical, r.datatype, r.lang))})


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS pv_sort_key(terms)")
    op.execute("ALTER TABLE terms DROP COLUMN IF EXISTS sortkey")

"""xsd:dateTime and xsd:date values hold any year and any precision
(``views.moments``, design note 211): their sort keys are their exact
seconds from 1970 written as a number (``views.sortkey``), where they were
microseconds in 8 bytes, and a year outside 1–9999 or a fraction past
0.9999995 s was ill-typed. Every dateTime's and date's key is written again.

Revision ID: 0036
Revises: 0035
Create Date: 2026-12-07 07:45:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from views.sortkey import stored_key

revision = '0036'
down_revision = '0035'
branch_labels = None
depends_on = None

XSD = "http://www.w3.org/2001/XMLSchema#"
BATCH = 10_000


def upgrade() -> None:
    conn = op.get_bind()
    after = 0
    while True:
        rows = conn.execute(sa.text(
            "SELECT id, kind, lexical, datatype, lang FROM terms WHERE id > :after "
            "AND kind = 2 AND datatype IN (:datetime, :date) ORDER BY id LIMIT :n"),
            {"after": after, "datetime": XSD + "dateTime", "date": XSD + "date",
             "n": BATCH}).all()
        if not rows:
            break
        conn.execute(sa.text(
            "UPDATE terms SET sortkey = k.key FROM unnest(CAST(:ids AS bigint[]), "
            "CAST(:keys AS bytea[])) AS k (id, key) WHERE terms.id = k.id"),
            {"ids": [r.id for r in rows],
             "keys": [stored_key(r.kind, r.lexical, r.datatype, r.lang) for r in rows]})
        after = rows[-1].id


def downgrade() -> None:
    """The keys stay as 0036 wrote them: the code before it cannot write
    them. That code writes a new term's key in its own form, so a rendered
    MIN, MAX or ORDER BY over dateTimes of both forms is out of order until
    ``upgrade`` writes every key again."""

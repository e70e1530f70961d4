"""The dictionary's xsd:integer literals found by their lexical form: a
rendered GROUP BY (``server.executors.sql.render``, design note 141) looks
up the term of each count it computes inside its one statement, where the
digest the dictionary is keyed by (SHA-1 of the N-Triples form) cannot be
computed. A partial index: only integer literals are in it.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-26 05:00:00
"""

from __future__ import annotations

from alembic import op

revision = '0017'
down_revision = '0016'
branch_labels = None
depends_on = None

INTEGER = "http://www.w3.org/2001/XMLSchema#integer"


def upgrade() -> None:
    op.execute("CREATE INDEX IF NOT EXISTS ix_terms_integer_lexical ON terms (lexical) "
               f"WHERE kind = 2 AND datatype = '{INTEGER}'")


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS ix_terms_integer_lexical")

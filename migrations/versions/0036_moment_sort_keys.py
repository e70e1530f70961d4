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

from alembic import op

from storage.migrate import rewrite_terms
from views.sortkey import stored_key

revision = '0036'
down_revision = '0035'
branch_labels = None
depends_on = None

XSD = "http://www.w3.org/2001/XMLSchema#"


def upgrade() -> None:
    rewrite_terms(op.get_bind(), "kind = 2 AND datatype IN (:datetime, :date)",
                  {"datetime": XSD + "dateTime", "date": XSD + "date"},
                  {"sortkey": ("bytea", lambda r: stored_key(r.kind, r.lexical, r.datatype, r.lang))})


def downgrade() -> None:
    """The keys stay as 0036 wrote them: the code before it cannot write
    them. That code writes a new term's key in its own form, so a rendered
    MIN, MAX or ORDER BY over dateTimes of both forms is out of order until
    ``upgrade`` writes every key again."""

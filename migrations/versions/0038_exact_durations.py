"""Durations hold any size and any precision, and the digits of a date, a
dateTime or a duration are ASCII (``views.durations``, design note 213):
a duration's sort key is the exact seconds it leads to from its first
reference, written as a number (``views.sortkey``), where it was
microseconds in 8 bytes; a form spelled with other Unicode digits
(``"٢٠٠٢-01-01"^^xsd:date``) had a value and has none now. Every
duration's key is written again, and the ``ts`` and key of every dateTime
and date whose form holds a character past ASCII.

Revision ID: 0038
Revises: 0037
Create Date: 2026-12-07 11:00:00
"""

from __future__ import annotations

from alembic import op

from storage.migrate import dictionary_columns, rewrite_terms
from views.durations import DURATION_TYPES

revision = '0038'
down_revision = '0037'
branch_labels = None
depends_on = None

XSD = "http://www.w3.org/2001/XMLSchema#"


def upgrade() -> None:
    rewrite_terms(op.get_bind(), "kind = 2 AND (datatype = ANY(:durations) OR "
                  "(datatype IN (:datetime, :date) AND lexical ~ '[^\\x01-\\x7f]'))",
                  {"durations": [str(t) for t in DURATION_TYPES],
                   "datetime": XSD + "dateTime", "date": XSD + "date"},
                  dictionary_columns("ts", "sortkey"))


def downgrade() -> None:
    """The keys stay as 0038 wrote them: the code before it cannot write
    them. That code writes a new duration's key in its own form, so a
    rendered MIN, MAX or ORDER BY over durations of both forms is out of
    order until ``upgrade`` writes every key again."""

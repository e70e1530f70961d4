"""A number's lexical space holds no whitespace (RDF 1.1 §5.3, XSD 1.1
§3.3: the whiteSpace facet collapses text before a cast, never inside a
literal; design note 212): ``" 1 "^^xsd:integer`` is ill-typed, where it
was read as 1. The dictionary's ``num`` and ``sortkey`` of every numeric
literal whose lexical form starts or ends with whitespace are written
again (``storage.terms.dictionary_row``).

Revision ID: 0037
Revises: 0036
Create Date: 2026-12-07 08:00:00
"""

from __future__ import annotations

from alembic import op

from storage.migrate import dictionary_columns, rewrite_terms
from storage.models import NUMBER_TYPES
from views.terms import INTEGER_TYPES

revision = '0037'
down_revision = '0036'
branch_labels = None
depends_on = None

NUMERIC = [*NUMBER_TYPES, *(str(t) for t in INTEGER_TYPES)]


def upgrade() -> None:
    rewrite_terms(op.get_bind(), "kind = 2 AND datatype = ANY(:numeric) "
                  "AND lexical ~ '^\\s|\\s$'", {"numeric": NUMERIC},
                  dictionary_columns("num", "sortkey"))


def downgrade() -> None:
    """The rows stay as 0037 wrote them (ill-typed: no value, the key of an
    ill-typed literal)."""

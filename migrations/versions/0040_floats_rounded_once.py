"""An xsd:float's value is the float nearest its decimal form, rounded once
(``views.terms.nearest_single``, design note 219): through a double it was
rounded twice, and a form just past a halfway point between two floats
went to the wrong one (``"1.00000005960464477550"^^xsd:float`` was 1).
The ``num`` and ``sortkey`` of every float row are written again
(``storage.terms.dictionary_row``), as 0035 first wrote them.

Revision ID: 0040
Revises: 0039
Create Date: 2026-12-07 12:00:00
"""

from __future__ import annotations

from alembic import op

from storage.migrate import dictionary_columns, rewrite_terms

revision = '0040'
down_revision = '0039'
branch_labels = None
depends_on = None

FLOAT = "http://www.w3.org/2001/XMLSchema#float"


def upgrade() -> None:
    rewrite_terms(op.get_bind(), "kind = 2 AND datatype = :float", {"float": FLOAT},
                  dictionary_columns("num", "sortkey"))


def downgrade() -> None:
    """The rows stay as 0040 wrote them: a value rounded once is the value
    the code before meant."""

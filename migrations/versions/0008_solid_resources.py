"""Solid resources: containers are rows of their own (the pod's root '' and
every container above a resource), non-RDF resources keep their bytes, and a
document and a container never share a name (one unique key on the path
without its trailing slash)

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23 12:00:00
"""

from __future__ import annotations

import hashlib

import sqlalchemy as sa
from alembic import op

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None

EMPTY = hashlib.sha1(repr([]).encode()).hexdigest()  # storage.pods: the ETag of no triples


def upgrade() -> None:
    op.add_column('resources', sa.Column('body', sa.LargeBinary(), nullable=True))
    # the root of every pod, and every container above an existing resource
    op.execute(sa.text(
        "INSERT INTO resources (pod_id, path, etag, content_type) "
        "SELECT id, '', :e, 'text/turtle' FROM pods "
        "UNION SELECT r.pod_id, array_to_string((string_to_array(r.path, '/'))[1:n], '/') || '/', "
        " :e, 'text/turtle' FROM resources r, "
        " generate_series(1, cardinality(string_to_array(r.path, '/')) - 1) AS n "
        "ON CONFLICT (pod_id, path) DO NOTHING").bindparams(e=EMPTY))
    op.create_index('uq_resources_pod_id_name', 'resources',
                    ['pod_id', sa.text("rtrim(path, '/')")], unique=True)


def downgrade() -> None:
    op.drop_index('uq_resources_pod_id_name', table_name='resources')
    op.execute("DELETE FROM resources WHERE path = '' OR path LIKE '%/' OR body IS NOT NULL")
    op.drop_column('resources', 'body')

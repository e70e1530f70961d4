"""initial schema

Revision ID: 0001
Revises: (none)
Create Date: 2026-11-21 17:10:25.002535
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('agents',
    sa.Column('id', sa.BigInteger(), nullable=False),
    sa.Column('webid', sa.Text(), nullable=False),
    sa.Column('role', sa.String(length=16), nullable=False),
    sa.Column('token_hash', sa.LargeBinary(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.CheckConstraint("role IN ('owner', 'consumer')", name=op.f('ck_agents_role')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_agents')),
    sa.UniqueConstraint('token_hash', name=op.f('uq_agents_token_hash')),
    sa.UniqueConstraint('webid', name=op.f('uq_agents_webid'))
    )
    op.create_table('terms',
    sa.Column('id', sa.BigInteger(), nullable=False),
    sa.Column('digest', sa.LargeBinary(), nullable=False),
    sa.Column('kind', sa.SmallInteger(), nullable=False),
    sa.Column('lexical', sa.Text(), nullable=False),
    sa.Column('datatype', sa.Text(), nullable=True),
    sa.Column('lang', sa.String(length=64), nullable=True),
    sa.Column('num', sa.Double(), nullable=True),
    sa.Column('ts', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_terms')),
    sa.UniqueConstraint('digest', name=op.f('uq_terms_digest'))
    )
    op.create_table('pods',
    sa.Column('id', sa.BigInteger(), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('owner_id', sa.BigInteger(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.ForeignKeyConstraint(['owner_id'], ['agents.id'], name=op.f('fk_pods_owner_id_agents')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_pods')),
    sa.UniqueConstraint('name', name=op.f('uq_pods_name'))
    )
    op.create_table('views',
    sa.Column('id', sa.BigInteger(), nullable=False),
    sa.Column('consumer_id', sa.BigInteger(), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('query', sa.Text(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('watermark', sa.BigInteger(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.CheckConstraint("status IN ('backfilling', 'ready', 'failed')", name=op.f('ck_views_status')),
    sa.ForeignKeyConstraint(['consumer_id'], ['agents.id'], name=op.f('fk_views_consumer_id_agents')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_views'))
    )
    op.create_table('changes',
    sa.Column('seq', sa.BigInteger(), nullable=False),
    sa.Column('pod_id', sa.BigInteger(), nullable=False),
    sa.Column('resource_id', sa.BigInteger(), nullable=True),
    sa.Column('inserted', sa.Integer(), nullable=False),
    sa.Column('deleted', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.ForeignKeyConstraint(['pod_id'], ['pods.id'], name=op.f('fk_changes_pod_id_pods'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('seq', name=op.f('pk_changes'))
    )
    op.create_index(op.f('ix_changes_pod_id_seq'), 'changes', ['pod_id', 'seq'], unique=False)
    op.create_table('consents',
    sa.Column('id', sa.BigInteger(), nullable=False),
    sa.Column('pod_id', sa.BigInteger(), nullable=False),
    sa.Column('consumer_id', sa.BigInteger(), nullable=False),
    sa.Column('view_id', sa.BigInteger(), nullable=True),
    sa.Column('granted_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.Column('revoked_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['consumer_id'], ['agents.id'], name=op.f('fk_consents_consumer_id_agents')),
    sa.ForeignKeyConstraint(['pod_id'], ['pods.id'], name=op.f('fk_consents_pod_id_pods'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['view_id'], ['views.id'], name=op.f('fk_consents_view_id_views'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_consents'))
    )
    op.create_table('jobs',
    sa.Column('id', sa.BigInteger(), nullable=False),
    sa.Column('kind', sa.String(length=32), nullable=False),
    sa.Column('view_id', sa.BigInteger(), nullable=True),
    sa.Column('payload', postgresql.JSONB(astext_type=sa.Text()), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('max_attempts', sa.Integer(), nullable=False),
    sa.Column('run_after', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.Column('worker', sa.String(length=100), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.CheckConstraint("kind IN ('apply_changes', 'backfill', 'grant', 'revoke', 'verify')", name=op.f('ck_jobs_kind')),
    sa.CheckConstraint("status IN ('queued', 'running', 'done', 'failed', 'dead')", name=op.f('ck_jobs_status')),
    sa.ForeignKeyConstraint(['view_id'], ['views.id'], name=op.f('fk_jobs_view_id_views'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_jobs'))
    )
    op.create_index(op.f('ix_jobs_status_run_after'), 'jobs', ['status', 'run_after'], unique=False)
    op.create_table('pod_triples',
    sa.Column('pod_id', sa.BigInteger(), nullable=False),
    sa.Column('s', sa.BigInteger(), nullable=False),
    sa.Column('p', sa.BigInteger(), nullable=False),
    sa.Column('o', sa.BigInteger(), nullable=False),
    sa.Column('n', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['pod_id'], ['pods.id'], name=op.f('fk_pod_triples_pod_id_pods'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('pod_id', 's', 'p', 'o', name=op.f('pk_pod_triples'))
    )
    op.create_index(op.f('ix_pod_triples_pod_id_o_s_p'), 'pod_triples', ['pod_id', 'o', 's', 'p'], unique=False)
    op.create_index(op.f('ix_pod_triples_pod_id_p_o_s'), 'pod_triples', ['pod_id', 'p', 'o', 's'], unique=False)
    op.create_table('resources',
    sa.Column('id', sa.BigInteger(), nullable=False),
    sa.Column('pod_id', sa.BigInteger(), nullable=False),
    sa.Column('path', sa.Text(), nullable=False),
    sa.Column('etag', sa.String(length=64), nullable=False),
    sa.Column('content_type', sa.String(length=100), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.ForeignKeyConstraint(['pod_id'], ['pods.id'], name=op.f('fk_resources_pod_id_pods'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_resources'))
    )
    op.create_index(op.f('ix_resources_pod_id_path'), 'resources', ['pod_id', 'path'], unique=True)
    op.create_table('change_triples',
    sa.Column('seq', sa.BigInteger(), nullable=False),
    sa.Column('s', sa.BigInteger(), nullable=False),
    sa.Column('p', sa.BigInteger(), nullable=False),
    sa.Column('o', sa.BigInteger(), nullable=False),
    sa.Column('sign', sa.SmallInteger(), nullable=False),
    sa.CheckConstraint('sign IN (-1, 1)', name=op.f('ck_change_triples_sign')),
    sa.ForeignKeyConstraint(['seq'], ['changes.seq'], name=op.f('fk_change_triples_seq_changes'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('seq', 's', 'p', 'o', name=op.f('pk_change_triples'))
    )
    op.create_table('consent_events',
    sa.Column('id', sa.BigInteger(), nullable=False),
    sa.Column('consent_id', sa.BigInteger(), nullable=False),
    sa.Column('action', sa.String(length=16), nullable=False),
    sa.Column('actor', sa.Text(), nullable=False),
    sa.Column('at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.ForeignKeyConstraint(['consent_id'], ['consents.id'], name=op.f('fk_consent_events_consent_id_consents'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_consent_events'))
    )
    op.create_table('job_progress',
    sa.Column('job_id', sa.BigInteger(), nullable=False),
    sa.Column('done', sa.BigInteger(), nullable=False),
    sa.Column('total', sa.BigInteger(), nullable=True),
    sa.Column('note', sa.Text(), nullable=True),
    sa.Column('updated_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_job_progress_job_id_jobs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('job_id', name=op.f('pk_job_progress'))
    )
    op.create_table('quads',
    sa.Column('resource_id', sa.BigInteger(), nullable=False),
    sa.Column('s', sa.BigInteger(), nullable=False),
    sa.Column('p', sa.BigInteger(), nullable=False),
    sa.Column('o', sa.BigInteger(), nullable=False),
    sa.ForeignKeyConstraint(['resource_id'], ['resources.id'], name=op.f('fk_quads_resource_id_resources'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('resource_id', 's', 'p', 'o', name=op.f('pk_quads'))
    )
    op.create_index(op.f('ix_quads_o'), 'quads', ['o'], unique=False)
    op.create_index(op.f('ix_quads_p_o'), 'quads', ['p', 'o'], unique=False)
    op.create_index(op.f('ix_quads_s_p'), 'quads', ['s', 'p'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_quads_s_p'), table_name='quads')
    op.drop_index(op.f('ix_quads_p_o'), table_name='quads')
    op.drop_index(op.f('ix_quads_o'), table_name='quads')
    op.drop_table('quads')
    op.drop_table('job_progress')
    op.drop_table('consent_events')
    op.drop_table('change_triples')
    op.drop_index(op.f('ix_resources_pod_id_path'), table_name='resources')
    op.drop_table('resources')
    op.drop_index(op.f('ix_pod_triples_pod_id_p_o_s'), table_name='pod_triples')
    op.drop_index(op.f('ix_pod_triples_pod_id_o_s_p'), table_name='pod_triples')
    op.drop_table('pod_triples')
    op.drop_index(op.f('ix_jobs_status_run_after'), table_name='jobs')
    op.drop_table('jobs')
    op.drop_table('consents')
    op.drop_index(op.f('ix_changes_pod_id_seq'), table_name='changes')
    op.drop_table('changes')
    op.drop_table('views')
    op.drop_table('pods')
    op.drop_table('terms')
    op.drop_table('agents')

"""``podviews_delta_start`` (run with the claim of every job but a
backfill) also commits the job's transaction without waiting for its WAL
to reach the disk (``synchronous_commit = off`` for that transaction
only). A change job's writes are derived: the view's state, its feed and
the job's own row, all recomputed from the change log, which the API's
writes commit durably as before. A crash can lose the last such commits
as a whole (never part of one: Postgres replays the WAL it flushed), and
the jobs they ended run again over the same ΔG. The wait was ~0.4 ms of a
small batch's ~2.5 ms (design note 148).

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-26 15:00:00
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from alembic import op

revision = '0025'
down_revision = '0024'
branch_labels = None
depends_on = None

_spec = importlib.util.spec_from_file_location(  # 0023's function, its settings extended
    "podviews_migration_0023", Path(__file__).with_name("0023_job_plans_generic.py"))
assert _spec is not None and _spec.loader is not None
_0023 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_0023)


def upgrade() -> None:
    op.execute(_0023._delta_start(
        _0023.SETTINGS + ", set_config('synchronous_commit', 'off', true)"))


def downgrade() -> None:  # 0023's
    op.execute(_0023._delta_start(_0023.SETTINGS))

"""`alembic upgrade head` yields exactly the models' schema; `downgrade base`
removes it."""

from __future__ import annotations

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from storage.migrate import downgrade
from storage.models import Base


def test_upgrade_head_matches_the_models(migrated: str) -> None:
    engine = sa.create_engine(migrated)
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}),
                                Base.metadata)
    assert diff == []


def test_downgrade_base_leaves_nothing(migrated: str) -> None:
    downgrade(migrated, "base")
    tables = set(sa.inspect(sa.create_engine(migrated)).get_table_names())
    assert tables <= {"alembic_version"}

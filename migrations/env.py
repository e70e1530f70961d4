"""Alembic environment: the URL comes from the caller (storage.migrate)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, create_engine
from sqlalchemy.pool import NullPool

from storage.models import Base

config = context.config
url = config.get_main_option("sqlalchemy.url") or ""
given: Connection | None = config.attributes.get("connection")


def run() -> None:
    if given is not None:
        _migrate(given)
        return
    engine = create_engine(url, poolclass=NullPool)  # no connection outlives the migration
    try:
        with engine.connect() as conn:
            _migrate(conn)
            conn.commit()
    finally:
        engine.dispose()


def _migrate(conn: Connection) -> None:
    context.configure(connection=conn, target_metadata=Base.metadata, compare_type=True)
    with context.begin_transaction():
        context.run_migrations()


run()

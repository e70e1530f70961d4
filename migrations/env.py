"""Alembic environment: the URL comes from the caller (storage.migrate)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from storage.models import Base

config = context.config
url = config.get_main_option("sqlalchemy.url")
connectable = config.attributes.get("connection") or create_engine(url)


def run() -> None:
    if hasattr(connectable, "connect"):
        with connectable.connect() as conn:
            _migrate(conn)
            conn.commit()
    else:
        _migrate(connectable)


def _migrate(conn) -> None:  # type: ignore[no-untyped-def]
    context.configure(connection=conn, target_metadata=Base.metadata, compare_type=True)
    with context.begin_transaction():
        context.run_migrations()


run()

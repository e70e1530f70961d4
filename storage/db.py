"""Database URL resolution: a given URL, or the embedded cluster."""

from __future__ import annotations

from pathlib import Path

from storage.embedded import Embedded


def open_database(url: str | None, data_dir: Path) -> tuple[str, Embedded | None]:
    """The URL to use, and the embedded server to stop afterwards (if any)."""
    if url:
        return url.replace("postgresql://", "postgresql+psycopg://", 1), None
    pg = Embedded(data_dir / "postgres")
    return pg.start(), pg

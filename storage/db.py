"""Database URL resolution: a given URL, or the embedded cluster."""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import psycopg
from sqlalchemy import Connection, Engine, create_engine
from sqlalchemy.exc import OperationalError

from storage.embedded import Embedded

P = ParamSpec("P")
T = TypeVar("T")


def open_database(url: str | None, data_dir: Path) -> tuple[str, Embedded | None]:
    """The URL to use, and the embedded server to stop afterwards (if any)."""
    if url:
        return url.replace("postgresql://", "postgresql+psycopg://", 1), None
    pg = Embedded(data_dir / "postgres")
    return pg.start(), pg


def raw(conn: Connection) -> psycopg.Connection:
    """The driver's connection under ``conn`` (for COPY), in its transaction."""
    driver = conn.connection.driver_connection
    assert isinstance(driver, psycopg.Connection)
    return driver


def worker_engine(url: str, **options: Any) -> Engine:
    """The engine a maintenance worker runs its jobs on (with ``options``
    for ``create_engine``): its pool hands out the connection used last
    (LIFO), whose session holds what the jobs before built on it — the
    statements psycopg prepared (a rendered statement's plan among them),
    ΔG's and the feed's session tables. A pool that took turns (FIFO, the
    default) between that connection and a second one (a bench's writes
    between its jobs, a failed job's side transaction) planned every
    rendered statement once on each: a big view's plan costs 30–190 ms
    (design note 154)."""
    return create_engine(url, pool_use_lifo=True, **options)


@contextmanager
def reading(engine: Engine, **options: Any) -> Iterator[Connection]:
    """A connection for reads (``BEGIN READ ONLY``: a write fails), with
    these execution options; its transaction ended by COMMIT on leaving,
    ROLLBACK on an error. psycopg forgets a session's prepared statements at
    every ROLLBACK, so reads that rolled back made each pooled connection
    parse and plan every statement again (design note 138); a read-only
    transaction's COMMIT is its ROLLBACK, without that."""
    with engine.connect().execution_options(postgresql_readonly=True, **options) as conn:
        yield conn
        conn.commit()


@contextmanager
def looking_up(engine: Engine) -> Iterator[Connection]:
    """A connection for reads run outside a transaction (autocommit), each
    statement on its own: no BEGIN and no COMMIT sent, two round trips of
    four with the pool's ping for one statement (a request's agent by its
    token: design note 192; a write's access asked before its body, which
    the write asks again: note 193). Reads that must see one snapshot take
    ``reading``."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        yield conn


TRANSIENT = ("40001", "40P01")  # serialization failure, deadlock detected


def transient(error: BaseException) -> bool:
    """Whether running the transaction again may succeed."""
    return getattr(getattr(error, "orig", None), "sqlstate", None) in TRANSIENT


def retrying(fn: Callable[P, T], attempts: int = 5) -> Callable[P, T]:
    """``fn`` (one transaction) run again after a serialization failure or a
    deadlock, with a short random back-off."""
    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> T:
        for attempt in range(attempts):
            try:
                return fn(*args, **kwargs)
            except OperationalError as e:
                if not transient(e) or attempt == attempts - 1:
                    raise
                time.sleep(random.uniform(0.005, 0.05) * (attempt + 1))
        raise AssertionError("unreachable")

    return run

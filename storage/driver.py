"""Statements sent on the psycopg connection under a SQLAlchemy
``Connection`` (design note 142): a job's own — the claim, the view's lock,
ΔG's staging, the rendered statement, the watermark, the feed's record and
the job's end — and the term dictionary's lookups (``storage.terms``), in
the caller's transaction like every other statement.

- Each is prepared by psycopg on the session at its first run (not its
  sixth) and planned once; psycopg deallocates what it prepared itself
  when a rollback or a DROP would invalidate it, and knows it did.
- None pays SQLAlchemy's per-statement set-up (the execution context, the
  result's metadata: ~60 µs each, a tenth of a small batch's job), nor
  psycopg's: each is compiled once to Postgres's own ``$n`` parameters and
  sent as it is by a raw cursor (psycopg parses a ``%s`` statement over
  4 KB, a rendered one, at every run: design note 174).
- SQLAlchemy's cursor events are dispatched for them as for its own
  statements: what listens to them (``podviews bench batch``) sees them.
- Their errors are SQLAlchemy's, as its own statements' are (a deadlock an
  ``OperationalError`` that ``storage.db.retrying`` runs again, bad data a
  ``DataError``), and a lost connection is invalidated in the pool.

Statements are written as everywhere else, with ``:name`` parameters; rows
come back as named tuples (``row.id``), as SQLAlchemy's rows read."""

from __future__ import annotations

import functools
import logging
import weakref
from collections.abc import Mapping
from typing import Any, cast

import psycopg
from psycopg.rows import namedtuple_row, tuple_row
from sqlalchemy import Connection, text
from sqlalchemy.dialects.postgresql.psycopg import PGDialect_psycopg
from sqlalchemy.exc import DBAPIError

from storage import db

log = logging.getLogger("podviews.driver")
_DIALECT = PGDialect_psycopg(paramstyle="numeric_dollar")
_TUPLES = psycopg.pq.ExecStatus.TUPLES_OK
# a cursor per session and row factory, made once: a cursor's set-up was a tenth of the
# driver's time. Never one cursor whose factory changes: psycopg makes the new factory's
# rows for the result the cursor holds, the last statement's, whose columns may be no
# named tuple's (two named ``kind``: a results page's, design note 193)
_cursors: weakref.WeakKeyDictionary[psycopg.Connection[Any],
                                    dict[bool, psycopg.RawCursor[Any]]] = \
    weakref.WeakKeyDictionary()
KEPT = 256  # statements psycopg keeps prepared on a session (its default: 100); the oldest go first


@functools.lru_cache(maxsize=1024)
def _native(sql: str) -> tuple[str, tuple[str, ...]]:
    """``sql`` with Postgres's own parameters (``$1``, one per name), and
    the names in their order."""
    compiled = text(sql).compile(dialect=_DIALECT)
    return str(compiled), tuple(compiled.positiontup or ())


def rows(conn: Connection, sql: str, params: Mapping[str, Any] | None = None,
         prepare: bool = True, named: bool = True) -> list[Any]:
    """The rows of ``sql`` run with ``params`` on ``conn``'s session (none
    for a statement that returns none); prepared unless ``prepare`` is
    False (a statement run once). Rows are named tuples, or plain ones
    where ``named`` is False: a named tuple costs ~0.7 µs more a row, most
    of decoding 100k terms (design note 185)."""
    if not conn.in_transaction():  # SQLAlchemy's, begun as its own statements begin it: its
        conn.begin()  # commit and rollback then end the session's (psycopg begins that at once)
    raw = cast(psycopg.Connection[Any], conn.connection.dbapi_connection)
    assert raw is not None, "the connection is closed"
    if raw.prepared_max != KEPT:
        raw.prepared_max = KEPT
    statement, names = _native(sql)
    given = params or {}
    values = [given[name] for name in names]
    kept = _cursors.setdefault(raw, {})
    cursor = kept.get(named)
    if cursor is None or cursor.closed:
        cursor = kept[named] = psycopg.RawCursor(
            raw, row_factory=namedtuple_row if named else tuple_row)
    events = conn.dispatch
    for before in events.before_cursor_execute:
        before(conn, cursor, statement, values, None, False)
    try:
        cursor.execute(statement, values, prepare=prepare)
    except psycopg.Error as e:  # raised as SQLAlchemy raises its statements' errors
        gone = conn.dialect.is_disconnect(cast(Any, e), cast(Any, raw), cast(Any, cursor))
        if gone:
            conn.invalidate(e)
        raise DBAPIError.instance(statement, values, e, psycopg.Error,
                                  connection_invalidated=gone, dialect=conn.dialect) from e
    for after in events.after_cursor_execute:
        after(conn, cursor, statement, values, None, False)
    result = cursor.pgresult
    return cursor.fetchall() if result is not None and result.status == _TUPLES else []


def one(conn: Connection, sql: str, params: Mapping[str, Any] | None = None,
        prepare: bool = True) -> Any:
    """The one row of ``sql`` (see ``rows``)."""
    found = rows(conn, sql, params, prepare)
    assert len(found) == 1, f"{len(found)} rows where one was expected"
    return found[0]


def first(conn: Connection, sql: str, params: Mapping[str, Any] | None = None) -> Any | None:
    """The first row of ``sql``, or None (see ``rows``)."""
    found = rows(conn, sql, params)
    return found[0] if found else None


# The session's own tables a job empties with a DELETE when it starts using
# them (ΔG's and the feed's capture, migration 0018). No autovacuum reaches
# a temporary table and a DELETE frees no space an insert can find (only
# VACUUM records it), so they grew with every job of the session, and every
# job's DELETE read all they had grown to (design note 152). A VACUUM that
# changes a table's row in pg_class (its pages, rows or frozen xid: nearly
# every one) makes the session plan again every prepared statement reading
# the table — every rendered view's — so they are vacuumed once grown, not
# on a count of jobs: with 64 views a vacuum every 50 jobs re-planned
# nearly every job's statement (design note 203).
SESSION_TABLES = ("pv_dg", "feed_captured")
TIDY_EVERY = 50  # a session's jobs between two looks at its tables' size
TIDY_PAGES = 8  # a session table vacuumed once its heap holds more pages than this


def tidied(conn: Connection) -> bool:
    """Called after each job's commit: every ``TIDY_EVERY``th time on the
    session, the tables of ``SESSION_TABLES`` it has that have grown past
    ``TIDY_PAGES`` pages are vacuumed (outside a transaction, as VACUUM must
    be). Whether one was: a failure is logged, not raised (the job is done;
    the next turn tries again)."""
    done = conn.info["podviews_jobs"] = conn.info.get("podviews_jobs", 0) + 1
    if done % TIDY_EVERY:
        return False
    assert not conn.in_transaction(), "a session tidied inside a transaction"
    raw = db.raw(conn)
    was, raw.autocommit = raw.autocommit, True
    have: list[str] = []
    try:
        have = [name for name, in raw.execute(
            "SELECT relname FROM pg_class WHERE relnamespace = pg_my_temp_schema() "
            "AND relname = ANY(%s) "
            "AND pg_relation_size(oid) > %s * CAST(current_setting('block_size') AS bigint)",
            [list(SESSION_TABLES), TIDY_PAGES])]
        if have:
            raw.execute("VACUUM " + ", ".join(f"pg_temp.{name}" for name in sorted(have)))
    except psycopg.Error:
        log.exception("vacuuming the session's tables failed")
        return False
    finally:
        if not raw.closed:
            raw.autocommit = was
    return bool(have)

"""The driver's statements fail as SQLAlchemy's own do, and rows come as
the caller asks whatever the session ran before (``storage.driver``)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from storage import driver


def test_a_statements_error_is_sqlalchemys(migrated: str) -> None:
    engine = sa.create_engine(migrated)
    with engine.connect() as c:
        with pytest.raises(sa.exc.DataError):  # division by zero: bad data, a 4xx in the API
            driver.rows(c, "SELECT 1 / :zero", {"zero": 0})
        c.rollback()
        with pytest.raises(sa.exc.OperationalError):  # as a deadlock is: retried by db.retrying
            driver.rows(c, "SELECT pg_terminate_backend(pg_backend_pid())")
        c.rollback()  # the lost session was invalidated: the next statement reconnects
        assert driver.one(c, "SELECT 2 AS two").two == 2
    engine.dispose()


def test_rows_as_asked_after_a_statement_whose_columns_name_no_tuple(migrated: str) -> None:
    """A results page's columns repeat names (each variable's ``kind``): read
    as plain tuples, and the session's next named read is not made from them
    (it was, by one cursor whose row factory changed: design note 193)."""
    engine = sa.create_engine(migrated)
    with engine.connect() as c:
        assert driver.rows(c, "SELECT 1 AS kind, 2 AS kind", named=False) == [(1, 2)]
        assert driver.one(c, "SELECT 3 AS three").three == 3
        assert driver.rows(c, "SELECT 4 AS kind, 5 AS kind", named=False) == [(4, 5)]
    engine.dispose()

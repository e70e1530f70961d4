"""The driver's statements fail as SQLAlchemy's own do (``storage.driver``)."""

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

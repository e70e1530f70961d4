"""Shared fixtures: a real Postgres for every test that needs one.

PODVIEWS_TEST_DATABASE_URL names a server to use; otherwise the local server
on 127.0.0.1:5432 is used when it answers (unless PODVIEWS_TEST_EMBEDDED is
set), else an embedded cluster is started for the session. Each test gets a
fresh database of its own; a migrated one is copied from a template migrated
once per test session (``CREATE DATABASE … TEMPLATE``).
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import sqlalchemy as sa

LOCAL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"

# Scheduling (pytest-xdist, one module per unit): modules run heaviest first
# (longest processing time first), so both workers finish together instead of
# one running the last long module alone. The weights are seconds a whole run
# spent per module; refresh them with PODVIEWS_RECORD_DURATIONS=1 (a module
# not listed runs last, in collection order).
DURATIONS = Path(__file__).with_name("durations.json")
_spent: defaultdict[str, float] = defaultdict(float)


def _module(nodeid: str) -> str:
    return nodeid.split("::")[0]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    weights = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}
    items.sort(key=lambda item: -weights.get(_module(item.nodeid), 0.0))  # stable


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if os.environ.get("PODVIEWS_RECORD_DURATIONS"):
        _spent[_module(report.nodeid)] += report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    if os.environ.get("PODVIEWS_RECORD_DURATIONS") and not hasattr(session.config,
                                                                    "workerinput"):
        ordered = {m: round(s, 1) for m, s in sorted(_spent.items(), key=lambda ms: -ms[1])
                   if s >= 1}
        DURATIONS.write_text(json.dumps(ordered, indent=1) + "\n")


def _answers(url: str) -> bool:
    try:
        with sa.create_engine(url, connect_args={"connect_timeout": 2}).connect():
            return True
    except sa.exc.OperationalError:
        return False


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    url = os.environ.get("PODVIEWS_TEST_DATABASE_URL")
    if url:
        yield url
        return
    if not os.environ.get("PODVIEWS_TEST_EMBEDDED") and _answers(LOCAL):
        yield LOCAL
        return
    from storage.embedded import Embedded

    pg = Embedded(Path(tmp_path_factory.mktemp("pg")), durable=False)
    url = pg.start()
    try:
        yield url
    finally:
        pg.stop()
        shutil.rmtree(pg.data_dir, ignore_errors=True)


@contextmanager
def scratch_database(server: str, prefix: str = "pv", migrate: bool = False,
                     template: str | None = None) -> Iterator[str]:
    """The URL of a new database on ``server`` (a copy of ``template``, or
    migrated if asked), dropped afterwards."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        copy = f' TEMPLATE "{template}"' if template else ""
        c.execute(sa.text(f'CREATE DATABASE "{name}"{copy}'))
        # a test's database is thrown away: its commits need not wait for the
        # disk (3.5 ms a commit here, 0.2 without; a crash loses no test's data
        # that matters — the fault tests run clusters of their own)
        c.execute(sa.text(f'ALTER DATABASE "{name}" SET synchronous_commit = off'))
    url = sa.make_url(server).set(database=name).render_as_string(hide_password=False)
    try:
        if migrate:
            from storage.migrate import upgrade

            upgrade(url)
        yield url
    finally:
        with admin.connect() as c:
            c.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(scope="session")
def migrated_template(pg_server: str) -> Iterator[str]:
    """A database migrated once for the whole session, the template of every
    ``migrated`` one (nothing connects to it afterwards)."""
    with scratch_database(pg_server, "pvtemplate", migrate=True) as url:
        sa.create_engine(url).dispose()
        yield sa.make_url(url).database or ""


@pytest.fixture
def database(pg_server: str) -> Iterator[str]:
    """The URL of a fresh, empty database, dropped afterwards."""
    with scratch_database(pg_server) as url:
        yield url


@pytest.fixture(scope="module")
def cases_engine(pg_server: str, migrated_template: str) -> Iterator[sa.Engine]:
    """One database for a module's fuzzer cases (each has its own pod and
    consumer)."""
    with scratch_database(pg_server, template=migrated_template) as url:
        e = sa.create_engine(url)
        yield e
        e.dispose()


@pytest.fixture
def migrated(pg_server: str, migrated_template: str) -> Iterator[str]:
    """The URL of a fresh database at the latest revision, dropped afterwards."""
    with scratch_database(pg_server, template=migrated_template) as url:
        yield url

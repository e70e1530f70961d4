"""Every `podviews` option can come from the environment too."""

from __future__ import annotations

import argparse
import threading

import pytest
import sqlalchemy as sa
from rdflib import Literal, URIRef

from server.cli.main import build_parser, main


def _options(parser: argparse.ArgumentParser, path: str = "podviews"):  # type: ignore[no-untyped-def]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options(sub, f"{path} {name}")
        elif any(o.startswith("--") and o != "--help" for o in action.option_strings):
            yield path, action


def test_every_option_names_its_environment_variable() -> None:
    options = list(_options(build_parser()))
    assert len(options) > 30
    missing = [(path, a.option_strings) for path, a in options if "[PODVIEWS_" not in (a.help or "")]
    assert missing == []


def test_the_environment_sets_defaults_and_the_command_line_wins(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PODVIEWS_BENCH_COUNT", "3")
    monkeypatch.setenv("PODVIEWS_BENCH_JSON", "yes")
    monkeypatch.setenv("PODVIEWS_BENCH_ONLY", "Q1 SUM")
    monkeypatch.setenv("PODVIEWS_CHECK_W3C_EXECUTOR", "sql")
    args = build_parser().parse_args(["bench", "paper-bsbm"])
    assert (args.count, args.json, args.only) == (3, True, ["Q1", "SUM"])
    assert build_parser().parse_args(["bench", "paper-bsbm", "--count", "5"]).count == 5
    assert build_parser().parse_args(["check", "w3c", "dir"]).executor == "sql"


def test_a_bad_environment_value_is_an_error_naming_the_variable(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PODVIEWS_CHECK_W3C_EXECUTOR", "auto")
    with pytest.raises(SystemExit):
        build_parser()
    assert "PODVIEWS_CHECK_W3C_EXECUTOR='auto'" in capsys.readouterr().err


def _follow(url: str, monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Thread, list[int]]:
    """``podviews watch`` in a thread, returned once it has seen the queue
    (its first poll found jobs pending), with the list its exit code goes to."""
    import time

    from server.cli import watch

    polled = threading.Event()

    class Clock:
        monotonic = staticmethod(time.monotonic)

        @staticmethod
        def sleep(seconds: float) -> None:
            polled.set()
            time.sleep(seconds)

    monkeypatch.setattr(watch, "time", Clock)
    result: list[int] = []
    follower = threading.Thread(target=lambda: result.append(
        main(["watch", "--database-url", url, "--timeout", "120"])))
    follower.start()
    assert polled.wait(60)
    return follower, result


def test_watch_follows_the_queue_until_it_drains(
        migrated: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from server.api.views.service import register_view
    from server.maintenance import jobs, worker
    from server.maintenance.router import Router
    from storage import pods
    from tests.maintenance.test_pipeline import QUERIES, setup

    engine = sa.create_engine(migrated)
    pod, consumer = setup(engine)
    with engine.begin() as c:
        pods.put_resource(c, pod, "r", {(URIRef("http://ex/a"), URIRef("http://ex/p"),
                                         Literal(1))})
        for name, query in QUERIES.items():
            register_view(c, consumer, name, query)
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich draws on the captured stderr as on a terminal
    follower, result = _follow(migrated, monkeypatch)
    stop = threading.Event()
    maintainer = threading.Thread(target=worker.run, args=(migrated,), kwargs={
        "stop": stop, "idle_wait": 0.1, "router": Router(mode="sql")})
    maintainer.start()
    follower.join(120)
    stop.set()
    maintainer.join(30)
    assert result == [0]
    with engine.connect() as c:
        jobs = c.execute(sa.text("SELECT count(*) FROM jobs")).scalar_one()
        pending = c.execute(sa.text("SELECT count(*) FROM jobs WHERE status IN "
                                    "('queued', 'running')")).scalar_one()
    out, err = capsys.readouterr()
    assert jobs == len(QUERIES) and pending == 0
    assert out.strip() == f"{jobs} jobs done, 0 dead"
    assert "maintenance jobs" in err


def test_watch_gives_up_after_its_timeout_and_reports_a_dead_job(
        migrated: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from server.maintenance import jobs
    from storage import queue

    engine = sa.create_engine(migrated)
    with engine.begin() as c:  # a job no worker can run (dead at its first attempt)
        queue.enqueue(c, "verify", max_attempts=1)  # of no view
    assert main(["watch", "--database-url", migrated, "--timeout", "1"]) == 124
    assert "1 jobs still pending" in capsys.readouterr().err
    follower, result = _follow(migrated, monkeypatch)
    assert jobs.run_one(engine, "test")  # claims the job and fails it
    follower.join(60)
    assert result == [1]
    assert capsys.readouterr().out.startswith("0 jobs done, 1 dead")


def test_watch_names_the_job_that_reports_progress() -> None:
    from collections import namedtuple

    from server.cli.watch import _describe

    Row = namedtuple("Row", "id kind view_id status done total note")
    backfill = Row(7, "backfill", 3, "queued", 2, 5, "view nodes backfilled")
    change = Row(8, "apply_changes", 4, "queued", None, None, None)
    assert _describe([backfill, change]) == "backfill of view 3: 2/5 view nodes backfilled " \
                                            "(+1 pending)"
    assert _describe([change]) == "1 jobs queued"
    assert _describe([]) == "queue drained"


def test_consistency_waits_for_a_view_behind_its_writes_and_names_one_still_behind(
        migrated: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A write the worker has not applied yet is lag, not drift: `check
    consistency` compares once the view's jobs are done (a worker runs them
    meanwhile), and names a view still behind after ``--wait`` instead of
    reporting its mappings as drifted; a view whose state was changed
    behind the pipeline's back is drift."""
    from server.api.views.service import register_view
    from server.maintenance import worker
    from server.maintenance.router import Router
    from storage import pods
    from tests.maintenance.test_pipeline import drain, setup

    engine = sa.create_engine(migrated)
    pod, consumer = setup(engine)
    p = URIRef("http://ex/p")
    with engine.begin() as c:
        pods.put_resource(c, pod, "r", {(URIRef("http://ex/a"), p, Literal(1))})
        view = register_view(c, consumer, "count", "SELECT (COUNT(*) AS ?n) WHERE { ?s <http://ex/p> ?o }")
    drain(engine)
    with engine.begin() as c:  # written, not yet maintained
        pods.put_resource(c, pod, "r", {(URIRef("http://ex/a"), p, Literal(1)),
                                        (URIRef("http://ex/b"), p, Literal(2))})
    assert main(["check", "consistency", "--database-url", migrated, "--wait", "0"]) == 1
    out = capsys.readouterr().out
    assert "behind its pods' writes" in out and "job apply_changes queued" in out  # and why
    stop = threading.Event()
    maintainer = threading.Thread(target=worker.run, args=(migrated,), kwargs={
        "stop": stop, "idle_wait": 0.1, "router": Router(mode="sql")})
    maintainer.start()
    try:
        assert main(["check", "consistency", "--database-url", migrated]) == 0
    finally:
        stop.set()
        maintainer.join(30)
    assert "1 consistent, 0 drifted" in capsys.readouterr().out
    with engine.begin() as c:  # the state changed behind the pipeline's back: drift
        for table in c.execute(sa.text("SELECT table_name FROM krel_tables WHERE view_id = :v"),
                               {"v": view}).scalars():
            c.execute(sa.text(f'DELETE FROM "{table}"'))
    assert main(["check", "consistency", "--database-url", migrated, "--wait", "0"]) == 1
    assert "mappings drifted" in capsys.readouterr().out

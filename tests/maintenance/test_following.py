"""Change jobs of views reading one pod follow each other on the ΔG the
first one's claim staged, in its transaction (``jobs.follow``, design note
186): every view still equals its from-scratch evaluation after every
batch, and one that fails is undone alone."""

from __future__ import annotations

import random

import pytest
import sqlalchemy as sa

from server.api.views.service import register_view
from server.maintenance import jobs, verify
from server.maintenance.router import Router
from storage import catalog, queue, views_repo
from tests.maintenance.test_pipeline import QUERIES, drain, random_write, setup

SQL = Router(mode="sql", render=True)  # every plan that renders runs as one statement
# views of fewer predicates than others, which follow those (a subset of what was staged)
FEWER = {"q-only": "PREFIX : <http://ex/> SELECT ?x ?y WHERE { ?x :q ?y }",
         "p-count": "PREFIX : <http://ex/> SELECT (COUNT(*) AS ?n) WHERE { ?x :p ?y }"}


@pytest.fixture
def following(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of jobs that followed another, per transaction."""
    ran: list[int] = []
    follow = jobs.follow

    def counted(*args: object, **kwargs: object) -> int:
        n = follow(*args, **kwargs)  # type: ignore[arg-type]
        ran.append(n)
        return n

    monkeypatch.setattr(jobs, "follow", counted)
    return ran


def _views(engine: sa.Engine, consumer: int) -> dict[str, int]:
    with engine.begin() as c:
        return {name: register_view(c, consumer, name, q)
                for name, q in {**QUERIES, **FEWER}.items()}


def _placements(engine: sa.Engine, views: dict[str, int]) -> dict[str, str]:
    with engine.connect() as c:
        return dict(c.execute(sa.text("SELECT name, placement FROM views WHERE id = ANY(:v)"),
                              {"v": list(views.values())}).all())


def test_views_following_on_one_delta_equal_scratch_after_every_batch(
        migrated: str, following: list[int]) -> None:
    engine = sa.create_engine(migrated)
    pod, consumer = setup(engine)
    rng = random.Random(186)
    for _ in range(5):
        random_write(engine, pod, rng)
    views = _views(engine, consumer)
    drain(engine, SQL)
    random_write(engine, pod, rng)
    drain(engine, SQL)  # placed by their first change job
    placed = _placements(engine, views)  # all but distinct-bind's BIND render
    assert [n for n, p in placed.items() if p != views_repo.RENDERED] == ["distinct-bind"]
    following.clear()
    for batch in range(40):
        for _ in range(rng.randint(1, 3)):
            random_write(engine, pod, rng)
        drain(engine, SQL)
        with engine.connect() as c:
            for name, v in views.items():
                assert catalog.view_results(c, v) == verify.scratch(c, v), (name, batch)
    # most batches wake several views, which then share one staging
    assert sum(following) >= 40, following


def test_a_following_job_that_fails_is_undone_alone(
        migrated: str, following: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    """A job that fails while following another is rolled back to its
    savepoint and left queued: the first job's work commits, and the failed
    one runs again on its own (where it succeeds here)."""
    engine = sa.create_engine(migrated)
    pod, consumer = setup(engine)
    rng = random.Random(7)
    for _ in range(3):
        random_write(engine, pod, rng)
    views = _views(engine, consumer)
    drain(engine, SQL)
    failing = views["q-only"]
    run = jobs.run
    failed: list[int] = []

    def flaky(conn: sa.Connection, job: queue.Job, *args: object, **kwargs: object
              ) -> jobs.Outcome:
        if kwargs.get("following") and job.view_id == failing and not failed:
            failed.append(job.id)
            raise RuntimeError("injected")
        return run(conn, job, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(jobs, "run", flaky)
    with engine.begin() as c:  # a write every view reads: (a q b) and (a p b)
        from rdflib import URIRef
        ex = "http://ex/"
        from storage import pods
        pods.put_resource(c, pod, "all", {(URIRef(ex + "a"), URIRef(ex + "q"), URIRef(ex + "b")),
                                          (URIRef(ex + "a"), URIRef(ex + "p"), URIRef(ex + "b"))})
    assert jobs.run_one(engine, "test", SQL)
    assert failed, "the failing view's job did not follow the first"
    with engine.connect() as c:
        status, attempts = c.execute(sa.text("SELECT status, attempts FROM jobs WHERE id = :j"),
                                     {"j": failed[0]}).one()
        assert (status, attempts) == ("queued", 0)  # its claim undone with it
        first = c.execute(sa.text("SELECT count(*) FROM jobs WHERE status = 'done' AND "
                                  "view_id <> :v AND id > (SELECT max(id) FROM jobs WHERE "
                                  "status = 'done' AND kind = 'backfill')"),
                          {"v": failing}).scalar_one()
        assert first >= 1  # the first job, and those that followed it before, committed
    drain(engine, SQL)
    with engine.connect() as c:
        for name, v in views.items():
            assert catalog.view_results(c, v) == verify.scratch(c, v), name

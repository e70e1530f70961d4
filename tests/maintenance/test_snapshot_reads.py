"""A reader never sees a mix of two commits: every read of a view is one
REPEATABLE READ snapshot (``storage.catalog``), although a view's results
span several tables (one per schema) that a worker's commit changes
together."""

from __future__ import annotations

import threading
import time

import pytest
import sqlalchemy as sa
from rdflib import URIRef

from server.api.auth import Principal
from server.api.views import service
from server.api.views.service import register_view
from server.errors import Conflict
from server.maintenance import jobs
from storage import catalog, krel, pods, views_repo
from tests.maintenance.test_pipeline import drain, setup
from views.terms import term_of

EX = "http://ex/"
# ?z is bound or not: the root's rows live in two tables, {s} and {s, z}
QUERY = "PREFIX : <http://ex/> SELECT ?s ?z WHERE { ?s :p ?o OPTIONAL { ?s :q ?z } }"
A, P, Q, B = (URIRef(EX + x) for x in ("a", "p", "q", "b"))


def _view(engine: sa.Engine) -> tuple[int, int]:
    pod, consumer = setup(engine)
    with engine.begin() as c:
        pods.put_resource(c, pod, "base", {(A, P, B)})
        view = register_view(c, consumer, "v", QUERY)
    drain(engine)
    return pod, view


def _toggle(engine: sa.Engine, pod: int, on: bool) -> None:
    with engine.begin() as c:
        pods.put_resource(c, pod, "z", {(A, Q, URIRef(EX + "z"))} if on else set())


def test_a_read_sees_one_commit_even_across_a_job_commit(migrated: str) -> None:
    engine = sa.create_engine(migrated)
    pod, view = _view(engine)
    with engine.connect() as c:
        assert len(krel.tables(c, view)[views_repo.view_row(c, view).root_node]) == 1
    with catalog.snapshot(engine) as c:
        row = views_repo.view_row(c, view)  # the snapshot is taken here
        _toggle(engine, pod, True)
        drain(engine)  # a worker moves ?a's row to the {s, z} table and commits
        assert catalog.results(c, row) == {frozenset({("s", A)}): 1}
        assert catalog.row_count(c, row) == 1
    with engine.connect() as c:  # both tables exist now, and a new read sees the move
        now = views_repo.view_row(c, view)
        assert len(krel.tables(c, view)[now.root_node]) == 2
        assert catalog.results(c, now) == {frozenset({("s", A), ("z", URIRef(EX + "z"))}): 1}


def test_readers_racing_a_writer_see_exactly_one_row_for_each_subject(migrated: str) -> None:
    engine = sa.create_engine(migrated)
    pod, view = _view(engine)
    stop = threading.Event()
    errors: list[BaseException] = []

    def write_and_maintain() -> None:
        try:
            on = True
            while not stop.is_set():
                _toggle(engine, pod, on)
                while jobs.run_one(engine, "test"):
                    pass
                on = not on
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append(e)

    writer = threading.Thread(target=write_and_maintain)
    writer.start()
    admin, reads, seen = Principal("admin"), 0, set()
    try:
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:
            found = service.read(engine, admin, view)
            assert isinstance(found, service.Results), found
            subjects = [term_of(*r["s"]) for r in found.rows]
            assert subjects == [A], found.rows  # never 0 (between) nor 2 (both) rows
            seen.add("z" in found.rows[0])
            reads += 1
    finally:
        stop.set()
        writer.join(30)
    assert not errors
    assert reads > 20 and seen == {True, False}  # the reads did see both states


def test_a_read_answers_why_until_the_view_reflects_the_change(migrated: str) -> None:
    """``service.read`` checks and reads in one snapshot: while a job of the
    change is pending it answers why (no page), once the job has committed
    it answers the page that reflects the change, and a change that does
    not exist is a conflict."""
    engine = sa.create_engine(migrated)
    pod, view = _view(engine)
    admin = Principal("admin")
    with engine.begin() as c:
        seq = pods.put_resource(c, pod, "z", {(A, Q, URIRef(EX + "z"))})
    assert service.read(engine, admin, view, seq) == "1 of its jobs are pending"
    before = service.read(engine, admin, view)  # no change asked for: the page as it is
    assert isinstance(before, service.Results) and before.watermark < seq
    assert [r.get("z") for r in before.rows] == [None]
    drain(engine)
    after = service.read(engine, admin, view, seq)
    assert isinstance(after, service.Results) and after.watermark >= seq
    assert [term_of(*r["z"]) for r in after.rows] == [URIRef(EX + "z")]
    with pytest.raises(Conflict, match=f"no change {seq + 1} yet"):
        service.read(engine, admin, view, seq + 1)

"""Stored state belongs to the plan that computed it: when the engine's plan
for a registered view changes (here: a rewrite rule added between two runs
over the same database), the view is rebuilt, says so in its status, equals
its evaluation from scratch, and no K-relation table of the old plan is
reused."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

import pytest
import sqlalchemy as sa
from rdflib import Literal, URIRef

from server.api.auth import Principal
from server.api.views import service
from server.api.views.service import register_view
from server.maintenance import jobs, plans, verify
from storage import catalog, krel, pods, views_repo
from tests.maintenance.test_pipeline import EX, drain, setup
from views import algebra as A
from views import normalize
from views.compile import compiled
from views.errors import UnsupportedFeature

QUERY = ("PREFIX : <http://ex/> SELECT ?x ?n WHERE { ?x :p ?y . ?y :q ?z "
         "OPTIONAL { ?x :name ?n } FILTER(?z > 1) }")


def split_bgps(p: A.Pattern) -> A.Pattern:
    """A rewrite a later engine might make: every BGP of two or more triple
    patterns becomes the join of its first pattern and the rest (the same
    solutions, another plan)."""
    match p:
        case A.BGP() if len(p.triples) > 1:
            return A.Join(left=A.BGP(triples=p.triples[:1]),
                          right=split_bgps(A.BGP(triples=p.triples[1:])))
        case A.Join() | A.LeftJoin() | A.Union_() | A.Minus():
            return replace(p, left=split_bgps(p.left), right=split_bgps(p.right))
        case A.Filter() | A.Extend() | A.Project() | A.Distinct() | A.Group():
            return replace(p, p=split_bgps(p.p))
    return p


@pytest.fixture
def next_run(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[], None]]:
    """Switches to the next run's engine (one more rewrite rule) when called."""
    def upgrade() -> None:
        compiled.cache_clear()
        monkeypatch.setattr(normalize, "RULES", (*normalize.RULES, split_bgps))

    compiled.cache_clear()
    yield upgrade
    compiled.cache_clear()


def _write(engine: sa.Engine, pod: int, path: str, n: int) -> None:
    def ex(s: str) -> URIRef:
        return URIRef(f"{EX}{path}/{s}")

    p, q, name = (URIRef(EX + x) for x in ("p", "q", "name"))
    triples = {(ex(f"a{i}"), p, ex(f"b{i}")) for i in range(n)}
    triples |= {(ex(f"b{i}"), q, Literal(i)) for i in range(n)}
    triples |= {(ex(f"a{i}"), name, Literal(f"A{i}")) for i in range(0, n, 2)}
    with engine.begin() as c:
        pods.put_resource(c, pod, path, triples)


def _tables(engine: sa.Engine, view: int) -> set[str]:
    with engine.connect() as c:
        return {name for node in krel.tables(c, view).values() for name, _ in node.values()}


def _existing(engine: sa.Engine) -> set[str]:
    with engine.connect() as c:
        return set(c.execute(sa.text(
            "SELECT tablename FROM pg_tables WHERE tablename LIKE 'kr\\_%'")).scalars())


def _registered(migrated: str) -> tuple[sa.Engine, int, int]:
    engine = sa.create_engine(migrated)
    pod, consumer = setup(engine)
    _write(engine, pod, "r", 6)
    with engine.begin() as c:
        view = register_view(c, consumer, "v", QUERY)
    drain(engine)
    return engine, pod, view


def test_a_changed_plan_rebuilds_the_view(migrated: str,
                                          next_run: Callable[[], None]) -> None:
    engine, pod, view = _registered(migrated)
    before = _tables(engine, view)
    with engine.connect() as c:
        old = views_repo.view_row(c, view)
        old_results = catalog.results(c, old)
    assert old.status == "ready" and old.plan_fingerprint and before
    next_run()
    new_plan = compiled(QUERY).plan
    assert new_plan.fingerprint != old.plan_fingerprint
    admin = Principal("admin")
    described = service.describe(engine, admin, view)
    assert described.status == "rebuilding" and "plan" in (described.note or "")
    why = service.read(engine, admin, view)  # never served from the old plan's state
    assert isinstance(why, str) and why.startswith("it is rebuilding"), why

    _write(engine, pod, "r2", 3)  # the next job finds the plan changed
    drain(engine)
    described = service.describe(engine, admin, view)
    assert described.status == "ready"
    assert "plan for this view changed" in (described.note or "")
    with engine.connect() as c:
        now = views_repo.view_row(c, view)
        assert now.plan_fingerprint == new_plan.fingerprint
        assert now.root_node == new_plan.root.id
        assert catalog.results(c, now) == verify.scratch(c, view)
        assert catalog.results(c, now) != old_results  # r2's rows are in
    after = _tables(engine, view)
    assert not before & after  # no table of the old plan reused
    assert not before & _existing(engine)  # the old plan's tables are gone
    stored_nodes = {n.id for n in new_plan.nodes if new_plan.stored(n)}
    with engine.connect() as c:
        assert set(krel.tables(c, view)) <= stored_nodes
        # the feed follows the new root: its tables watched, the rebuild's delta
        # the old results out and the new in, and the next write's delta recorded
        roots = [name for name, _ in krel.tables(c, view)[new_plan.root.id].values()]
        watched = c.execute(sa.text(
            "SELECT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
            "WHERE t.tgname = 'feed_insert' AND c.relname = ANY(:n)"), {"n": roots}).scalars()
        assert sorted(watched) == sorted(roots)
    last = _feed_total(engine, view)
    _write(engine, pod, "r3", 4)
    drain(engine)
    with engine.connect() as c:
        assert _feed_total(engine, view) > last
        assert catalog.results(c, views_repo.view_row(c, view)) == verify.scratch(c, view)


def _feed_total(engine: sa.Engine, view: int) -> int:
    """The rows of the view's recorded deltas, in all."""
    with engine.connect() as c:
        return int(c.execute(sa.text("SELECT count(*) FROM view_change_rows WHERE view_id = :v"),
                             {"v": view}).scalar_one())


def test_a_new_engine_checks_every_view_at_start(migrated: str, next_run: Callable[[], None],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    engine, _, view = _registered(migrated)
    with engine.begin() as c:
        unchanged = register_view(c, setup_consumer(c), "same",
                                  "PREFIX : <http://ex/> SELECT ?x WHERE { ?x :p ?y }")
    drain(engine)
    monkeypatch.setattr(plans, "ENGINE", "the next engine")
    monkeypatch.setattr(jobs, "ENGINE", "the next engine")
    next_run()
    assert plans.reconcile(engine) == (1, 1)  # the 1-pattern view's plan is the same
    with engine.connect() as c:
        rebuilt, same = views_repo.view_row(c, view), views_repo.view_row(c, unchanged)
    assert rebuilt.status == "rebuilding" and "fingerprint" in rebuilt.status_note
    assert same.status == "ready" and same.plan_engine == "the next engine"
    assert plans.reconcile(engine) == (0, 0)  # checked once per engine
    drain(engine)
    with engine.connect() as c:
        rebuilt = views_repo.view_row(c, view)
        assert rebuilt.status == "ready" and rebuilt.plan_engine == "the next engine"
        assert catalog.results(c, rebuilt) == verify.scratch(c, view)


def test_a_query_the_new_engine_refuses_fails_the_view(migrated: str,
                                                       next_run: Callable[[], None],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    engine, _, view = _registered(migrated)

    def refuse(p: A.Pattern) -> A.Pattern:
        raise UnsupportedFeature("OPTIONAL (say)")

    monkeypatch.setattr(plans, "ENGINE", "a stricter engine")
    next_run()
    monkeypatch.setattr(normalize, "RULES", (refuse,))
    plans.reconcile(engine)
    with engine.connect() as c:
        row = views_repo.view_row(c, view)
    assert row.status == "failed" and "OPTIONAL (say)" in row.status_note


def setup_consumer(c: sa.Connection) -> int:
    row = c.execute(sa.text("SELECT id FROM agents WHERE role = 'consumer'")).scalar_one()
    return int(row)

"""The change feed (architecture decision 10): a subscriber that starts from
a view's snapshot and applies every delta it reads holds, at every seq it
reaches, exactly the view's results evaluated from scratch by pyoxigraph on
the pods' data and consents as of that seq — no gap, no duplicate, in
order. Random write streams (PUT, DELETE, grants, revocations over two
pods) drive several views; one run drains the queue in process after every
operation (each delta is then at the seq of the operation that produced
it), the other with worker processes SIGKILLed at random points."""

from __future__ import annotations

import os
import random
import signal
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import pyoxigraph as ox
import pytest
import sqlalchemy as sa
from rdflib.term import Identifier, URIRef

from server.api.auth import Principal
from server.api.consents.service import record_grant, record_revoke
from server.api.views import changes
from server.api.views.service import register_view
from server.errors import Gone, NotReady
from server.maintenance import verify
from server.maintenance.router import Router
from server.tools.oracle import canon, ox_quad, oxigraph_rows
from storage import catalog, pods, views_repo
from storage.feed import Retention, compact
from tests.maintenance.test_kill import _settle, _until_working, _worker
from tests.maintenance.test_pipeline import QUERIES, _vocab, drain, setup
from views.compile import compiled

ADMIN = Principal("admin")
OPS = int(os.environ.get("PODVIEWS_FEED_OPS", "12"))
KILLS = int(os.environ.get("PODVIEWS_FEED_KILLS", "2"))  # expected workers killed
Row = tuple[tuple[str, tuple], ...]


def _row(b: dict[str, Identifier]) -> Row:
    return tuple(sorted((v, canon(t)) for v, t in b.items()))


@dataclass
class Follower:
    """A consumer of one view's feed: the snapshot it started from, then
    every delta applied, page by page; the seqs it has applied."""

    engine: sa.Engine
    view: int
    budget: int = 7  # small pages: deltas are cut and resumed with skip
    key: Callable[[dict[str, Identifier]], Row] = _row  # a binding as it is counted
    rows: Counter[Row] = field(default_factory=Counter)
    seqs: list[int] = field(default_factory=list)
    at: int = 0

    def start(self) -> None:
        page = changes.read(self.engine, ADMIN, self.view, None, 0, self.budget)
        assert page.snapshot is not None and page.at is not None
        self.rows = Counter(self.key(b) for b in page.snapshot)
        self.at = page.at

    def follow(self) -> list[tuple[int, Counter[Row]]]:
        """Every delta after its position applied: the state after each seq."""
        states = []
        since, skip = self.at, 0
        while True:
            page = changes.read(self.engine, ADMIN, self.view, since, skip, self.budget)
            for ch in page.changes:
                assert ch.skip == (skip if ch is page.changes[0] else 0)
                if ch.skip == 0:
                    assert not self.seqs or ch.seq > self.seqs[-1], "out of order or twice"
                    self.seqs.append(ch.seq)
                self.rows.update(self.key(b) for b in ch.added)
                self.rows.subtract(self.key(b) for b in ch.removed)
                assert all(n >= 0 for n in self.rows.values()), f"removed absent rows at {ch.seq}"
                self.rows = +self.rows
                if ch.complete:
                    states.append((ch.seq, Counter(self.rows)))
            since, skip = page.since, page.skip
            if page.at is not None and not page.changes:
                self.at = page.at
                return states


@dataclass
class World:
    """What the test did, by seq: every resource's triples and the pods
    whose consent is in force — the oracle's input at any position."""

    log: list[tuple[int, str, object]] = field(default_factory=list)

    def at(self, seq: int) -> tuple[dict[tuple[int, str], set], set[int]]:
        resources: dict[tuple[int, str], set] = {}
        consenting: set[int] = set()
        for s, kind, arg in self.log:
            if s > seq:
                break
            if kind == "put":
                pod, path, triples = arg  # type: ignore[misc]
                resources[(pod, path)] = triples
            elif kind == "delete":
                resources.pop(arg, None)  # type: ignore[arg-type]
            elif kind == "grant":
                consenting.add(arg)  # type: ignore[arg-type]
            elif kind == "revoke":
                consenting.discard(arg)  # type: ignore[arg-type]
        return resources, consenting

    def oracle(self, query: str, seq: int) -> Counter[Row]:
        resources, consenting = self.at(seq)
        store = ox.Store()
        triples = {t for (pod, _), ts in resources.items() if pod in consenting for t in ts}
        store.extend([ox_quad(t) for t in triples])
        found = oxigraph_rows(store, query, compiled(query).query.variables)
        return Counter({tuple(r): n for r, n in found.items()})


class Stream:
    """Random operations over two pods: PUT and DELETE of three resources
    each, grants and revocations of the consumer's consent."""

    def __init__(self, engine: sa.Engine, rng: random.Random) -> None:
        self.engine, self.rng, self.world = engine, rng, World()
        with engine.begin() as c:
            self.consumer = pods.create_agent(c, "https://lab.example/#it", "consumer", b"c")
            owner = pods.create_agent(c, "https://o.example/#me", "owner", b"o")
            self.pods = [pods.create_pod(c, n, owner) for n in ("alice", "bob")]
        self.consents: dict[int, int] = {}  # pod -> its consent in force
        self.grant(self.pods[0])

    def grant(self, pod: int) -> int:
        with self.engine.begin() as c:
            cid, seq = record_grant(c, pod, self.consumer)
        self.consents[pod] = cid
        self.world.log.append((seq, "grant", pod))
        return seq

    def revoke(self, pod: int) -> int:
        with self.engine.begin() as c:
            seq = record_revoke(c, self.consents.pop(pod))
        self.world.log.append((seq, "revoke", pod))
        return seq

    def step(self) -> int | None:
        """One random operation; its seq (None: nothing happened)."""
        rng = self.rng
        pod = rng.choice(self.pods)
        if rng.random() < 0.12:
            return self.revoke(pod) if pod in self.consents else self.grant(pod)
        return self.write(pod)

    def write(self, pod: int) -> int | None:
        """A PUT or DELETE of one of the pod's resources."""
        rng = self.rng
        nodes, preds, objects = _vocab()
        path = rng.choice(["r1", "r2", "r3"])
        with self.engine.begin() as c:
            if rng.random() < 0.15:
                try:
                    seq = pods.delete_resource(c, pod, path)
                except pods.PodsError:
                    return None
                self.world.log.append((seq, "delete", (pod, path)))
                return seq
            triples = {(rng.choice(nodes), rng.choice(preds), rng.choice(objects))
                       for _ in range(rng.randint(0, 8))}
            seq = pods.put_resource(c, pod, path, triples)
        self.world.log.append((seq, "put", (pod, path, triples)))
        return seq


def _register(engine: sa.Engine, consumer: int) -> dict[str, int]:
    with engine.begin() as c:
        return {n: register_view(c, consumer, n, q) for n, q in QUERIES.items()}


@pytest.mark.parametrize("render", [False, True], ids=["interpreter", "rendered"])
def test_a_subscriber_holds_the_view_from_scratch_at_every_seq(migrated: str, render: bool
                                                               ) -> None:
    """Through the interpreter, ΔV is what the root tables' triggers
    capture; rendered, each batch's statement records its root's delta and
    ends its job itself (design note 170)."""
    engine = sa.create_engine(migrated)
    stream = Stream(engine, random.Random(18))
    for _ in range(4):
        stream.step()
    views = _register(engine, stream.consumer)
    router = Router(mode="sql", render=render)
    drain(engine, router)
    followers = {n: Follower(engine, v) for n, v in views.items()}
    for f in followers.values():
        f.start()
    print(f"{OPS} operations (PODVIEWS_FEED_OPS)")
    for _ in range(OPS):
        seq = stream.step()
        drain(engine, router)
        for name, f in followers.items():
            for at, rows in f.follow():
                assert at == seq, f"{name}: a delta at {at}, made by the operation at {seq}"
            if seq is not None:
                assert f.rows == stream.world.oracle(QUERIES[name], seq), (name, seq)
    with engine.connect() as c:
        for v in views.values():
            assert catalog.view_results(c, v) == verify.scratch(c, v)
        placed = [views_repo.view_row(c, v).placement for v in views.values()]
    assert sum(len(f.seqs) for f in followers.values()) >= OPS  # the feed was exercised
    assert (placed.count(views_repo.RENDERED) >= 3) == render, placed


def test_workers_killed_at_random_points_deliver_every_delta_once(migrated: str) -> None:
    engine = sa.create_engine(migrated)
    rng = random.Random(81)
    stream = Stream(engine, rng)
    views = _register(engine, stream.consumer)
    worker = _worker(migrated)
    _settle(engine)
    followers = {n: Follower(engine, v) for n, v in views.items()}
    for f in followers.values():
        f.start()
    kills = 0
    for _ in range(OPS):
        stream.step()
        if rng.random() < KILLS / OPS:
            _until_working(engine, worker.pid)
            time.sleep(rng.uniform(0, 0.3))
            worker.send_signal(signal.SIGKILL)
            worker.wait()
            kills += 1
            worker = _worker(migrated)
        if rng.random() < 0.3:  # a subscriber reading while the workers run
            for name, f in followers.items():
                try:
                    _check(stream.world, QUERIES[name], f.follow())
                except NotReady:  # withheld while a revocation is pending: read again later
                    pass
    _settle(engine)
    worker.terminate()
    worker.wait(timeout=30)
    print(f"{OPS} operations, {kills} workers killed (PODVIEWS_FEED_OPS, PODVIEWS_FEED_KILLS)")
    for name, f in followers.items():
        _check(stream.world, QUERIES[name], f.follow())
        with engine.connect() as c:
            got = catalog.view_results(c, f.view)
        assert Counter({_row(dict(m)): k for m, k in got.items()}) == f.rows, name


def _check(world: World, query: str, states: list[tuple[int, Counter[Row]]]) -> None:
    for at, rows in states:
        assert rows == world.oracle(query, at), (query, at)


def _orphans(engine: sa.Engine) -> int:
    """Recorded rows whose delta is gone: none may be left (the rows have no
    foreign key to their head since migration 0026; the code drops both)."""
    with engine.connect() as c:
        return int(c.execute(sa.text(
            "SELECT count(*) FROM view_change_rows r WHERE NOT EXISTS (SELECT 1 FROM "
            "view_changes c WHERE c.view_id = r.view_id AND c.seq = r.seq)")).scalar_one())


def test_a_position_compacted_away_is_gone(migrated: str) -> None:
    engine = sa.create_engine(migrated)
    stream = Stream(engine, random.Random(4))
    view = _register(engine, stream.consumer)["min-max-count"]
    drain(engine)
    f = Follower(engine, view)
    f.start()
    start = f.at
    seqs = []
    while len(seqs) < 3:
        stream.step()
        drain(engine)
        seqs += [s for s, _ in f.follow()]
    with engine.begin() as c:
        compact(c, view, seqs[1])
    with pytest.raises(Gone):
        changes.read(engine, ADMIN, view, start, 0, 10)
    page = changes.read(engine, ADMIN, view, seqs[1], 0, 10)  # at the floor: resumes
    assert [ch.seq for ch in page.changes] == seqs[2:]
    assert _orphans(engine) == 0


def test_dropping_a_view_drops_its_feed(migrated: str) -> None:
    from storage import views_repo

    engine = sa.create_engine(migrated)
    stream = Stream(engine, random.Random(5))
    views = _register(engine, stream.consumer)
    drain(engine)
    gone, kept = views["min-max-count"], views["distinct-bind"]

    def recorded() -> set[int]:
        with engine.connect() as c:
            return set(c.execute(sa.text("SELECT DISTINCT view_id FROM view_change_rows"))
                       .scalars())

    for _ in range(40):  # until both views have recorded rows
        if {gone, kept} <= recorded():
            break
        stream.step()
        drain(engine)
    assert {gone, kept} <= recorded()
    with engine.begin() as c:
        views_repo.drop_view(c, gone)
    assert gone not in recorded() and kept in recorded()
    assert _orphans(engine) == 0


def test_retention_keeps_the_last_deltas(migrated: str) -> None:
    from server.maintenance import jobs
    from server.maintenance.limits import Limits

    engine = sa.create_engine(migrated)
    stream = Stream(engine, random.Random(6))
    view = _register(engine, stream.consumer)["distinct-bind"]
    limits = Limits(retention=Retention(changes=2))
    for _ in range(12):
        stream.write(stream.pods[0])
        while jobs.run_one(engine, "test", limits=limits):
            pass
    with engine.connect() as c:
        kept = c.execute(sa.text("SELECT seq FROM view_changes WHERE view_id = :v ORDER BY seq"),
                         {"v": view}).scalars().all()
        floor, counted = c.execute(sa.text("SELECT feed_floor, feed_deltas FROM views "
                                           "WHERE id = :v"), {"v": view}).one()
    assert len(kept) == 2 and floor < kept[0] and counted == 2
    assert _orphans(engine) == 0


def test_retention_drops_the_deltas_older_than_its_age(migrated: str) -> None:
    """The deltas written before the age limit go at the next job, the
    floor moves past them, and the view's count of its deltas follows."""
    from server.maintenance import jobs
    from server.maintenance.limits import Limits

    engine = sa.create_engine(migrated)
    stream = Stream(engine, random.Random(7))
    view = _register(engine, stream.consumer)["distinct-bind"]
    seqs: list[int] = []
    while len(seqs) < 4:  # writes until four of them changed the view
        stream.write(stream.pods[0])
        while jobs.run_one(engine, "test"):
            pass
        with engine.connect() as c:
            seqs = c.execute(sa.text("SELECT seq FROM view_changes WHERE view_id = :v "
                                     "ORDER BY seq"), {"v": view}).scalars().all()
    with engine.begin() as c:
        c.execute(sa.text("UPDATE view_changes SET at = at - make_interval(hours => 2) "
                          "WHERE view_id = :v AND seq <= :s"), {"v": view, "s": seqs[2]})
    limits = Limits(retention=Retention(seconds=3600))
    while True:  # a write that changes the view: its job records a delta and compacts
        stream.write(stream.pods[0])
        while jobs.run_one(engine, "test", limits=limits):
            pass
        with engine.connect() as c:
            kept = c.execute(sa.text("SELECT seq FROM view_changes WHERE view_id = :v "
                                     "ORDER BY seq"), {"v": view}).scalars().all()
        if kept[-1] != seqs[-1]:
            break
    with engine.connect() as c:
        floor, counted = c.execute(sa.text("SELECT feed_floor, feed_deltas FROM views "
                                           "WHERE id = :v"), {"v": view}).one()
    assert kept[:len(seqs) - 3] == seqs[3:] and floor == seqs[2] and counted == len(kept)
    assert _orphans(engine) == 0


def test_a_delta_at_the_last_position_restarts_the_feed_there(migrated: str) -> None:
    """``feed.record`` at a position not after the view's last delta (a
    rebuild whose new plan gives other results): with changes captured, the
    feed restarts at that position holding just them; with none, nothing
    moves."""
    from storage import feed, views_repo

    engine = sa.create_engine(migrated)
    stream = Stream(engine, random.Random(9))
    view = _register(engine, stream.consumer)["distinct-bind"]
    drain(engine)
    for _ in range(3):
        stream.write(stream.pods[0])
        drain(engine)

    def state(c: sa.Connection) -> tuple[list, int]:
        heads = c.execute(sa.text("SELECT seq, added, removed FROM view_changes "
                                  "WHERE view_id = :v ORDER BY seq"), {"v": view}).all()
        floor = c.execute(sa.text("SELECT feed_floor FROM views WHERE id = :v"),
                          {"v": view}).scalar_one()
        return [tuple(h) for h in heads], floor

    with engine.begin() as c:
        before = state(c)
        last = before[0][-1][0]
        feed.capture(c, view, views_repo.view_row(c, view).root_node)
        assert feed.record(c, view, last, Retention()) == (0, 0)
        assert state(c) == before
    with engine.begin() as c:
        feed.capture(c, view, views_repo.view_row(c, view).root_node)
        c.execute(sa.text("INSERT INTO pg_temp.feed_captured VALUES "
                          "('[\"x\", \"s\"]', '{1, 2}', 1), ('[\"x\", \"s\"]', '{1, 3}', -2)"))
        assert feed.record(c, view, last, Retention()) == (1, 2)
        assert state(c) == ([(last, 1, 2)], last)
        rows = c.execute(sa.text("SELECT k, binding FROM view_change_rows WHERE view_id = :v "
                                 "ORDER BY i"), {"v": view}).all()
        assert [(r.k, r.binding) for r in rows] == [(-2, {"x": 1, "s": 3}),
                                                    (1, {"x": 1, "s": 2})]


# the entries this transaction read from the feed's tables and their indexes
_FEED_READ = ("SELECT sum(pg_stat_get_xact_tuples_returned(c.oid)) FROM pg_class c "
              "WHERE c.oid IN (CAST('view_changes' AS regclass), "
              "CAST('view_change_rows' AS regclass)) OR c.oid IN (SELECT indexrelid FROM "
              "pg_index WHERE indrelid IN (CAST('view_changes' AS regclass), "
              "CAST('view_change_rows' AS regclass)))")


@pytest.mark.parametrize("render", [False, True], ids=["interpreted", "rendered"])
def test_a_jobs_feed_upkeep_reads_only_the_deltas_it_drops(
        migrated: str, monkeypatch, render: bool) -> None:  # type: ignore[no-untyped-def]
    """The statement recording a job's delta also drops the deltas past the
    view's retention, and their rows with them: it reads the deltas it
    drops, not every delta and row the view's feed holds. Its plan is
    generic, made at the first job of a connection, when the feed was
    small; Postgres then read the rows of the view and filtered their seqs
    (0.8 ms a job after 27 BSBM updates of the paper bench's path view,
    growing with the feed until its 10,000 deltas; design note 185). Each
    of 30 writes adds 40 triples to a one-pattern view, kept whole by the
    default retention, then 10 more with a retention of 5 deltas: one
    delta of 40 rows dropped at each. The entries read from the feed's
    tables and their indexes are counted by Postgres in the job's
    transaction, just after the statement ran."""
    from server.executors.sql.render import DG
    from server.maintenance import jobs
    from server.maintenance.limits import Limits
    from storage import driver

    engine = sa.create_engine(migrated)
    pod, consumer = setup(engine)
    router = Router(mode="sql", render=True) if render else \
        Router(mode="sql", render=False, render_from_rows=0)  # rendering off
    with engine.begin() as c:
        view = register_view(c, consumer, "feed", "SELECT ?x ?y WHERE { ?x <urn:p> ?y }")
    drain(engine, router)
    read: list[int] = []
    real_one = driver.one

    def counted(conn, sql, params=None, prepare=True):  # type: ignore[no-untyped-def]
        if "gone_rows AS" not in sql:
            return real_one(conn, sql, params, prepare)
        assert (f"FROM {DG} AS " in sql) == render  # the rendered statement records its ΔV
        before = conn.execute(sa.text(_FEED_READ)).scalar_one()
        found = real_one(conn, sql, params, prepare)
        read.append(conn.execute(sa.text(_FEED_READ)).scalar_one() - before)
        return found
    monkeypatch.setattr(driver, "one", counted)

    def write(i: int, limits: Limits) -> None:
        with engine.begin() as c:
            pods.put_resource(c, pod, f"r{i}", {(URIRef(f"urn:s{i}-{j}"), URIRef("urn:p"),
                                                  URIRef(f"urn:o{j}")) for j in range(40)})
        while jobs.run_one(engine, "test", router, limits=limits):
            pass

    for i in range(30):
        write(i, Limits())
    assert len(read) == 30 and max(read) <= 1, read  # the last delta's head (``LAST``)
    read.clear()
    for i in range(30, 40):
        write(i, Limits(retention=Retention(changes=5)))
    # the first drops the 26 deltas past the 5 last at once (each delta's rows, its
    # head found and deleted); each later one drops the oldest, and reads the last
    # head and the oldest kept — past the dead index entries of the heads dropped
    # before it (the first's 26, then one a job) until Postgres marks them dead,
    # which a scan does once no snapshot can see them: with the cluster's other
    # databases busy, none was marked (69, 70 … 77 entries; 44 alone). Reading the
    # rows the feed holds, as the old statement did, is 200 and more a job.
    one = 40 + 4
    assert len(read) == 10 and read[0] <= 26 * (40 + 2) + 1, read
    assert all(r <= one + 26 + k for k, r in enumerate(read[1:])), read
    with engine.connect() as c:
        kept = c.execute(sa.text("SELECT count(*) FROM view_change_rows WHERE view_id = :v"),
                         {"v": view}).scalar_one()
    assert kept == 5 * 40 and _orphans(engine) == 0
    engine.dispose()

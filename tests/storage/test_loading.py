"""A load leaves what it stored readable from the indexes alone even when
another database of the server commits asynchronously beside it
(``storage.pods.settle``, design note 189)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from rdflib import URIRef

from storage import pods
from tests.plans import index_only_scans

# transaction ids share the commit log's LSN in groups of this many (clog.c)
GROUP = 32


def test_a_load_is_settled_though_a_neighbour_commits_asynchronously(migrated: str,
                                                                      database: str) -> None:
    """Each round, a session of another database takes a transaction id just
    before the load's and commits asynchronously once the load has committed,
    before the load's VACUUM: the commit-log group the two ids share then
    carries an LSN the WAL writer may not have flushed, which kept VACUUM from
    marking the load's pages all-visible. Rounds whose two ids fall in
    different groups do not set the trap and do not count."""
    engine = sa.create_engine(migrated)
    neighbour = sa.create_engine(database).connect()
    neighbour.execute(sa.text("SET synchronous_commit = off"))
    neighbour.execute(sa.text("CREATE TABLE n (x int)"))
    neighbour.commit()

    @sa.event.listens_for(engine.pool, "checkin")
    def commit_beside(*_: Any) -> None:  # the load committed, its VACUUM not begun
        if neighbour.in_transaction():
            neighbour.commit()

    with engine.begin() as c:
        pod = pods.create_pod(c, "bob", pods.create_agent(c, "https://bob/#me", "owner", b"h"))
    trapped = 0
    for round_ in range(40):
        neighbours = int(neighbour.execute(sa.text(
            "INSERT INTO n VALUES (1) RETURNING txid_current()")).scalar_one())
        with pods.loading(engine) as c:
            ours = int(c.execute(sa.text("SELECT txid_current()")).scalar_one())
            pods.put_resource(c, pod, f"r{round_}", {
                (URIRef(f"http://ex/s{round_}-{i}"), URIRef("http://ex/p"),
                 URIRef(f"http://ex/o{i % 7}")) for i in range(2000)})
        assert not neighbour.in_transaction()
        with engine.connect() as c:
            scans = index_only_scans(c, pod)
            assert scans and all(n["Heap Fetches"] == 0 for n in scans), (round_, neighbours, ours)
        trapped += neighbours // GROUP == ours // GROUP
        if trapped == 5:
            break
    neighbour.close()
    assert trapped == 5

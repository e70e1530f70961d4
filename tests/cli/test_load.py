"""``podviews load`` is a write like any other: data loaded into a pod that
an existing view reads reaches the view (the load records its change and
wakes the view, ``storage.changes.record_change``)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
import sqlalchemy as sa

from server.api.views.service import register_view
from server.cli.main import main
from server.maintenance import verify
from storage import catalog, changes, terms
from tests.maintenance.test_pipeline import drain, setup
from tests.plans import index_only_scans


@pytest.mark.parametrize("staged", [False, True])
def test_loaded_data_reaches_an_existing_view(migrated: str, tmp_path: Path, staged: bool,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Small and large loads alike: a large one's terms and triples go
    through staging tables (forced here by the thresholds)."""
    if staged:
        monkeypatch.setattr(terms, "ARRAYED", 0)
        monkeypatch.setattr(changes, "STAGED", 0)
    engine = sa.create_engine(migrated)
    _, consumer = setup(engine)  # the pod "alice", consent granted to the consumer
    with engine.begin() as c:
        view = register_view(c, consumer, "names", "SELECT ?s ?name WHERE "
                             "{ ?s <http://xmlns.com/foaf/0.1/name> ?name }")
    drain(engine)
    data = tmp_path / "people.nt.gz"
    with gzip.open(data, "wt", encoding="utf-8") as f:
        for i in range(50):
            f.write(f'<http://ex/p{i}> <http://xmlns.com/foaf/0.1/name> "P{i}" .\n')
            f.write(f"<http://ex/p{i}> <http://ex/age> \"{i}\" .\n")
    assert main(["load", str(data), "--pod", "alice", "--database-url", migrated]) == 0
    drain(engine)
    with engine.connect() as c:
        got = catalog.view_results(c, view)
        assert got == verify.scratch(c, view)
    assert sorted(str(dict(m)["name"]) for m in got) == sorted(f"P{i}" for i in range(50))


def test_a_load_leaves_its_triples_readable_from_the_indexes_alone(migrated: str,
                                                                    tmp_path: Path) -> None:
    """After a load, an index-only scan of the pod's triples fetches no heap
    page: the load VACUUMs what it filled (the visibility map set), as
    autovacuum would later (design note 163), and leaves statistics."""
    data = tmp_path / "rows.nt"
    data.write_text("".join(f"<http://ex/s{i}> <http://ex/p> <http://ex/o{i % 7}> .\n"
                            for i in range(3000)))
    assert main(["load", str(data), "--pod", "bob", "--database-url", migrated]) == 0
    engine = sa.create_engine(migrated)
    with engine.connect() as c:
        pod = c.execute(sa.text("SELECT id FROM pods WHERE name = 'bob'")).scalar_one()
        scans = index_only_scans(c, pod)
        assert scans and all(n["Heap Fetches"] == 0 for n in scans), scans
        assert sum(n["Actual Rows"] for n in scans) == 3000
        analyzed = c.execute(sa.text("SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables "
                                     "WHERE relname = 'pod_triples'")).scalar_one()
        assert analyzed

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

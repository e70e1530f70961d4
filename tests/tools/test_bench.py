"""The benchmarks run and their results are checked (never their timings)."""

from __future__ import annotations

import gzip
from collections.abc import Collection
from pathlib import Path

import pytest
import sqlalchemy as sa

from server.tools import paths
from server.tools.bench import batch as bench_batch
from server.tools.bench import documents as bench_documents
from server.tools.bench import live as bench_live
from server.tools.bench import many_views as bench_views
from server.tools.bench import paper as bench_paper
from server.tools.bench import synthetic as bench_synthetic
from server.tools.bench import throughput as bench_throughput
from server.tools.bench.pipeline import bench_router, fresh_engine
from storage import views_repo

BSBM = paths.BSBM


def test_paper_synthetic_results_agree_with_both_oracles(pg_server: str) -> None:
    """The update maintained in memory and through the pipeline's SQL
    executor equals our from-scratch evaluation and pyoxigraph's."""
    rows = bench_synthetic.run(n=25, p=0.12, seed=1, executors=("memory", "sql"),
                               server_url=pg_server)
    assert [(r.query, r.executor) for r in rows] == [
        ("path-3", "memory"), ("star-3", "memory"), ("path-3", "sql"), ("star-3", "sql")]
    assert all(r.equal for r in rows)
    assert all(r.view_rows > 0 for r in rows)
    assert [r.view_rows for r in rows[:2]] == [r.view_rows for r in rows[2:]]


@pytest.mark.skipif(not (BSBM / "bsbm-100.nt.gz").exists(), reason="BSBM data not in ../shared")
def test_paper_bsbm_views_equal_pyoxigraph_after_every_update(pg_server: str) -> None:
    """Every query of the paper's BSBM experiment, maintained through the SQL
    executor over the update kinds of the paper and one BSBM transaction,
    equals pyoxigraph after every update; the views are not empty."""
    rows = bench_paper.run(pg_server, BSBM / "bsbm-100.nt.gz", BSBM / "bsbm-1000-updates.nt.gz",
                           count=1, executors=["sql"])
    assert [r.query for r in rows] == bench_paper.queries_names()
    assert all(r.equal for r in rows), [(r.query, r.equal) for r in rows]
    assert all(r.view_rows > 0 and r.updates == 5 for r in rows), rows
    assert all(r.aux_rows >= 0 for r in rows)
    # every query's updates change the data (the stream's transactions are taken
    # out after each query: they once stayed, and the later queries timed nothing)
    assert all(n > 0 for r in rows for n in r.changed_by_update.values()), \
        [(r.query, r.changed_by_update) for r in rows]
    # the baseline is pyoxigraph's own work, timed per update; ours read as SPARQL JSON
    assert all(r.pyoxigraph_eval_ms > 0 and r.pyoxigraph_json_ms > 0 and r.read_json_ms > 0
               and r.pyoxigraph_by_update.keys() == r.by_update.keys() for r in rows), rows
    # one round: each kind's figure is its first round's
    assert all(r.first_by_update == r.by_update for r in rows), rows


@pytest.mark.skipif(not (BSBM / "bsbm-100.nt.gz").exists(), reason="BSBM data not in ../shared")
def test_paper_bsbm_runs_each_query_on_every_executor_in_turn(pg_server: str) -> None:
    """The executors compared run each query one after the other (note 199:
    run executor by executor, the first one's first programs met a cold
    JVM the others did not), each on its own pod, each equal to pyoxigraph."""
    rows = bench_paper.run(pg_server, BSBM / "bsbm-100.nt.gz", BSBM / "bsbm-1000-updates.nt.gz",
                           count=1, executors=["sql", "auto"], only=["Q1", "Q4"])
    assert [(r.query, r.executor) for r in rows] == [
        ("Q1", "sql"), ("Q1", "auto"), ("Q4", "sql"), ("Q4", "auto")]
    assert all(r.equal and r.view_rows > 0 for r in rows), rows


@pytest.mark.skipif(not (BSBM / "bsbm-100.nt.gz").exists(), reason="BSBM data not in ../shared")
def test_paper_bsbm_rounds_measure_each_update_kind_again(pg_server: str) -> None:
    """``--rounds``: the update sequence runs again after the stream's
    triples are taken out, the view equal to pyoxigraph after every update
    of every round; each kind is one figure (the median of its rounds), and
    its first round's figure is kept apart (the statement planned then)."""
    rows = bench_paper.run(pg_server, BSBM / "bsbm-100.nt.gz", BSBM / "bsbm-1000-updates.nt.gz",
                           count=2, executors=["sql"], only=["MIN/MAX"], rounds=2)
    assert [r.query for r in rows] == ["MIN/MAX"]
    row, = rows
    assert row.equal and row.view_rows > 0
    assert row.placement == "sql: one rendered statement per batch"
    assert row.updates == 6 and len(row.by_update) == 6
    assert row.first_by_update.keys() == row.by_update.keys()  # round 0 apart, per kind
    assert all(n > 0 for n in row.changed_by_update.values()), row.changed_by_update


@pytest.mark.skipif(not (BSBM / "bsbm-100.nt.gz").exists(), reason="BSBM data not in ../shared")
def test_paper_bsbm_on_spark_sets_the_delta_program_against_replacing(pg_server: str) -> None:
    """The path view of the paper's BSBM experiment on Spark, each update by
    the delta program (note 137: its ΔG is under 1% of the data) and by
    evaluate-and-replace: both equal pyoxigraph after every update, and the
    table sets them side by side per update kind."""
    rows = bench_paper.run(pg_server, BSBM / "bsbm-100.nt.gz", BSBM / "bsbm-1000-updates.nt.gz",
                           count=1, executors=["spark", "spark-replace"], only=["path §5.2.3"])
    assert [r.executor for r in rows] == ["spark", "spark-replace"]
    assert all(r.equal and r.view_rows > 0 for r in rows), rows
    kinds = bench_paper.spark_kinds(rows)
    assert [k.kind for k in kinds] == list(rows[0].by_update)
    assert all(0 < k.delta_fraction < 0.01 for k in kinds), kinds
    # the path view's state is large: the router runs the program, and the table says so
    assert all(k.ran == ("delta program" if rows[0].jobs_by_update[k.kind] else "no job")
               for k in kinds), kinds


@pytest.mark.skipif(not (BSBM / "bsbm-100.nt.gz").exists(), reason="BSBM data not in ../shared")
def test_a_scaled_bsbm_repeats_what_producers_vendors_and_sites_own() -> None:
    """``--scale 3``: three times the products, offers and reviews, over the
    same product types, features and vocabulary; copy 0 is the data itself."""
    from rdflib import RDF, URIRef

    from server.cli.load import read_triples

    base = read_triples(BSBM / "bsbm-100.nt.gz")
    big = bench_paper.scaled(base, 3)
    product = URIRef(bench_paper.VOCAB + "Product")
    feature = URIRef(bench_paper.VOCAB + "productFeature")

    def products(ts: Collection[tuple]) -> set[object]:
        return {s for s, p, o in ts if p == RDF.type and o == product}

    def features(ts: Collection[tuple]) -> set[object]:
        return {o for s, p, o in ts if p == feature}

    assert set(base) <= set(big)
    assert len(products(big)) == 3 * len(products(base)) > 0
    assert features(big) == features(base)
    assert {p for _, p, _ in big} == {p for _, p, _ in base}
    owned = [t for t in base if any(str(x).startswith(bench_paper.BSBM + "instances/dataFrom")
                                    for x in (t[0], t[2]))]
    assert len(big) == len(base) + 2 * len(owned)


def test_many_views_wakes_only_the_affected_views(pg_server: str) -> None:
    """An update of two views' predicates, among eight views, runs two views'
    jobs per update, and every view equals scratch."""
    row = bench_views.run(pg_server, views=8, touched=2, updates=2)
    assert row.equal
    assert row.jobs_per_update == 2


def test_benches_place_views_as_a_worker_does(pg_server: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A bench runs the router a worker runs with the same settings (note
    201): the many-views bench's small views, each a cheap statement, render
    as a worker's would (they ran with rendering off until session 54), and
    a setting the bench is run with reaches its router."""
    made: list[sa.URL] = []

    def recording(server_url: str, name: str) -> sa.Engine:
        engine = fresh_engine(server_url, name)
        made.append(engine.url)
        return engine

    monkeypatch.setattr(bench_views, "fresh_engine", recording)
    bench_views.run(pg_server, views=4, touched=4, updates=1)
    engine = sa.create_engine(made[-1])
    with engine.connect() as c:
        placed = c.execute(sa.text("SELECT placement FROM views")).scalars().all()
    engine.dispose()
    assert placed == [views_repo.RENDERED] * 4
    monkeypatch.setenv("PODVIEWS_SQL_RENDER_FROM_ROWS", "7")
    assert bench_router("sql").render_from_rows == 7
    assert bench_router("spark").mode == "spark"


def test_batch_lists_a_small_batchs_statements_on_each_path(pg_server: str) -> None:
    """The fixed cost of a small batch, per view and path: one job per
    update, its statements labelled (the rendered path runs its one
    statement; the interpreter writes the K-relation tables
    itself), and the views equal scratch."""
    rows = bench_batch.run(pg_server, updates=3, size=2)
    assert [(r.view, r.path) for r in rows] == [
        (v, p) for v in bench_batch.VIEWS for p in ("rendered", "interpreter")]
    assert all(r.equal and r.jobs == 3 for r in rows)
    for r in rows:
        listed = r.listed.split(", ")
        assert len(listed) == r.statements and listed[0].startswith("UPDATE jobs ")
        assert any(x.startswith("rendered ") for x in listed) == (r.path == "rendered")
        assert any(x.startswith("INSERT kr_") for x in listed) == (r.path == "interpreter")


def test_documents_read_back_every_type_as_the_files_graph(pg_server: str,
                                                           tmp_path: Path) -> None:
    """A stored document written in each type the server offers parses
    (pyoxigraph) back to the file's triples: blank nodes, escapes, language
    tags and datatypes included."""
    data = tmp_path / "odd.nt.gz"
    data.write_bytes(gzip.compress(
        '<http://ex/a> <http://ex/p> "quote \\" and\\nline" .\n'
        '<http://ex/a> <http://ex/p> "été"@fr .\n'
        '<http://ex/a> <http://ex/p> "1.50"^^<http://www.w3.org/2001/XMLSchema#decimal> .\n'
        '<http://ex/a> <http://ex/p> _:b .\n_:b <http://ex/q> _:c .\n_:c <http://ex/q> _:b .\n'
        '<http://ex/a> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> '
        '<http://www.w3.org/ns/ldp#Resource> .\n'.encode()))
    rows = bench_documents.run(pg_server, data)
    assert [r.media for r in rows] == ["text/turtle", "application/n-triples",
                                       "application/ld+json"]
    assert all(r.same and r.triples == 7 for r in rows)


def test_batch_labels_statements_by_what_they_write_or_read() -> None:
    assert bench_batch.label("UPDATE jobs SET a = 1 WHERE id = (SELECT id FROM jobs)") == \
        "UPDATE jobs"
    assert bench_batch.label("SELECT v.id, (SELECT count(*) FROM changes) FROM views v "
                             "WHERE v.id = 1 FOR UPDATE OF v SKIP LOCKED") == "SELECT views"
    assert bench_batch.label("SELECT id FROM jobs FOR NO KEY UPDATE SKIP LOCKED") == \
        "SELECT jobs"
    assert bench_batch.label("WITH l AS (SELECT 1 FROM view_changes), c AS "
                             "(DELETE FROM pg_temp.feed_captured) SELECT 1") == \
        "DELETE feed_captured"
    assert bench_batch.label("EXECUTE pv_1") == "EXECUTE"
    assert bench_batch.label("WITH d0 AS (SELECT t1.s AS v0 FROM pv_dg AS t1 WHERE t1.p = 7), "
                             "i AS (INSERT INTO kr_1 SELECT * FROM d0) SELECT 1") == "rendered"
    assert bench_batch.label("SET LOCAL jit = off") == "SET LOCAL jit"


def test_throughput_stream_leaves_every_view_equal_to_scratch(pg_server: str) -> None:
    """A short stream of PATCHes through a real server and worker process,
    from two writers at once (each its own document)."""
    row = bench_throughput.run(pg_server, patches=20, rate=20, size=8, writers=2)
    assert row.equal
    assert row.patches == 20 and row.writers == 2 and row.freshness_p50_ms > 0
    # where the cores went, read from /proc: every part did some work
    shares = (row.cpu_api_pct, row.cpu_workers_pct, row.cpu_postgres_pct, row.cpu_bench_pct)
    assert all(x is not None and x > 0 for x in shares), shares


def test_throughput_writers_write_disjoint_triples() -> None:
    """Two writers' PATCHes share no triple, so each writes ΔG of its own;
    a writer's PATCH deletes what its own PATCH 8 before inserted."""
    def lines(body: str, op: str) -> set[str]:
        block = body.split(op, 1)[1].split("}", 1)[0].strip(" {")
        return {t.strip() for t in block.split(" . ") if t.strip()}
    first, second = bench_throughput._patch(9, 8, 0), bench_throughput._patch(9, 8, 1)
    assert lines(first, "INSERT DATA").isdisjoint(lines(second, "INSERT DATA"))
    assert lines(second, "DELETE DATA") == lines(bench_throughput._patch(1, 8, 1), "INSERT DATA")


def test_live_subscribers_get_every_write_once_in_order(pg_server: str) -> None:
    """Three SSE subscribers (read by the bench's own stream parser) and a
    short stream of PATCHes through a real server and worker process: each
    subscriber gets increasing seqs up to the last write's."""
    row = bench_live.run(pg_server, [3], writes=20, rate=20)[0]
    assert row.complete
    assert row.subscribers == 3 and 1 <= row.events_per_subscriber <= 20
    assert row.latency_p50_ms > 0
    # the server's own fan-out time, from its /metrics: a delivery by the view's writer
    # takes some; a stream behind the view (a starved API) reads itself and adds none
    assert row.server_deliveries >= 0 and (row.server_fanout_ms > 0) == (row.server_deliveries > 0)

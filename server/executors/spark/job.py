"""The Spark executor: runs a view's Spark plan (``server.executors.spark.render``) as a
job, for the work the router gives it (the view's input is large:
backfills, consent of a whole pod, large batches, verification).

A job evaluates every stateful node of the view's program on G' — the same
node DAG the SQL executor maintains — and the worker replaces each node's
K-relation by the difference (``storage.stage``). With ΔG comparable to G that
is what the delta program costs anyway, and it reads nothing but the input
graph and the dictionary. Inputs come from Postgres over JDBC in the job's
own snapshot (exported by the worker's transaction and imported by every
Spark connection), so Spark sees exactly the change-log prefix the job's
watermark names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from server.executors.spark.config import SparkConfig
from server.executors.spark.render import DataFrame, Evaluator, Frames, col
from server.executors.spark.session import session
from views.plan import Plan

# ------------------------------------------------------------ one job


def refresh(conn: Any, view: int, plan: Plan, pods: list[int], cfg: SparkConfig,
            dry_run: bool = False, progress: Callable[[int, int], None] | None = None) -> int:
    """Evaluate the view's nodes on its pods' graph (as the job's snapshot
    holds it) and make the stored K-relations equal; the number of rows that
    changed. ``dry_run`` (verification) rolls the merge back."""
    from sqlalchemy import text

    from storage import stage
    from storage.codec import Codec

    spark = session(cfg)
    snapshot = conn.execute(text("SELECT pg_export_snapshot()")).scalar_one()
    top = int(conn.execute(text("SELECT coalesce(max(id), 1) FROM terms")).scalar_one())
    read = _reader(spark, conn.engine.url, snapshot, top)
    pod_list = ",".join(str(int(p)) for p in pods) or "NULL"
    triples = read(f"SELECT DISTINCT s, p, o FROM pod_triples WHERE pod_id IN ({pod_list})",
                   "s").persist()
    terms = read("SELECT id, kind, lexical, datatype, lang, digest FROM terms", "id")
    codec = Codec(conn)
    ev = Evaluator(spark, triples, terms, lambda ts: codec.encode(ts, add=False))
    try:
        outputs = ev.run(plan)
        if progress:
            progress(1, 3)
        width = max((len(s) for frames in outputs.values() for s in frames), default=0)
        rows = _staged(ev, outputs, width).toArrow()
        provisional = [(r.id, r.kind, r.lexical, r.datatype, r.lang)
                       for r in (ev.extra.collect() if ev.extra is not None else [])]
    finally:
        triples.unpersist()
    if progress:
        progress(2, 3)
    savepoint = conn.begin_nested() if dry_run else None
    stage.load(conn, width, _csv(rows))
    mapped = stage.map_provisional(conn, codec, provisional)
    changed = stage.merge(conn, view, outputs, mapped)
    if savepoint is not None:
        savepoint.rollback()
    if progress:
        progress(3, 3)
    return changed


def _reader(spark: Any, url: Any, snapshot: str, top: int) -> Callable[[str, str | None], DataFrame]:
    """JDBC reads in the job's snapshot."""
    jdbc = f"jdbc:postgresql://{url.host or '127.0.0.1'}:{url.port or 5432}/{url.database}"
    init = f"BEGIN ISOLATION LEVEL REPEATABLE READ; SET TRANSACTION SNAPSHOT '{snapshot}'"
    parts = max(1, spark.sparkContext.defaultParallelism)

    def read(query: str, column: str | None) -> DataFrame:
        """``query``'s rows, split over ranges of the term id ``column`` (None: one read)."""
        r = (spark.read.format("jdbc").option("url", jdbc)
             .option("driver", "org.postgresql.Driver")
             .option("user", url.username or "postgres").option("password", url.password or "")
             .option("dbtable", f"({query}) q").option("sessionInitStatement", init)
             .option("fetchsize", "10000"))
        if column is not None:
            r = (r.option("partitionColumn", column).option("lowerBound", "1")
                 .option("upperBound", str(top + 1)).option("numPartitions", str(parts)))
        return r.load()

    return read


def _staged(ev: Evaluator, outputs: dict[str, Frames], width: int) -> DataFrame:
    """Every node's rows in the staging layout: node, schema, c0…, k."""
    from storage.krel import column_names, schema_key

    F = ev.F
    parts = []
    for node, frames in outputs.items():
        for s, df in frames.items():
            names = sorted(s)
            staged = column_names(range(width))
            cols = [F.col(col(v)).alias(staged[j]) for j, v in enumerate(names)]
            cols += [F.lit(None).cast("long").alias(c) for c in staged[len(names):]]
            parts.append(df.select(F.lit(node).alias("node"),
                                   F.lit(schema_key(s)).alias("schema"), *cols, "k"))
    out = ev.spark.createDataFrame([], ", ".join(
        ["node string", "schema string", *[f"{c} long" for c in column_names(range(width))],
         "k long"]))
    for p in parts:
        out = out.unionByName(p)
    return out


def _csv(table: Any) -> bytes:
    import io

    import pyarrow.csv as pacsv

    buf = io.BytesIO()
    pacsv.write_csv(table, buf)
    return buf.getvalue()

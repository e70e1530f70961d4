"""The counting algorithm on Spark: a batch maintained by the view's delta
program (the SQL executor's rendering, ``server.executors.sql.render.deltas``,
in Spark SQL's dialect) instead of every node evaluated and replaced
(``server.executors.spark.job``).

ΔG is staged in the job's transaction as on SQL (``pv_dg``) and shipped to
Spark from the worker; the pods' triples (only the view's predicates when
its patterns name them all) and the stored node tables the program reads
come over JDBC in the job's exported snapshot. Spark computes every stored
node's ΔQ; the rows come back as Arrow, are staged and added to the
K-relations by one statement of the job's transaction
(``render.merge_staged``: the upserts the rendered SQL statement makes) — ΔV
out, merged by the worker, as the issue's design asks.

What it reads is the program's inputs, not only the rows ΔG joins with: the
whole of each table it names. A semi-join pushed to Postgres (the state
rows ΔG can reach) is the next step (design note 137).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, text

from server.executors.spark.config import SparkConfig
from server.executors.spark.job import _csv, _reader
from server.executors.spark.session import interpreted, session
from server.executors.sql import exprs
from server.executors.sql import render as R
from server.executors.sql import run as rendered
from storage import krel, stage
from views import algebra as A
from views import plan as P


def maintain(conn: Connection, view: int, plan: P.Plan, tables: dict[str, krel.NodeTables],
             pods: list[int], after: int, upto: int, predicates: list[int] | None,
             cfg: SparkConfig, max_rows: int | None = None) -> tuple[int, int]:
    """Apply the changes of ``pods`` in (after, upto] to the view's state
    through Spark: the change in stored rows, and ΔG's size."""
    had = {name for by_schema in tables.values() for name, _ in by_schema.values()}
    batch = rendered.staged_batch(conn, view, plan, tables, pods, after, upto, predicates)
    if batch is None:
        return 0, 0
    known, size = batch
    program = R.deltas(plan, tables, len(pods), known)
    if program is None:
        return 0, size
    rows = _run(conn, program, tables, had, pods, _predicates(plan, known.ids), cfg)
    if rows.num_rows == 0:
        return 0, size
    width = rows.num_columns - 2
    staging = rows.add_column(1, "schema", _strings(rows.num_rows)).rename_columns(
        ["node", "schema", *krel.column_names(range(width)), "k"])
    stage.load(conn, width, _csv(staging))
    grown, largest, _ = conn.execute(text(R.merge_staged(plan, tables, program.nodes,
                                                         stage.STAGE))).one()
    rendered.within(largest, max_rows)
    return int(grown), size


def _run(conn: Connection, program: R.Program, tables: dict[str, krel.NodeTables],
         had: set[str], pods: list[int], predicates: list[int] | None, cfg: SparkConfig) -> Any:
    """The program's rows (Arrow): its inputs registered as Spark views, each
    step a cached view read by name by the next (one query of them all
    took Spark's planner minutes), all dropped after. Tables not in ``had``
    were created by this job, invisible in its exported snapshot: empty."""
    in_pods = f"IN ({', '.join(str(int(p)) for p in pods)})"  # the SQL's pods parameter
    steps = [(name, body.replace(f"= ANY({R.PODS})", in_pods)) for name, body in program.steps]
    sql = " ".join(body for _, body in steps)
    spark = session(cfg)
    snapshot = conn.execute(text("SELECT pg_export_snapshot()")).scalar_one()
    top = int(conn.execute(text("SELECT coalesce(max(id), 1) FROM terms")).scalar_one())
    read = _reader(spark, conn.engine.url, snapshot, top)
    dg = conn.execute(text(f"SELECT s, p, o, sign FROM {R.DG}")).all()
    views: dict[str, Any] = {
        R.DG: spark.createDataFrame([tuple(r) for r in dg], "s long, p long, o long, sign int"),
        "pod_triples": read(
            f"SELECT pod_id, s, p, o FROM pod_triples WHERE pod_id {in_pods}"
            + (f" AND p IN ({', '.join(map(str, predicates)) or 'NULL'})"
               if predicates is not None else ""), "s")}
    for name, query in exprs.spark_tables(sql).items():  # numeric comparisons' answers
        views[name] = read(query, "id")
    for by_schema in tables.values():
        for name, variables in by_schema.values():
            if f"`{name}`" not in sql:
                continue
            views[name] = read(f'SELECT * FROM "{name}"', None) if name in had else \
                spark.createDataFrame([], ", ".join(
                    [f"{c} {'boolean' if c == 'unit' else 'long'}"
                     for c in krel.key_columns(variables)] + ["k long"]))
    cached = []
    try:
        for name, frame in views.items():  # read once: the program names each many times
            if name != R.DG:
                frame = frame.persist()
                cached.append(frame)
            frame.createOrReplaceTempView(name)
        with interpreted(spark):
            for name, body in steps:
                frame = spark.sql(body).cache()
                cached.append(frame)
                frame.createOrReplaceTempView(name)
                views[name] = frame
            return spark.sql(program.query).toArrow()
    finally:
        for name in views:
            spark.catalog.dropTempView(name)
        for frame in cached:
            frame.unpersist()


def _predicates(plan: P.Plan, ids: dict[Any, int]) -> list[int] | None:
    """The ids of the predicates the plan's triple patterns (an EXISTS's
    among them) name, or None when one is a variable: the only triples of
    the pods the program can read."""
    found: set[int] = set()
    for n in plan.nodes:
        patterns = list(n.triples) if isinstance(n, P.Scan) else []
        e = getattr(n, "expr", None)
        if e is not None and (inner := R.exists_of(e)) is not None:
            patterns += inner[0].triples
        for tp in patterns:
            if A.is_var(tp.p):
                return None
            if tp.p in ids:
                found.add(ids[tp.p])
    return sorted(found)


def _strings(n: int) -> Any:
    import pyarrow as pa

    return pa.array([""] * n, pa.string())

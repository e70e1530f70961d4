"""The counting algorithm on Spark: a batch maintained by the view's delta
program (the SQL executor's rendering, ``server.executors.sql.render.deltas``,
in Spark SQL's dialect) instead of every node evaluated and replaced
(``server.executors.spark.job``).

ΔG is staged in the job's transaction as on SQL (``pv_dg``) and shipped to
Spark from the worker. Spark computes every stored node's ΔQ; the rows come
back as Arrow, are staged and added to the K-relations by one statement of
the job's transaction (``render.finish``: the upserts the rendered SQL
statement makes) — ΔV out, merged by the worker, as the issue's design asks.
A group's aggregates are terms Postgres looks up in, or adds to, its
dictionary: the program leaves groups, and the nodes above them, to that
statement, which computes them from the rows Spark gives their inputs
(``render.deferred``, design note 195).

What the program reads of the graph (design note 175):
- what the batch's keys reach (``pv_reach``, ``render.reach``), for its
  stars and, in a partitioned plan, for every read — or, where every BGP is
  chained from constant subjects, what those reach (``render.anchors``,
  note 194): a semi-join Postgres answers over the staged ΔG, handed to
  Spark as a local relation; a partitioned plan's (but where a DISTINCT
  drops its centre) and the latter's are evaluated over it in G and in
  G' at once, their stored nodes' ΔQ the net (``dual``, note 198);
- where another rule reads the graph by other keys (an EXISTS, a join on
  another variable), the pods' triples of the view's predicates too, over
  JDBC in the job's exported snapshot (design note 137).
A program that reads by keys only gets the numeric answers and the stored
tables the same way (JDBC past ``SHIPPED`` rows); with every input handed
over, it runs step by step, each step read twice or more handed back as a
local relation of its rows, one read once inlined into its reader
(``_stepwise``); otherwise a program small once its CTEs are inlined runs
as one query, a larger one step by step, cached (``_execute``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
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
             tallies: dict[str, str], pods: list[int], after: int, upto: int,
             predicates: list[int] | None, cfg: SparkConfig, max_rows: int | None = None,
             graph_rows: float | None = None) -> tuple[int, int]:
    """Apply the changes of ``pods`` in (after, upto] to the view's state
    through Spark: the change in stored rows, and ΔG's size. The nodes the
    program leaves to Postgres (its groups and what reads them,
    ``render.deferred``) are computed by the statement merging its rows,
    reading their inputs' old rows by index probes where ΔG is small
    beside the graph (``graph_rows``, ``rendered.probed``), as on SQL."""
    had = {name for by_schema in tables.values() for name, _ in by_schema.values()}
    batch = rendered.staged_batch(conn, view, plan, tables, tallies, pods, after, upto,
                                  predicates)
    if batch is None:
        return 0, 0
    known, size = batch
    program = R.deltas(plan, tables, len(pods), known)
    if program is None:
        return 0, size
    rows = _run(conn, program, tables, had, pods, _predicates(plan, known.ids), cfg)
    if rows.num_rows == 0 and not program.later:
        return 0, size
    staging = rows.add_column(1, "schema", _strings(rows.num_rows)).rename_columns(
        ["node", "schema", *krel.column_names(range(program.width)), "k"])
    stage.load(conn, program.width, _csv(staging))
    known = dataclasses.replace(known, probe=rendered.probed(size, graph_rows))
    sql = R.finish(plan, tables, len(pods), known, program.nodes, stage.STAGE)
    if sql is None:
        return 0, size
    found = rendered.applied(conn, sql, pods, True, {})
    rendered.within(found.largest, max_rows)
    return int(found.grown), size


def _run(conn: Connection, program: R.Program, tables: dict[str, krel.NodeTables],
         had: set[str], pods: list[int], predicates: list[int] | None, cfg: SparkConfig) -> Any:
    """The program's rows (Arrow); none, and no Spark job, where it
    computes no node or is ``closed`` and none of the triples it reaches
    changed. Tables not in ``had`` were created by this job, invisible in
    its exported snapshot: empty."""
    if not program.nodes:
        return _no_rows(program.width)
    reached = None if program.reach is None else conn.execute(
        text(with_pods(program.reach, pods))).all()  # the triples the keys reach, this snapshot
    if program.closed and all(kn == ko for *_, kn, ko in reached or ()):
        return _no_rows(program.width)
    steps = [(name, with_pods(body, pods)) for name, body in program.steps]
    sql = " ".join(body for _, body in steps)
    spark = session(cfg)
    views: dict[str, Any] = {R.DG: _shipped(spark, conn, f"SELECT s, p, o, sign FROM {R.DG}",
                                            ["s", "p", "o", "sign"])}
    jdbc: list[Any] = []

    def read(query: str, column: str | None) -> Any:
        """Over JDBC in the job's exported snapshot."""
        if not jdbc:
            snapshot = conn.execute(text("SELECT pg_export_snapshot()")).scalar_one()
            top = int(conn.execute(text("SELECT coalesce(max(id), 1) FROM terms")).scalar_one())
            jdbc.append(_reader(spark, conn.engine.url, snapshot, top))
        return jdbc[0](query, column)

    def small(query: str, columns: list[str], column: str | None) -> Any:
        """Handed over by the job where the program reads by keys (then it is
        small, or read over JDBC past ``SHIPPED`` rows), else over JDBC."""
        if not program.whole:
            frame = _shipped(spark, conn, f"SELECT {', '.join(columns)} FROM ({query}) q "
                                          f"LIMIT {SHIPPED + 1}", columns, SHIPPED)
            if frame is not None:
                return frame
        return read(query, column)

    if reached is not None:
        views[R.REACH] = _local(spark, ["s", "p", "o", "kn", "ko"], reached)
    if program.whole:
        views["pod_triples"] = read(
            f"SELECT pod_id, s, p, o FROM pod_triples WHERE pod_id {in_pods(pods)}"
            + (f" AND p IN ({', '.join(map(str, predicates)) or 'NULL'})"
               if predicates is not None else ""), "s")
    for name, query in exprs.spark_tables(sql).items():  # numeric comparisons' answers
        views[name] = small(query, ["id", "holds"], "id")
    for name, variables in _named(tables, sql):
        views[name] = small(f'SELECT * FROM "{name}"', [*krel.key_columns(variables), "k"],
                            None) if name in had else _empty(spark, variables)
    return _execute(spark, views, steps, program.query, local=not jdbc)


def with_pods(sql: str, pods: list[int]) -> str:
    """The program's SQL with its pods parameter written in."""
    return sql.replace(f"= ANY({R.PODS})", in_pods(pods))


def in_pods(pods: list[int]) -> str:
    return f"IN ({', '.join(str(int(p)) for p in pods)})"


FUSED = 64  # the most relations a program may name, once its CTEs are inlined, to run as one query


def _execute(spark: Any, views: dict[str, Any], steps: list[tuple[str, str]],
             query: str, local: bool) -> Any:
    """The rows of ``query`` after ``steps``, over ``views`` (registered as
    Spark views, dropped after). Where every input is ``local`` (handed
    over by the job: the program reads by keys, each input at most
    ``SHIPPED`` rows), by ``_stepwise``. Otherwise a program that stays
    small once Spark inlines its CTEs (``inlined``) runs as one query, one
    Spark job (note 175); a larger one step by step, each step a cached
    view read by name by the next, its inputs cached (one query of a
    large program took Spark's planner minutes, note 137)."""
    cached = []
    try:
        fused = not local and inlined(steps, query) <= FUSED
        cache = not local and not fused  # its steps, and its inputs, in Spark's cache
        for name, frame in views.items():  # read once: the program names each many times
            if cache and name != R.DG:
                frame = frame.persist()
                cached.append(frame)
            frame.createOrReplaceTempView(name)
        with interpreted(spark):
            if local:
                return _stepwise(spark, views, steps, query)
            if fused:
                return spark.sql(_with(steps, query)).toArrow()
            for name, body in steps:
                frame = spark.sql(body).cache()
                cached.append(frame)
                frame.createOrReplaceTempView(name)
                views[name] = frame
            return spark.sql(query).toArrow()
    finally:
        # dependents first: dropping a cached relation makes Spark re-plan every
        # cached relation that reads it and is not yet loaded (design note 193)
        for frame in reversed(cached):
            frame.unpersist()
        for name in views:
            spark.catalog.dropTempView(name)


def _stepwise(spark: Any, views: dict[str, Any], steps: list[tuple[str, str]],
              query: str) -> Any:
    """The rows of ``query`` after ``steps`` over handed-over inputs: each
    step read by two or more of the later steps and the query computed at
    once and handed back as a local relation of its rows (registered in
    ``views``), so the plans reading it read an input of known, small size
    and it is computed once (design note 194); a step read once inlined (a
    CTE) into the one that reads it, which repeats nothing and saves a
    Spark job (note 195: Q2's 21 jobs 12, the path view's 4 one)."""
    texts = [body for _, body in steps] + [query]
    reads = {name: sum(_names(name, t) for t in texts) for name, _ in steps}
    pending: dict[str, str] = {}  # the steps read once, not yet inlined into their reader
    for name, body in steps:
        if reads[name] == 1:
            pending[name] = body
            continue
        frame = spark.createDataFrame(spark.sql(_with(_taken(pending, body), body)).toArrow())
        frame.createOrReplaceTempView(name)
        views[name] = frame
    return spark.sql(_with(_taken(pending, query), query)).toArrow()


def _taken(pending: dict[str, str], body: str) -> list[tuple[str, str]]:
    """The steps of ``pending`` that ``body`` reads, directly or through
    one another, in their order, taken out of it (each is read once)."""
    needed: set[str] = set()
    todo = [body]
    while todo:
        text = todo.pop()
        for name, inner in pending.items():
            if name not in needed and _names(name, text):
                needed.add(name)
                todo.append(inner)
    return [(name, pending.pop(name)) for name in list(pending) if name in needed]


def _with(steps: Sequence[tuple[str, str]], query: str) -> str:
    """``query`` after ``steps`` as its CTEs."""
    if not steps:
        return query
    return f"WITH {', '.join(f'{n} AS ({b})' for n, b in steps)} {query}"


def _names(step: str, body: str) -> int:
    """How many times ``body`` names the relation ``step``."""
    return len(re.findall(rf"\b{re.escape(step)}\b", body))


def inlined(steps: list[tuple[str, str]], query: str) -> int:
    """How many relations ``query`` reads once every step it names (a CTE)
    is inlined where it is named, as Spark's planner does: a step named
    twice counts twice."""
    size: dict[str, int] = {}
    for name, body in [*steps, ("", query)]:
        size[name] = 1 + sum(n * _names(step, body) for step, n in size.items())
    return size[""] - 1


SHIPPED = 100_000  # rows a stored table may have to be handed to Spark by the job


def _shipped(spark: Any, conn: Connection, query: str, columns: list[str],
             most: int | None = None) -> Any:
    """``query``'s rows (Postgres, the job's connection) as a Spark local
    relation (``_local``: no Python worker, its size known to the planner);
    None when there are more than ``most``."""
    rows = conn.execute(text(query)).all()
    if most is not None and len(rows) > most:
        return None
    return _local(spark, columns, rows)


def _local(spark: Any, columns: list[str], rows: Sequence[Sequence[Any]]) -> Any:
    """``rows`` as a Spark local relation (Arrow): term ids and counts as
    longs, ``holds`` and ``unit`` as booleans, ΔG's ``sign`` as an int."""
    import pyarrow as pa

    types = {"holds": pa.bool_(), "unit": pa.bool_(), "sign": pa.int32()}
    values = list(zip(*rows)) if rows else [()] * len(columns)
    return spark.createDataFrame(pa.table({c: pa.array(v, types.get(c, pa.int64()))
                                           for c, v in zip(columns, values)}))


def _named(tables: dict[str, krel.NodeTables], sql: str) -> list[tuple[str, list[str]]]:
    """The stored nodes' tables ``sql`` names, with their variables."""
    return [(name, variables) for by_schema in tables.values()
            for name, variables in by_schema.values() if f"`{name}`" in sql]


def _empty(spark: Any, variables: list[str]) -> Any:
    """A stored table this job created: no rows (invisible in its snapshot)."""
    return _local(spark, [*krel.key_columns(variables), "k"], [])


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


def _no_rows(width: int) -> Any:
    """The rows of a program Spark has nothing to compute for (its
    deferred nodes' inputs unchanged): none, in its rows' columns."""
    import pyarrow as pa

    return pa.table({name: pa.array([], pa.string() if name == "node" else pa.int64())
                     for name in ["node", *(f"v{i}" for i in range(width)), "k"]})


def _strings(n: int) -> Any:
    import pyarrow as pa

    return pa.array([""] * n, pa.string())

"""A new SparkSession warmed by the delta programs it will run.

A session's first delta programs ran 2–10× slower than the same programs
later in the process (the JVM loading Spark's classes and compiling its
planner and its operators as they first run), and the first program of any
shape paid most of it: on paper-bsbm's one-round table the process's first
program (Q1's delete) lost to evaluate-and-replace, which ran after it, warm
(design note 199). So a session runs a few programs first, each our
renderer's delta program of a small query (a star under a numeric filter,
one chained from constant subjects, OPTIONALs with a filter, a DISTINCT
union) over relations of a few tens of made-up ids, handed over as a job's
are, their rows thrown away. Nothing of a pod is read."""

from __future__ import annotations

import logging
import time
from typing import Any

from server.executors.spark import delta as D
from server.executors.sql import exprs
from server.executors.sql import render as R
from storage import krel
from views.compile import compile_query

log = logging.getLogger("podviews.spark")

_P = "PREFIX : <urn:podviews:warm:> "
PROGRAMS = (
    _P + "SELECT ?x ?l ?n WHERE { ?x :label ?l . ?x :type :T . ?x :feature :F . ?x :num ?n "
         "FILTER(?n > 5) }",
    _P + "SELECT * WHERE { :a :p ?y . ?y :q ?z . :a :r ?w OPTIONAL { :b :q ?t } "
         "MINUS { :c :p ?y } }",
    _P + "SELECT * WHERE { ?x :p ?y OPTIONAL { ?x :q ?a } OPTIONAL { ?x :r ?b } "
         "FILTER(?y != ?x) }",
    _P + "SELECT DISTINCT ?x ?y WHERE { { ?x :p ?y } UNION { ?x :q ?y } }",
)
_SUBJECTS = (1_001, 1_002, 1_003)  # made-up ids beside the constants'


def warm(spark: Any) -> float:
    """Run ``PROGRAMS`` on ``spark``; the seconds it took. A program that
    fails is logged and skipped: warming never stops a session."""
    started = time.perf_counter()
    for text in PROGRAMS:
        try:
            run(spark, text)
        except Exception:  # only a warm-up: a real job reports its own failures
            log.exception("warming the Spark session with %r failed", text)
    return time.perf_counter() - started


def run(spark: Any, text: str) -> int:
    """``text``'s delta program run over made-up inputs: the rows it gave."""
    plan = compile_query(text).plan
    # the constants' made-up ids: 1, 2, …
    ids = {t: i for i, t in enumerate(sorted(R.constants(plan), key=str), 1)}
    tables = R.stand_ins(plan)
    program = R.deltas(plan, tables, 1, R.Known(ids))
    assert program is not None, "a warm-up query's program computes its nodes"
    return int(D._execute(spark, inputs(spark, program, tables, sorted(ids.values())),
                          [(name, D.with_pods(body, [1])) for name, body in program.steps],
                          program.query, local=True).num_rows)


def inputs(spark: Any, program: R.Program, tables: dict[str, krel.NodeTables],
           constants: list[int]) -> dict[str, Any]:
    """What a job hands the program (``delta._run``), made up: ΔG inserting
    every triple of a constant as predicate, ``_SUBJECTS`` or the constants
    as subject and object, the same triples as those the keys reach (new in
    G'), the numeric answers true of every id, a row in each stored table."""
    nodes = (*_SUBJECTS, *constants)
    dg = [(s, p, o, 1) for s in nodes for p in constants for o in nodes]
    views = {R.DG: D._local(spark, ["s", "p", "o", "sign"], dg)}
    if program.reach is not None:
        views[R.REACH] = D._local(spark, ["s", "p", "o", "kn", "ko"],
                                  [(s, p, o, 1, 0) for s, p, o, _ in dg])
    if program.whole:
        views["pod_triples"] = D._local(spark, ["pod_id", "s", "p", "o"],
                                        [(1, s, p, o) for s, p, o, _ in dg])
    sql = " ".join(body for _, body in program.steps)
    for name in exprs.spark_tables(sql):
        views[name] = D._local(spark, ["id", "holds"],
                               [(i, True) for i in [*constants, *_SUBJECTS]])
    for name, variables in D._named(tables, sql):
        columns = [*krel.key_columns(variables), "k"]
        views[name] = D._local(spark, columns, [(_SUBJECTS[0],) * (len(columns) - 1) + (1,)])
    return views

"""The process's SparkSession."""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from server.executors.spark.config import SparkConfig

_NO_CODEGEN = {"spark.sql.codegen.factoryMode": "NO_CODEGEN",
               "spark.sql.codegen.wholeStage": "false",
               "spark.sql.adaptive.enabled": "false"}


_session: Any = None
_making = threading.Lock()  # a worker makes its session ahead of its first job (``start``)
log = logging.getLogger("podviews.spark")


@contextmanager
def interpreted(spark: Any) -> Iterator[None]:
    """Queries run without generated code while inside (runtime settings,
    put back after): the delta program's inputs are ΔG and the rows it
    reaches, where compiling each plan cost more than it saved (note 150)."""
    before = {key: spark.conf.get(key, None) for key in _NO_CODEGEN}
    for key, value in _NO_CODEGEN.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def session(cfg: SparkConfig) -> Any:
    """The process's SparkSession (cold start 5–8 s, MEASURED.md), made once
    and warmed (``warm``: a few seconds more, design note 199)."""
    with _making:
        if _session is None:
            _make(cfg)
    return _session


def start(cfg: SparkConfig) -> threading.Thread:
    """The session made and warmed on a thread of its own, so that a
    worker's first job finds it ready; a job that comes first waits for it."""
    thread = threading.Thread(target=_started, args=(cfg,), name="spark-session", daemon=True)
    thread.start()
    return thread


def _started(cfg: SparkConfig) -> None:
    try:
        session(cfg)
    except Exception:  # the first job that needs it tries again and fails with the reason
        log.exception("making the Spark session failed")


def _make(cfg: SparkConfig) -> None:
    """The session, then warmed (under ``_making``)."""
    global _session
    if not os.path.exists(cfg.jdbc_jar):
        raise RuntimeError(f"the Spark executor needs the Postgres JDBC driver at "
                           f"{cfg.jdbc_jar} (Debian: libpostgresql-jdbc-java)")
    if cfg.master.startswith("local"):  # a cluster's executors must reach the driver
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    for key, value in ({} if cfg.codegen else _NO_CODEGEN).items():
        builder = builder.config(key, value)
    _session = (builder.master(cfg.master).appName("podviews")
                .config("spark.jars", cfg.jdbc_jar)
                .config("spark.sql.shuffle.partitions", str(cfg.shuffle_partitions))
                .config("spark.driver.memory", cfg.driver_memory)
                .config("spark.buffer.pageSize", cfg.page_size)
                .config("spark.sql.maxPlanStringLength", "100000")
                # a UNION ALL of a 2-partition and a 4-partition input claimed
                # their partitioning and failed ("Can't zip RDDs with unequal
                # numbers of partitions", the delta program's old graph: note 137)
                .config("spark.sql.unionOutputPartitioning", "false")
                # and the optimizer's constraints of such a union lost an attribute
                # ("key not found: s#…" in UnionBase.rewriteConstraints)
                .config("spark.sql.constraintPropagation.enabled", "false")
                .config("spark.cleaner.periodicGC.interval", "5min")
                .config("spark.ui.enabled", "false")
                .config("spark.ui.showConsoleProgress", "false")
                .getOrCreate())
    _session.sparkContext.setLogLevel("ERROR")
    from server.executors.spark.warm import warm

    log.info("Spark session warmed in %.1f s", warm(_session))

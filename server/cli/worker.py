"""``podviews worker``: run maintenance jobs until SIGTERM."""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from typing import Any

from server.cli.common import DB_HELP, database, settings


def add(sub: Any) -> None:
    worker = sub.add_parser("worker", help="run maintenance jobs until SIGTERM")
    worker.add_argument("--database-url", default=None, help=DB_HELP)
    worker.add_argument("--executor", choices=("sql", "spark", "auto"), default=None,
                        help="executor of every job, or auto: Spark from --spark-threshold "
                             "triples of work [PODVIEWS_EXECUTOR, default auto]")
    worker.add_argument("--spark-master", default=None,
                        help="Spark master URL [PODVIEWS_SPARK_MASTER, default local[*]]")
    worker.add_argument("--spark-threshold", type=int, default=None,
                        help="triples of work from which auto picks Spark "
                             "[PODVIEWS_SPARK_THRESHOLD, default 100000]")
    worker.add_argument("--spark-delta-below", type=float, default=None,
                        help="on Spark, batches under this fraction of the view's input run "
                             "the delta program, larger ones evaluate and replace "
                             "[PODVIEWS_SPARK_DELTA_BELOW, default 0.05]")
    worker.add_argument("--sql-render", action=argparse.BooleanOptionalAction, default=None,
                        help="SQL executor: maintain a batch of a view whose plan renders "
                             "by one SQL statement, not the interpreter "
                             "[PODVIEWS_SQL_RENDER, default false]")
    worker.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    stop = threading.Event()  # set before the heavy imports: a SIGTERM then stops cleanly
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    from server.cli.supervise import die_with_parent
    from server.maintenance.worker import run as work

    die_with_parent()

    with database(args) as url:
        logging.basicConfig(level=logging.INFO)
        config = settings(args)
        work(url, stop=stop, router=config.router(), limits=config.limits(),
             base=config.pods_base)
    return 0

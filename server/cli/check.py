"""``podviews check``: correctness checks — the W3C SPARQL 1.1 suite
(in memory or through the pipeline) and every view against scratch."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from server.cli.common import DB_HELP, database, settings


def add(sub: Any) -> None:
    check = sub.add_parser("check", help="correctness checks")
    check_sub = check.add_subparsers(dest="check", required=True)
    w3c = check_sub.add_parser("w3c", help="run the W3C SPARQL 1.1 query evaluation tests")
    w3c.add_argument("dir", type=Path, help="folder of the W3C test suite (manifests below it)")
    w3c.add_argument("--mode", choices=("scratch", "incremental"), default="incremental")
    w3c.add_argument("--seed", type=int, default=0, help="seed of the random batch streams")
    w3c.add_argument("--json", action="store_true", help="print one JSON document")
    w3c.add_argument("--executor", choices=("memory", "sql", "spark"), default="memory",
                     help="memory: the engine in process; sql, spark: through the pipeline, "
                          "view state in Postgres, every job on that executor")
    w3c.add_argument("--database-url", default=None,
                     help="database for --executor sql|spark [PODVIEWS_DATABASE_URL]; "
                          "default: embedded")
    w3c.set_defaults(run=run_w3c)
    consistency = check_sub.add_parser(
        "consistency", help="recompute every view from scratch and report any drift")
    consistency.add_argument("--database-url", default=None, help=DB_HELP)
    consistency.add_argument("--wait", type=float, default=120.0,
                             help="seconds to wait for views with jobs queued or running to "
                                  "catch up before comparing (default 120)")
    consistency.set_defaults(run=run_consistency)


def run_consistency(args: argparse.Namespace) -> int:
    """Every ready view against scratch, in one snapshot, once no view has
    jobs queued or running (a worker catching up with writes is not drift),
    or after ``--wait`` seconds: a view still behind then is named and fails
    the check, not compared."""
    import time

    import sqlalchemy as sa

    from server.maintenance.verify import behind, consistency
    from storage import views_repo
    from storage.catalog import snapshot

    with database(args) as url:
        engine = sa.create_engine(url)
        deadline = time.monotonic() + args.wait
        while time.monotonic() < deadline:
            with engine.connect() as conn:
                if not behind(conn):
                    break
            time.sleep(0.2)
        with snapshot(engine) as conn:
            report = consistency(conn, settings(args).pods_base)
            pending = {view: views_repo.pending(row.unfinished) for view, _, differ in report
                       if differ is None and (row := views_repo.view_row(conn, view)) is not None}
        engine.dispose()
    for view, name, differ in report:
        state = ("behind its pods' writes (jobs to run): not compared" if differ is None
                 else f"{differ} mappings drifted" if differ else "ok")
        print(f"view {view} ({name}): {state}")
        for j in pending.get(view, []):  # why it is behind: its jobs, their last errors
            print(f"  job {j.kind} {j.status}" + (f": {j.last_error}" if j.last_error else ""))
    drifted = sum(1 for *_, d in report if d)
    late = sum(1 for *_, d in report if d is None)
    print(f"{len(report) - drifted - late} consistent, {drifted} drifted"
          + (f", {late} behind after {args.wait:g} s" if late else ""))
    return 1 if drifted or late else 0


def run_w3c(args: argparse.Namespace) -> int:
    from server.tools import w3c

    if args.executor == "memory":
        report = w3c.run(args.dir, mode=args.mode, seed=args.seed)
    else:
        from storage.db import open_database

        config = settings(args)
        url, embedded = open_database(config.database_url, config.data_dir)
        try:
            report = w3c.run(args.dir, mode=args.mode, seed=args.seed, executor=args.executor,
                             database_url=url)
        finally:
            if embedded is not None:
                embedded.stop()
    if args.json:
        print(json.dumps(report.as_json(), indent=1))
    else:
        for o in report.outcomes:
            if o.status != "passed":
                print(f"{o.status:11} {o.id}  {o.reason}")
        print(f"{report.count('unsupported')} unsupported")
        print(f"{report.count('passed')} passed, {report.count('failed')} failed")
    return 1 if report.count("failed") else 0

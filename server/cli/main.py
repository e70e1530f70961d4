"""The one entry point: ``podviews``."""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import signal
import sys
import threading
from pathlib import Path


def build_parser() -> argparse.ArgumentParser:
    """Every subcommand and option; each option's default may come from the
    environment (``_env_defaults``)."""
    parser = argparse.ArgumentParser(prog="podviews", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
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
    serve = sub.add_parser("serve", help="run the HTTP API and maintenance workers; with no "
                           "database URL, an embedded Postgres under PODVIEWS_DATA_DIR")
    serve.add_argument("--host", default=None, help="interface to listen on [PODVIEWS_HOST]")
    serve.add_argument("--port", type=int, default=None, help="port [PODVIEWS_PORT]")
    serve.add_argument("--database-url", default=None,
                       help="database URL [PODVIEWS_DATABASE_URL]; default: embedded")
    serve.add_argument("--workers", type=int, default=None,
                       help="maintenance worker threads [PODVIEWS_WORKERS]; 0: run "
                            "`podviews worker` apart")
    db_help = "database URL [PODVIEWS_DATABASE_URL]; default: embedded under PODVIEWS_DATA_DIR"
    migrate = sub.add_parser("migrate", help="bring the database schema to the latest revision")
    migrate.add_argument("--database-url", default=None, help=db_help)
    load = sub.add_parser("load", help="bulk-load an N-Triples/Turtle file (.gz allowed) "
                          "into a pod, as one change")
    load.add_argument("file", type=Path)
    load.add_argument("--pod", required=True, help="pod name (created if new)")
    load.add_argument("--resource", default=None, help="resource path (default: file name)")
    load.add_argument("--owner", default="urn:podviews:loader", help="WebID owning a new pod")
    load.add_argument("--database-url", default=None, help=db_help)
    bench = sub.add_parser("bench", help="benchmarks, printed as tables of ratios")
    bench.add_argument("scenario", choices=("paper-bsbm", "pipeline-bsbm", "backfill-bsbm",
                                            "paper-synthetic", "throughput", "many-views"))
    bench.add_argument("--patches", type=int, default=500, help="throughput: PATCHes to send")
    bench.add_argument("--rate", type=float, default=50.0, help="throughput: PATCHes per second")
    bench.add_argument("--patch-size", type=int, default=4,
                       help="throughput: triples each PATCH inserts (a multiple of 4; it "
                            "deletes as many)")
    bench.add_argument("--worker-processes", type=int, default=1,
                       help="throughput: `podviews worker` processes beside the API")
    bench.add_argument("--views", type=int, default=100, help="many-views: views registered")
    bench.add_argument("--touched", type=int, default=2,
                       help="many-views: views an update can change")
    bench.add_argument("--n", type=int, default=200, help="paper-synthetic: nodes per blob")
    bench.add_argument("--p", type=float, default=0.05, help="paper-synthetic: edge fraction")
    bench.add_argument("--data", type=Path, nargs="+", default=[
        Path("../shared/data/bsbm/bsbm-100.nt.gz"), Path("../shared/data/bsbm/bsbm-1000.nt.gz")])
    bench.add_argument("--updates", type=Path,
                       default=Path("../shared/data/bsbm/bsbm-1000-updates.nt.gz"))
    bench.add_argument("--count", type=int, default=10, help="update transactions to apply")
    bench.add_argument("--server-url", default="postgresql+psycopg://postgres@127.0.0.1/postgres",
                       help="a Postgres server where scratch databases may be created")
    bench.add_argument("--executor", nargs="+", default=None,
                       choices=("memory", "sql", "spark", "auto"),
                       help="executors to run (default: sql for paper-bsbm, sql and spark "
                            "for backfill-bsbm, memory and sql for paper-synthetic; memory: "
                            "paper-synthetic only)")
    bench.add_argument("--only", nargs="+", default=None,
                       help="paper-bsbm: these queries only (Q1 Q2 Q3 Q4 path SUM)")
    bench.add_argument("--json", action="store_true")
    worker = sub.add_parser("worker", help="run maintenance jobs until SIGTERM")
    worker.add_argument("--database-url", default=None, help=db_help)
    worker.add_argument("--executor", choices=("sql", "spark", "auto"), default=None,
                        help="executor of every job, or auto: Spark from --spark-threshold "
                             "triples of work [PODVIEWS_EXECUTOR, default auto]")
    worker.add_argument("--spark-master", default=None,
                        help="Spark master URL [PODVIEWS_SPARK_MASTER, default local[*]]")
    worker.add_argument("--spark-threshold", type=int, default=None,
                        help="triples of work from which auto picks Spark "
                             "[PODVIEWS_SPARK_THRESHOLD, default 100000]")
    watch = sub.add_parser("watch", help="follow the maintenance queue until it drains: jobs "
                           "done, the running job, a backfill's nodes done (exit 1 if a job "
                           "died)")
    watch.add_argument("--database-url", default=None, help=db_help)
    watch.add_argument("--view", type=int, default=None, help="only this view's jobs")
    watch.add_argument("--timeout", type=float, default=None,
                       help="give up after this many seconds (exit 124)")
    consistency = check_sub.add_parser(
        "consistency", help="recompute every view from scratch and report any drift")
    consistency.add_argument("--database-url", default=None, help=db_help)
    _env_defaults(parser, "PODVIEWS")
    return parser


_SETTING = re.compile(r"\[(PODVIEWS_[A-Z_]+)")


def _env_defaults(parser: argparse.ArgumentParser, prefix: str) -> None:
    """Every option may be given as an environment variable too. Options
    that are server settings name theirs in their help ([PODVIEWS_…], read
    by ``Settings``); every other one is ``PODVIEWS_<COMMAND>_<OPTION>``
    (``PODVIEWS_BENCH_COUNT=3``), added to its help. The command line wins."""
    for action in parser._actions:  # argparse keeps no public list of them
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                _env_defaults(sub, f"{prefix}_{name.upper().replace('-', '_')}")
            continue
        longs = [o for o in action.option_strings if o.startswith("--")]
        if not longs or longs[0] == "--help" or _SETTING.search(action.help or ""):
            continue
        env = f"{prefix}_{longs[0][2:].upper().replace('-', '_')}"
        action.help = f"{action.help or ''} [{env}]".strip()
        raw = os.environ.get(env)
        if raw is not None:
            action.default = _from_env(parser, action, env, raw)


def _from_env(parser: argparse.ArgumentParser, action: argparse.Action, env: str,
              raw: str) -> object:
    if action.nargs == 0:  # a flag
        return raw.strip().lower() in ("1", "true", "yes", "on")
    convert = action.type or str
    try:
        values = [convert(v) for v in raw.split()] if action.nargs in ("+", "*") \
            else [convert(raw)]  # type: ignore[operator]
    except (TypeError, ValueError) as e:
        parser.error(f"{env}={raw!r}: {e}")
    bad = [v for v in values if action.choices is not None and v not in action.choices]
    if bad:
        parser.error(f"{env}={raw!r}: choose from {', '.join(map(str, action.choices))}")
    return values if action.nargs in ("+", "*") else values[0]


def main(argv: list[str] | None = None) -> int:
    logging.getLogger("rdflib").setLevel(logging.ERROR)  # ill-typed literals are data here
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "worker":
        args.stop = _stop_on_signals()  # before the heavy imports: a SIGTERM then stops cleanly
    if args.command == "check" and args.check == "w3c":
        return _check_w3c(args)
    if args.command == "check" and args.check == "consistency":
        return _with_database(args)
    if args.command == "serve":
        return _serve(args)
    if args.command == "bench" and args.scenario != "paper-synthetic" and \
            "memory" in (args.executor or []):
        parser.error("--executor memory: only paper-synthetic runs the engine in memory")
    if args.command == "bench" and args.scenario == "paper-synthetic":
        from server.tools.bench import synthetic as syn

        executors = tuple(args.executor or ["memory", "sql"])
        rows = syn.run(args.n, args.p, executors=executors, server_url=args.server_url)
        _print_rows(f"paper-synthetic (§5.2.1), executors: {', '.join(executors)}", rows,
                    args.json)
        return 0 if all(r.equal for r in rows) else 1
    if args.command == "bench" and args.scenario == "throughput":
        from server.tools.bench import throughput as bench_throughput

        row = bench_throughput.run(args.server_url, args.patches, args.rate,
                                   args.worker_processes, args.patch_size)
        _print_rows(f"throughput: PATCHes through podviews serve, 10 views, "
                    f"{args.worker_processes} worker process(es)", [row], args.json)
        return 0 if row.equal else 1
    if args.command == "bench" and args.scenario == "many-views":
        from server.tools.bench import many_views as bench_views

        mv = bench_views.run(args.server_url, args.views, args.touched, args.count)
        _print_rows(f"many-views: {args.views} views, an update touching {args.touched}",
                    [mv], args.json)
        return 0 if mv.equal else 1
    if args.command == "bench" and args.scenario == "paper-bsbm":
        from server.tools.bench import paper as bench_paper

        only = [q for q in bench_paper.queries_names() if any(q.startswith(o)
                                                              for o in args.only or [q])]
        rows = [r for data in args.data for r in bench_paper.run(
            args.server_url, data, args.updates, args.count, args.executor or ["sql"], only)]
        bench_paper.print_table(rows, args.json)
        return 0 if all(r.equal for r in rows) else 1
    if args.command == "bench" and args.scenario == "backfill-bsbm":
        from server.tools.bench import pipeline as b

        rows = b.run_backfill_bsbm(args.server_url, args.data[-1], args.executor or ["sql", "spark"])
        _print_rows(f"backfill-bsbm: {args.data[-1].name}", rows, args.json)
        return 0 if all(r.equal for r in rows) else 1
    if args.command == "bench":
        from server.tools.bench import pipeline as b

        rows = b.run_pipeline_bsbm(args.server_url, args.data, args.updates, args.count)
        b.print_table(rows, args.json)
        return 0 if all(r.equal for r in rows) else 1
    if args.command in ("migrate", "load", "worker", "watch"):
        return _with_database(args)
    return 2


def _stop_on_signals() -> threading.Event:
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    return stop


def _with_database(args: argparse.Namespace) -> int:
    from server.config import Settings
    from storage.db import open_database
    from storage.migrate import upgrade

    settings = Settings(**_overrides(args))
    url, embedded = open_database(settings.database_url, settings.data_dir)
    try:
        upgrade(url)
        if args.command == "check":
            return _consistency(url)
        if args.command == "worker":
            from server.maintenance.worker import run

            logging.basicConfig(level=logging.INFO)
            run(url, stop=args.stop, router=settings.router())
            return 0
        if args.command == "watch":
            return _watch(url, args)
        if args.command == "load":
            from server.cli.load import load

            seq = load(url, args.file, args.pod, args.resource, args.owner)
            print(f"loaded {args.file} into pod {args.pod} as change {seq}")
        else:
            print("database at the latest revision")
    finally:
        if embedded is not None:
            embedded.stop()
    return 0


def _watch(url: str, args: argparse.Namespace) -> int:
    from server.cli.watch import watch

    try:
        done, dead = watch(url, args.view, args.timeout)
    except TimeoutError as e:
        print(f"watch: {e}", file=sys.stderr)
        return 124
    print(f"{done} jobs done, {dead} dead" + (" (see GET /views/{id})" if dead else ""))
    return 1 if dead else 0


def _overrides(args: argparse.Namespace) -> dict:  # type: ignore[type-arg]
    """Settings given as options (the environment gives the rest)."""
    names = ("database_url", "executor", "spark_master", "spark_threshold")
    return {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from server.api.ops.observability import configure_logging
    from server.app import create_app
    from server.config import Settings
    from storage.db import open_database
    from storage.migrate import upgrade

    overrides = {k: v for k, v in (("host", args.host), ("port", args.port),
                                   ("workers", args.workers)) if v is not None}
    settings = Settings(**overrides, **_overrides(args))
    url, embedded = open_database(settings.database_url, settings.data_dir)
    try:
        upgrade(url)
        # uvicorn shuts down gracefully on SIGTERM, then raises it again: let
        # that end this function normally, so the embedded cluster is stopped
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        configure_logging()
        uvicorn.run(create_app(url, settings, workers=settings.workers),
                    host=settings.host, port=settings.port, log_config=None)
    finally:
        if embedded is not None:
            embedded.stop()
    return 0


def _print_rows(title: str, rows: list, as_json: bool) -> None:  # type: ignore[type-arg]
    from dataclasses import asdict, fields

    if as_json:
        print(json.dumps({"rows": [asdict(r) for r in rows]}, indent=1))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    names = [f.name for f in fields(rows[0])] if rows else []
    for name in names:
        table.add_column(name.replace("_", " "))
    for r in rows:
        table.add_row(*(str(getattr(r, name)) for name in names))
    Console(width=200).print(table)


def _consistency(url: str) -> int:
    import sqlalchemy as sa

    from server.maintenance.verify import consistency
    from storage.catalog import snapshot

    with snapshot(sa.create_engine(url)) as conn:
        report = consistency(conn)
    for view, name, differ in report:
        print(f"view {view} ({name}): {'ok' if not differ else f'{differ} mappings drifted'}")
    drifted = sum(1 for *_, d in report if d)
    print(f"{len(report) - drifted} consistent, {drifted} drifted")
    return 1 if drifted else 0


def _check_w3c(args: argparse.Namespace) -> int:
    from server.tools import w3c

    embedded = None
    url = None
    if args.executor != "memory":
        from server.config import Settings
        from storage.db import open_database

        settings = Settings(**_overrides(args))
        url, embedded = open_database(settings.database_url, settings.data_dir)
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


if __name__ == "__main__":
    sys.exit(main())

"""``podviews bench``: benchmarks, printed as tables of ratios measured side
by side in one run (the scenarios live in ``server.tools.bench``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from server.cli.common import print_rows
from server.tools import paths


def add(sub: Any) -> None:
    bench = sub.add_parser("bench", help="benchmarks, printed as tables of ratios")
    bench.add_argument("scenario", choices=tuple(_SCENARIOS))
    bench.add_argument("--patches", type=int, default=500, help="throughput: PATCHes to send")
    bench.add_argument("--rate", type=float, default=50.0, help="throughput: PATCHes per second")
    bench.add_argument("--patch-size", type=int, default=4,
                       help="throughput: triples each PATCH inserts (a multiple of 4; it "
                            "deletes as many); batch: triples each update inserts (and "
                            "deletes)")
    bench.add_argument("--writers", type=int, default=1,
                       help="throughput: clients writing at once, each its own document, "
                            "at an equal share of --rate (one sends a PATCH at a time)")
    bench.add_argument("--worker-processes", type=int, default=1,
                       help="throughput: `podviews worker` processes beside the API")
    bench.add_argument("--subscribers", type=int, nargs="+", default=[1, 100, 1000],
                       help="live: SSE subscribers of the view, one run each")
    bench.add_argument("--channel", choices=["sse", "websocket"], default="sse",
                       help="live: how subscribers follow the view: Server-Sent Events, or "
                            "each a Solid Notifications WebSocketChannel2023 channel")
    bench.add_argument("--client-processes", type=int, default=2,
                       help="live: processes the subscribers are spread over (the writer has "
                            "its own)")
    bench.add_argument("--writes", type=int, default=250, help="live: PATCHes to send "
                       "(at --rate per second)")
    bench.add_argument("--views", type=int, default=100, help="many-views: views registered")
    bench.add_argument("--touched", type=int, default=2,
                       help="many-views: views an update can change")
    bench.add_argument("--n", type=int, default=200, help="paper-synthetic: nodes per blob")
    bench.add_argument("--p", type=float, default=0.05, help="paper-synthetic: edge fraction")
    bench.add_argument("--data", type=Path, nargs="+", default=[
        paths.BSBM / "bsbm-100.nt.gz", paths.BSBM / "bsbm-1000.nt.gz"])
    bench.add_argument("--updates", type=Path, default=paths.BSBM / "bsbm-1000-updates.nt.gz")
    bench.add_argument("--count", type=int, default=10, help="update transactions to apply")
    bench.add_argument("--scale", type=int, nargs="+", default=[1],
                       help="paper-bsbm: run on each dataset this many times over too (e.g. "
                            "1 5: the cost's growth with the data, per update kind)")
    bench.add_argument("--server-url", default="postgresql+psycopg://postgres@127.0.0.1/postgres",
                       help="a Postgres server where scratch databases may be created")
    bench.add_argument("--executor", nargs="+", default=None,
                       choices=("memory", "sql", "spark", "spark-replace", "auto"),
                       help="executors to run (default: sql for paper-bsbm, sql and spark "
                            "for backfill-bsbm, memory and sql for paper-synthetic; memory: "
                            "paper-synthetic only; spark-replace: paper-bsbm, Spark "
                            "evaluating and replacing every batch, against spark's delta "
                            "program)")
    bench.add_argument("--only", nargs="+", default=None,
                       help="paper-bsbm: these queries only (Q1 Q2 Q3 Q4 path SUM MIN)")
    bench.add_argument("--sql-render", action="store_true",
                       help="paper-bsbm: the SQL executor runs the views that render as one "
                            "statement per batch (ARCHITECTURE decision 4)")
    bench.add_argument("--rounds", type=int, default=1,
                       help="paper-bsbm: times each update kind is measured (the sequence "
                            "run again, the stream's triples taken out between runs, "
                            "untimed): each kind's figure is the median of its rounds")
    bench.add_argument("--edges", type=int, default=100_000,
                       help="paths: edges of each generated graph")
    bench.add_argument("--samples", type=int, default=200,
                       help="paths: single-edge changes measured per kind")
    bench.add_argument("--json", action="store_true")
    bench.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.scenario != "paper-synthetic" and "memory" in (args.executor or []):
        raise SystemExit("podviews bench: --executor memory: only paper-synthetic runs the "
                         "engine in memory")
    return 0 if _SCENARIOS[args.scenario](args) else 1


def _paper_synthetic(args: argparse.Namespace) -> bool:
    from server.tools.bench import synthetic

    executors = tuple(args.executor or ["memory", "sql"])
    rows = synthetic.run(args.n, args.p, executors=executors, server_url=args.server_url)
    print_rows(f"paper-synthetic (§5.2.1), executors: {', '.join(executors)}", rows, args.json)
    return all(r.equal for r in rows)


def _throughput(args: argparse.Namespace) -> bool:
    from server.tools.bench import throughput

    row = throughput.run(args.server_url, args.patches, args.rate, args.worker_processes,
                         args.patch_size, args.writers)
    print_rows(f"throughput: PATCHes through podviews serve, 10 views, "
               f"{args.worker_processes} worker process(es), {args.writers} writer(s)", [row],
               args.json)
    return row.equal


def _live(args: argparse.Namespace) -> bool:
    from server.tools.bench import live

    rows = live.run(args.server_url, args.subscribers, args.writes, args.rate, args.channel,
                    args.client_processes)
    print_rows(f"live: write commit to {args.channel} delivery, one API process, one worker",
               rows, args.json)
    return all(r.complete for r in rows)


def _batch(args: argparse.Namespace) -> bool:
    from server.tools.bench import batch

    if args.count < 2:
        raise SystemExit("podviews bench batch: --count: at least 2 updates")
    rows = batch.run(args.server_url, args.count, args.patch_size)
    print_rows(f"batch: the cost of one batch ({args.count} updates of {2 * args.patch_size} "
               "triple changes after a warm-up; statements with their median ms)", rows,
               args.json)
    return all(r.equal for r in rows)


def _many_views(args: argparse.Namespace) -> bool:
    from server.tools.bench import many_views

    row = many_views.run(args.server_url, args.views, args.touched, args.count)
    print_rows(f"many-views: {args.views} views, an update touching {args.touched}", [row],
               args.json)
    return row.equal


def _paper_bsbm(args: argparse.Namespace) -> bool:
    from server.tools.bench import paper

    only = [q for q in paper.queries_names() if any(q.startswith(o) for o in args.only or [q])]
    if any(n < 1 for n in args.scale):
        raise SystemExit("podviews bench: --scale: a positive number of copies")
    if args.rounds < 1:
        raise SystemExit("podviews bench: --rounds: at least one")
    rows = [r for data in args.data for n in args.scale for r in paper.run(
        args.server_url, data, args.updates, args.count, args.executor or ["sql"], only,
        args.sql_render, n, args.rounds)]
    paper.print_table(rows, args.json)
    return all(r.equal for r in rows)


def _backfill_bsbm(args: argparse.Namespace) -> bool:
    from server.tools.bench import pipeline

    rows = pipeline.run_backfill_bsbm(args.server_url, args.data[-1],
                                      args.executor or ["sql", "spark"])
    print_rows(f"backfill-bsbm: {args.data[-1].name}", rows, args.json)
    return all(r.equal for r in rows)


def _pipeline_bsbm(args: argparse.Namespace) -> bool:
    from server.tools.bench import pipeline

    rows = pipeline.run_pipeline_bsbm(args.server_url, args.data, args.updates, args.count)
    pipeline.print_table(rows, args.json)
    return all(r.equal for r in rows)


def _paths(args: argparse.Namespace) -> bool:
    from server.tools.bench import closure

    rows = closure.run(args.edges, args.samples)
    print_rows("paths: one edge inserted or deleted; Backward/Forward (B/F) and DRed "
               "maintaining the reachable pairs vs pyoxigraph from scratch (ms)", rows, args.json)
    return all(r.equal for r in rows)


def _documents(args: argparse.Namespace) -> bool:
    from server.tools.bench import documents

    rows = [r for data in args.data for r in documents.run(args.server_url, data)]
    print_rows("documents: a stored document read back whole (rows and terms from Postgres, "
               "then written) vs pyoxigraph writing it from memory (ms, medians)", rows,
               args.json)
    return all(r.same for r in rows)


def _attack(args: argparse.Namespace) -> bool:
    from server.tools.bench import attack

    rows = attack.run(args.server_url)
    print_rows("attack: /healthz while each attack runs (target p99 <= 100 ms), server RSS",
               rows, args.json)
    return all(r.healthz_max_ms != float("inf") for r in rows)


_SCENARIOS: dict[str, Callable[[argparse.Namespace], bool]] = {
    "attack": _attack, "paths": _paths,
    "paper-bsbm": _paper_bsbm, "pipeline-bsbm": _pipeline_bsbm, "backfill-bsbm": _backfill_bsbm,
    "paper-synthetic": _paper_synthetic, "throughput": _throughput, "many-views": _many_views,
    "live": _live, "batch": _batch, "documents": _documents}

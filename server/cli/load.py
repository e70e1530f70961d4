"""``podviews load``: an N-Triples or Turtle file (gzip allowed) into a pod,
as one change — a write like any other, which wakes the views it changes."""

from __future__ import annotations

import argparse
import gzip
from pathlib import Path
from typing import IO, Any, cast

import sqlalchemy as sa
from rdflib import Graph

from server.cli.common import DB_HELP, database
from server.cli.progress import progress
from storage import pods


def add(sub: Any) -> None:
    load = sub.add_parser("load", help="bulk-load an N-Triples/Turtle file (.gz allowed) "
                          "into a pod, as one change")
    load.add_argument("file", type=Path)
    load.add_argument("--pod", required=True, help="pod name (created if new)")
    load.add_argument("--resource", default=None, help="resource path (default: file name)")
    load.add_argument("--owner", default="urn:podviews:loader", help="WebID owning a new pod")
    load.add_argument("--database-url", default=None, help=DB_HELP)
    load.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    with database(args) as url:
        seq = load(url, args.file, args.pod, args.resource, args.owner)
    print(f"loaded {args.file} into pod {args.pod} as change {seq}")
    return 0


def read_triples(path: Path) -> list[tuple]:
    name = path.name.removesuffix(".gz")
    fmt = "nt" if name.endswith(".nt") else "turtle"
    g = Graph()
    with (gzip.open(path, "rb") if path.name.endswith(".gz") else open(path, "rb")) as f:
        g.parse(cast(IO[bytes], f), format=fmt)
    return list(g)


def load(url: str, path: Path, pod: str, resource: str | None, owner: str) -> int:
    """Load ``path`` as the resource ``resource`` of ``pod`` (created if new);
    the change's sequence number."""
    with progress(f"parsing {path.name}") as advance:
        triples = read_triples(path)
        advance(0, f"storing {len(triples):,} triples")
        with sa.create_engine(url).begin() as conn:
            try:
                pid = pods.pod_id(conn, pod)
            except pods.PodsError:
                found = pods.agent_by_webid(conn, owner)
                agent = int(found.id) if found is not None else \
                    pods.create_agent(conn, owner, "owner", owner.encode())
                pid = pods.create_pod(conn, pod, agent)
            seq = pods.put_resource(conn, pid, resource or path.name.split(".")[0], triples)
    return seq

"""``podviews load``: an N-Triples or Turtle file (gzip allowed) into a pod,
as one change — a write like any other, which wakes the views it changes."""

from __future__ import annotations

import argparse
import gzip
from pathlib import Path
from typing import IO, Any, cast

import sqlalchemy as sa

from server.api.ldp import rdf
from server.api.ldp.rdf import Triple
from server.cli.common import DB_HELP, database
from server.cli.progress import progress
from storage import pods
from storage.terms import TermTable


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


def read_table(path: Path) -> TermTable:
    """The file's triples as a table of terms, parsed by pyoxigraph from a
    stream (gzip allowed), relative IRIs against the file's URI."""
    name = path.name.removesuffix(".gz")
    media = "application/n-triples" if name.endswith(".nt") else "text/turtle"
    with (gzip.open(path, "rb") if path.name.endswith(".gz") else open(path, "rb")) as f:
        return rdf.parse_table(cast(IO[bytes], f), media, path.absolute().as_uri(), None)


def read_triples(path: Path) -> set[Triple]:
    """The file's triples, as rdflib terms."""
    return read_table(path).decoded()


def load(url: str, path: Path, pod: str, resource: str | None, owner: str) -> int:
    """Load ``path`` as the resource ``resource`` of ``pod`` (created if new);
    the change's sequence number."""
    with progress(f"parsing {path.name}") as advance:
        table = read_table(path)
        advance(0, f"storing {len(table.triples):,} triples")
        engine = sa.create_engine(url)
        with pods.loading(engine) as conn:
            try:
                pid = pods.pod_id(conn, pod)
            except pods.PodsError:
                found = pods.agent_by_webid(conn, owner)
                agent = int(found.id) if found is not None else \
                    pods.create_agent(conn, owner, "owner", owner.encode())
                pid = pods.create_pod(conn, pod, agent)
            seq = pods.put_resource(conn, pid, resource or path.name.split(".")[0], table)
        engine.dispose()
    return seq

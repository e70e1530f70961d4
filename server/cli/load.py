"""``podviews load``: an N-Triples or Turtle file (gzip allowed) into a pod,
as one change."""

from __future__ import annotations

import gzip
from pathlib import Path

import sqlalchemy as sa
from rdflib import Graph

from server.cli.progress import progress
from storage import pods


def read_triples(path: Path) -> list[tuple]:
    name = path.name.removesuffix(".gz")
    fmt = "nt" if name.endswith(".nt") else "turtle"
    opener = gzip.open if path.name.endswith(".gz") else open
    g = Graph()
    with opener(path, "rb") as f:  # type: ignore[operator]
        g.parse(f, format=fmt)
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
                agent = conn.execute(sa.text("SELECT id FROM agents WHERE webid = :w"),
                                     {"w": owner}).scalar()
                if agent is None:
                    agent = pods.create_agent(conn, owner, "owner", owner.encode())
                pid = pods.create_pod(conn, pod, int(agent))
            seq = pods.put_resource(conn, pid, resource or path.name.split(".")[0], triples)
    return seq

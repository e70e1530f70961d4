"""A CONSTRUCT view's graph written into the resource its consumer named
(issue 19): after every job, in the job's transaction, so the derived
document changes with the view's state and commits with it. The write is a
change like any other (``storage.pods.put_resource``): views reading the pod
see the derived document; the view itself never does — its dataset excludes
the document it writes (``views.dataset.Spec.exclude``), so it cannot read
its own output."""

from __future__ import annotations

from rdflib.term import BNode
from sqlalchemy import Connection

from storage import catalog, pods, views_repo
from views.compile import compiled
from views.results import Triple, graph


def write_back(conn: Connection, view: int) -> int | None:
    """Write the view's graph into its target resource when it differs from
    what the resource holds; the change's seq, or None when nothing was
    written (no target, or the same graph)."""
    row = views_repo.view_row(conn, view)
    if row is None or row.target_pod is None or row.root_node is None:
        return None
    triples = {_owned(t, view) for t in graph(compiled(row.query).query,
                                              catalog.results(conn, row))}
    held = pods.resource(conn, row.target_pod, row.target_path)
    if held is not None and pods.resource_triples(conn, held.id) == triples:
        return None
    return pods.put_resource(conn, row.target_pod, row.target_path, triples)


def _owned(t: Triple, view: int) -> Triple:
    """The triple with its blank nodes named for the view: a template's blank
    node is named from its solution (``views.results.graph``), so two views'
    graphs would otherwise share it — and a document's blank nodes are its
    own (design note 206)."""
    return tuple(BNode(f"v{view}{x}") if isinstance(x, BNode) else x  # type: ignore[return-value]
                 for x in t)

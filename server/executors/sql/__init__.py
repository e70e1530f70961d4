"""The SQL executor: a view's delta program (``views.interpret``) run with its
state in Postgres — each stored node a ``storage.krel.PgRel``, the input the
pods' graph (``storage.pods_graph.PodsGraph``) — inside the job's REPEATABLE
READ transaction, set at a time (design note 9)."""

from __future__ import annotations

from collections.abc import Callable

from rdflib.term import URIRef
from sqlalchemy import Connection

from storage import changes, documents, krel, pods_graph
from storage.codec import Codec
from storage.pods_graph import DEFAULT_BASE, PodsGraph
from views.dataset import Delta, Spec
from views.interpret import Maintainer
from views.kset import KSet
from views.plan import Plan

Progress = Callable[[int, int], None]


def program(conn: Connection, view: int, plan: Plan, pods: list[int],
            tables: dict[str, krel.NodeTables], backfill: bool,
            progress: Progress | None = None, max_rows: int | None = None,
            base: str = DEFAULT_BASE, spec: Spec | None = None) -> tuple[Maintainer, PodsGraph]:
    """The view's program over its state (``tables``: its K-relation tables
    by node) and the graph of ``pods`` (its documents named under ``base``,
    the dataset as ``spec`` says); ``backfill`` computes the state from
    scratch (the tables must be empty). ``max_rows``: see ``Maintainer``."""
    codec = Codec(conn)
    graph = PodsGraph(conn, codec, pods, base, spec)
    m = Maintainer(plan, graph, lambda n: krel.PgRel(conn, codec, view, n.id,
                                                      tables.setdefault(n.id, {})),
                   backfill=backfill, progress=progress, max_rows=max_rows)
    return m, graph


def view_delta(conn: Connection, graph: PodsGraph, after: int, upto: int,
               predicates: list[int] | None = None) -> Delta:
    """ΔG of the view's input over (after, upto]: set-membership changes of the
    union of its pods (decision 5) or of the merge of its FROM documents, and
    of its named graphs when it reads them; only those with one of
    ``predicates`` when given (the view's, design note 24: no other triple
    can match its patterns)."""
    delta: Delta = {}
    if graph.spec.union:
        rows = changes.net_changes(conn, graph.pods, after, upto, predicates)
        names = graph.codec.decode(x for r in rows for x in (r.s, r.p, r.o))
        for r in rows:
            now, before = r.holders > 0, r.holders - r.net > 0
            if now != before:
                delta[(None, names[r.s], names[r.p], names[r.o])] = 1 if now else -1
    if graph.spec.documents:
        delta.update(_documents_delta(conn, graph, after, upto, predicates))
    return delta


def _documents_delta(conn: Connection, graph: PodsGraph, after: int, upto: int,
                     predicates: list[int] | None) -> Delta:
    """The named graphs' changes, and the FROM documents' merge's (a triple
    enters when its first document gains it, leaves with its last)."""
    spec = graph.spec
    rows = [r for r in documents.net_changes(conn, graph.pods, after, upto, predicates)
            if (r.pod_id, r.path) != spec.exclude]
    names = graph.codec.decode(x for r in rows for x in (r.s, r.p, r.o))
    named = None if spec.named is None else set(spec.named)
    merged = None if spec.default is None else set(spec.default)
    delta: Delta = {}
    net: dict[tuple[int, int, int], int] = {}
    for r in rows:
        iri = graph.docs.iri(r.pod_id, r.path)
        if spec.graphs and (named is None or iri in named):
            delta[(URIRef(iri), names[r.s], names[r.p], names[r.o])] = int(r.net)
        if not spec.union and (merged is None or iri in merged):
            t = (r.s, r.p, r.o)
            net[t] = net.get(t, 0) + int(r.net)
    now = documents.holders(conn, graph.default_rids or [], [t for t, n in net.items() if n])
    for t, n in now.items():
        if (n > 0) != (n - net[t] > 0):
            delta[(None, *(names[x] for x in t))] = 1 if n > 0 else -1
    return delta


def catch_up(conn: Connection, view: int, plan: Plan, tables: dict[str, krel.NodeTables],
             pods: list[int], after: int, upto: int, predicates: list[int] | None,
             max_rows: int | None = None, base: str = DEFAULT_BASE,
             spec: Spec | None = None) -> tuple[Maintainer, PodsGraph, int]:
    """Apply the changes in (after, upto] of ``pods`` (those the view read
    until now) to its state; and ΔG's size."""
    m, graph = program(conn, view, plan, pods, tables, backfill=False, max_rows=max_rows,
                       base=base, spec=spec)
    if upto <= after:
        return m, graph, 0
    delta = view_delta(conn, graph, after, upto, predicates)
    m.apply(delta)
    return m, graph, len(delta)


def enter_or_leave(conn: Connection, m: Maintainer, graph: PodsGraph, pod: int,
                   entering: bool) -> None:
    """A pod enters (grant) or leaves (revoke) the view: ±ΔG of the triples
    no other readable pod holds (decision 6: consent is data), and of its
    documents when the view reads them."""
    others = [p for p in graph.pods if p != pod]
    after = graph.with_pods(sorted(set(others) | ({pod} if entering else set())))
    alone = graph.with_pods([pod])
    sign = 1 if entering else -1
    if graph.spec.union:
        rows = pods_graph.pod_entry(conn, pod, others)
    else:  # the pod's FROM documents' triples no other pod's FROM documents hold
        mine = documents.lookup(conn, alone.default_rids or [], (), [], distinct=True)
        held = documents.holders(conn, graph.with_pods(others).default_rids or [],
                                 [tuple(r) for r in mine])
        rows = [r for r in mine if not held.get(tuple(r))]
    names = graph.codec.decode(x for r in rows for x in (r.s, r.p, r.o))
    delta: Delta = {(None, names[r.s], names[r.p], names[r.o]): sign for r in rows}
    if graph.spec.graphs:
        quads = documents.quads_of(conn, alone.named_rids)
        names = graph.codec.decode(x for r in quads for x in (r.s, r.p, r.o))
        delta.update({(URIRef(alone.docs.iris[r.g]), names[r.s], names[r.p], names[r.o]):
                      sign for r in quads})
    m.apply(delta, after)


def scratch(conn: Connection, plan: Plan, pods: list[int], base: str = DEFAULT_BASE,
            spec: Spec | None = None) -> KSet:
    """The view's results evaluated from scratch on the pods' current data
    (the engine's rules run fresh, in memory)."""
    return Maintainer(plan, PodsGraph(conn, Codec(conn), pods, base, spec)).result

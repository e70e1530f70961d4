"""The SQL executor: a view's delta program (``views.interpret``) run with its
state in Postgres — each stored node a ``storage.krel.PgRel``, the input the
pods' graph (``storage.pods_graph.PodsGraph``) — inside the job's REPEATABLE
READ transaction, set at a time (design note 9)."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection

from storage import changes, krel, pods_graph
from storage.codec import Codec
from storage.pods_graph import PodsGraph
from views.dataset import Delta
from views.interpret import Maintainer
from views.kset import KSet
from views.plan import Plan

Progress = Callable[[int, int], None]


def program(conn: Connection, view: int, plan: Plan, pods: list[int],
            tables: dict[str, krel.NodeTables], backfill: bool,
            progress: Progress | None = None,
            max_rows: int | None = None) -> tuple[Maintainer, PodsGraph]:
    """The view's program over its state (``tables``: its K-relation tables
    by node) and the graph of ``pods``; ``backfill`` computes the state from
    scratch (the tables must be empty). ``max_rows``: see ``Maintainer``."""
    codec = Codec(conn)
    graph = PodsGraph(conn, codec, pods)
    m = Maintainer(plan, graph, lambda n: krel.PgRel(conn, codec, view, n.id,
                                                      tables.setdefault(n.id, {})),
                   backfill=backfill, progress=progress, max_rows=max_rows)
    return m, graph


def view_delta(conn: Connection, graph: PodsGraph, after: int, upto: int,
               predicates: list[int] | None = None) -> Delta:
    """ΔG of the view's input over (after, upto]: set-membership changes of the
    union of its pods (decision 5); only those with one of ``predicates``
    when given (the view's, design note 24: no other triple can match its
    patterns)."""
    rows = changes.net_changes(conn, graph.pods, after, upto, predicates)
    names = graph.codec.decode(x for r in rows for x in (r.s, r.p, r.o))
    delta: Delta = {}
    for r in rows:
        now, before = r.holders > 0, r.holders - r.net > 0
        if now != before:
            delta[(None, names[r.s], names[r.p], names[r.o])] = 1 if now else -1
    return delta


def catch_up(conn: Connection, view: int, plan: Plan, tables: dict[str, krel.NodeTables],
             pods: list[int], after: int, upto: int, predicates: list[int] | None,
             max_rows: int | None = None) -> tuple[Maintainer, PodsGraph]:
    """Apply the changes in (after, upto] of ``pods`` (those the view read
    until now) to its state."""
    m, graph = program(conn, view, plan, pods, tables, backfill=False, max_rows=max_rows)
    if upto > after:
        m.apply(view_delta(conn, graph, after, upto, predicates))
    return m, graph


def enter_or_leave(conn: Connection, m: Maintainer, graph: PodsGraph, pod: int,
                   entering: bool) -> None:
    """A pod enters (grant) or leaves (revoke) the view: ±ΔG of the triples
    no other readable pod holds (decision 6: consent is data)."""
    others = [p for p in graph.pods if p != pod]
    rows = pods_graph.pod_entry(conn, pod, others)
    names = graph.codec.decode(x for r in rows for x in (r.s, r.p, r.o))
    sign = 1 if entering else -1
    delta: Delta = {(None, names[r.s], names[r.p], names[r.o]): sign for r in rows}
    after = PodsGraph(conn, graph.codec, sorted(set(others) | ({pod} if entering else set())))
    m.apply(delta, after)


def scratch(conn: Connection, plan: Plan, pods: list[int]) -> KSet:
    """The view's results evaluated from scratch on the pods' current data
    (the engine's rules run fresh, in memory)."""
    return Maintainer(plan, PodsGraph(conn, Codec(conn), pods)).result

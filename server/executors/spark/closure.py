"""An arbitrary-length path (``views.plan.Closure``) on Spark: the reachable
pairs by semi-naive iteration — each round joins only the pairs the last
round found with the edges, until a round finds nothing new (SPARQL 1.1
§18.4 ALP; the same pairs as ``views.closure``, from scratch)."""

from __future__ import annotations

from typing import Any

from rdflib.term import Identifier

from views import algebra as A
from views import plan as P

DataFrame = Any
Frames = dict[frozenset[str], DataFrame]


def closure(F: Any, n: P.Closure, edges_in: Frames, const_ids: dict[Identifier, int],
            col: Any, materialise: Any, empty: Any) -> Frames:
    """The node's output frames from its child's (``edges_in``): columns a
    (walk start), b (walk end) and, under GRAPH ?g, g; ``empty(schema)`` is
    an empty frame of a schema; ``materialise`` cuts a frame's lineage."""
    reverse = A.is_var(n.subject) and not A.is_var(n.object)
    start, end = (n.dst, n.src) if reverse else (n.src, n.dst)
    ends = frozenset(x for x in (n.subject, n.object, n.graph)
                     if x is not None and A.is_var(x))  # type: ignore[misc]
    keys = ["g"] if n.graph is not None else []
    parts = [df.where(F.col("k") > 0).select(
        F.col(col(start)).alias("a"), F.col(col(end)).alias("b"),
        *([F.col(col(n.graph)).alias("g")] if n.graph is not None else []))
        for s, df in edges_in.items() if {n.src, n.dst} <= s]
    if not parts:
        return {ends: empty(ends)}
    edges = parts[0]
    for df in parts[1:]:
        edges = edges.unionByName(df)
    edges = materialise(edges.distinct())
    const = n.object if reverse else n.subject
    reach = edges
    if not A.is_var(const):
        if const not in const_ids:
            return {ends: empty(ends)}
        reach = edges.where(F.col("a") == F.lit(const_ids[const]))  # type: ignore[index]
    reach = materialise(reach.distinct())
    new = reach
    step = edges.select(F.col("a").alias("m"), F.col("b").alias("b2"), *keys)
    while not new.isEmpty():
        found = new.join(step, on=[new["b"] == step["m"], *(new[k] == step[k] for k in keys)]) \
            .select(new["a"], step["b2"].alias("b"), *(new[k] for k in keys)).distinct()
        new = materialise(found.subtract(reach))
        reach = materialise(reach.unionByName(new))
    out = []
    if A.is_var(n.subject) and A.is_var(n.object):
        out += [F.col("a").alias(col(n.subject)), F.col("b").alias(col(n.object))]
    else:
        out.append(F.col("b").alias(col(n.object if not reverse else n.subject)))
    if n.graph is not None:
        out.append(F.col("g").alias(col(n.graph)))
    return {ends: reach.select(*out, F.lit(1).cast("long").alias("k"))}

"""Reading Postgres plans in tests: ``EXPLAIN (ANALYZE, FORMAT JSON)``."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa


def plan_nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """Every node of a plan (its ``Plan`` object), itself first."""
    return [plan, *(n for child in plan.get("Plans", ()) for n in plan_nodes(child))]


def index_only_scans(c: sa.Connection, pod: int) -> list[dict[str, Any]]:
    """The index-only scans of reading the pod's triples from an index
    (sequential and bitmap scans turned off for the transaction), run:
    each with its ``Heap Fetches`` (pages whose visibility map bit was not
    set) and ``Actual Rows``."""
    c.execute(sa.text("SET LOCAL enable_seqscan = off"))
    c.execute(sa.text("SET LOCAL enable_bitmapscan = off"))
    plan = c.execute(sa.text(
        "EXPLAIN (ANALYZE, FORMAT JSON) SELECT p, o, s FROM pod_triples "
        "WHERE pod_id = :pod AND p > 0"), {"pod": pod}).scalar_one()
    return [n for n in plan_nodes(plan[0]["Plan"]) if n["Node Type"] == "Index Only Scan"]

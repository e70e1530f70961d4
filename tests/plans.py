"""Reading Postgres plans in tests: ``EXPLAIN (ANALYZE, FORMAT JSON)``."""

from __future__ import annotations

from typing import Any


def plan_nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """Every node of a plan (its ``Plan`` object), itself first."""
    return [plan, *(n for child in plan.get("Plans", ()) for n in plan_nodes(child))]

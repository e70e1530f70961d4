"""How large a view may grow in maintenance before it fails with a problem
document, instead of taking the worker — or the server — down; and how much
of its change feed and of the done jobs is kept."""

from __future__ import annotations

from dataclasses import dataclass, field

from storage.feed import Retention


@dataclass(frozen=True)
class Limits:
    # rows one node of a view may change by in one job (its whole output in a
    # backfill): a cartesian product is stopped before it is computed whole
    max_view_rows: int = 1_000_000
    # rows all of a view's K-relations may hold
    max_state_rows: int = 10_000_000
    retention: Retention = field(default_factory=Retention)
    # seconds a done job stays in the queue before it is counted and pruned
    # (``storage.ops.prune``): its progress and outcome readable until then
    done_jobs_kept: float = 3600.0

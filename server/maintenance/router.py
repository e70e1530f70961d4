"""Which executor runs a job (architecture decision 4)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from server.executors.spark.config import SparkConfig, available


@dataclass(frozen=True)
class Router:
    """Picks a job's executor: Spark when the work — triples in the view's
    input, the pod entering or leaving, or the batch — reaches ``threshold``
    and Spark is installed, else SQL. ``mode`` "sql" or "spark" forces one;
    forced Spark fails a job whose plan it cannot run, auto falls back to
    SQL."""

    mode: str = "auto"
    threshold: int = 100_000
    spark: SparkConfig = field(default_factory=SparkConfig)
    render: bool = False  # on SQL, batches of plans that render run as one statement
    # ... or those of views whose state or solutions hold at least this many rows (0: none by size):
    # a small state's batches cost less through the interpreter (design note 118)
    render_from_rows: int = 0
    # on Spark, a batch whose ΔG is under this fraction of the view's input graph runs
    # the delta program (of a view rendered as above); others evaluate and replace (note 137)
    spark_delta_below: float = 0.05

    def weighs(self) -> bool:
        """Whether ``pick`` asks the work's size."""
        return self.mode == "auto" and available()

    def spark_delta(self, delta: int, graph: Callable[[], int]) -> bool:
        """Whether a Spark batch of ``delta`` triples over a graph of
        ``graph()`` runs the delta program rather than evaluating anew."""
        return delta < self.spark_delta_below * graph()

    def pick(self, work: int | Callable[[], int]) -> str:
        """``work``: its size, or a function measuring it (called only when
        the size decides)."""
        if self.mode in ("sql", "spark"):
            return self.mode
        if self.mode != "auto":
            raise ValueError(f"unknown executor {self.mode!r} (sql, spark or auto)")
        if not self.weighs():
            return "sql"
        size = work() if callable(work) else work
        return "spark" if size >= self.threshold else "sql"

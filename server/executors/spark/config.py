"""How the Spark executor runs (settings of the worker), and whether it can:
importing this module loads no Spark."""

from __future__ import annotations

from dataclasses import dataclass

from views.errors import UnsupportedFeature


class NotOnSpark(UnsupportedFeature):
    """A node the Spark executor does not render (the router keeps the view
    on the SQL executor)."""

    permanent = False  # another executor, or another configuration, can run it


@dataclass(frozen=True)
class SparkConfig:
    master: str = "local[*]"
    jdbc_jar: str = "/usr/share/java/postgresql.jar"
    shuffle_partitions: int = 2
    driver_memory: str = "4g"
    # Tungsten's page: each sort and each broadcast hash table takes one on its
    # first row. Spark's default follows the heap (64 MB at 4g): a long program's
    # sorts and broadcasts then ran the driver's heap out ("Unable to acquire 28
    # bytes of memory, got 0"), W3C negation/subset-03 after a long run, and
    # alone with a 1g heap; with 1 MB pages it passes there (DESIGN-NOTES 196).
    page_size: str = "1m"
    # Off for inputs of tens of triples (W3C, tests): generating and compiling
    # Java for every small plan was most of a job; interpreted, a W3C
    # category runs in half the time (DESIGN-NOTES 16).
    codegen: bool = True


def available() -> bool:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return False
    return True

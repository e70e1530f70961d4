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

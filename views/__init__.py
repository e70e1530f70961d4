"""Podviews engine: SPARQL text -> algebra -> maintained K-set views.

Pure Python, no I/O: never imports storage, server, SQLAlchemy or pyspark.
"""

from __future__ import annotations

from views.errors import EngineError, SparqlSyntaxError, UnsupportedFeature

__all__ = ["EngineError", "SparqlSyntaxError", "UnsupportedFeature"]

"""views/ is the pure core: it imports nothing of storage, server, SQLAlchemy
or pyspark (architecture: the planner never imports the executor)."""

from __future__ import annotations

import ast
from pathlib import Path

FORBIDDEN = ("storage", "server", "sqlalchemy", "pyspark", "psycopg", "fastapi")


def test_views_imports_no_io_layer() -> None:
    root = Path(__file__).resolve().parents[1] / "views"
    offenders = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [(path.name, n) for n in names if n.split(".")[0] in FORBIDDEN]
    assert offenders == []

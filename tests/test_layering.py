"""The layers import only downwards (the planner never imports the
executor): ``views/`` is the pure core; ``storage/`` knows nothing of the
server; the HTTP API (``server/api``) loads neither maintenance, executors
nor tools; maintenance and executors know nothing of HTTP; production code
never imports ``server/tools``, and tests import from it only what a command
uses too."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _imports(folder: str) -> Iterator[tuple[str, str]]:
    """(file, imported module) for every import under ``folder``."""
    for path in sorted((ROOT / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            yield from ((str(path.relative_to(ROOT)), n) for n in names)


def _offenders(folder: str, forbidden: tuple[str, ...]) -> list[tuple[str, str]]:
    return [(f, n) for f, n in _imports(folder)
            if any(n == x or n.startswith(x + ".") for x in forbidden)]


def test_views_imports_no_io_layer() -> None:
    assert _offenders("views", ("storage", "server", "sqlalchemy", "pyspark", "psycopg",
                                "fastapi")) == []


def test_storage_knows_nothing_of_the_server() -> None:
    assert _offenders("storage", ("server", "fastapi", "pyspark")) == []


def test_the_api_loads_no_maintenance_executor_or_tool() -> None:
    assert _offenders("server/api", ("server.maintenance", "server.executors", "server.tools",
                                     "server.cli", "pyspark")) == []


def test_maintenance_and_executors_know_nothing_of_http() -> None:
    for folder in ("server/maintenance", "server/executors"):
        assert _offenders(folder, ("fastapi", "starlette", "server.api", "server.cli",
                                   "server.tools")) == []


def test_production_code_imports_no_tool() -> None:
    production = [(f, n) for folder in ("views", "storage", "server")
                  for f, n in _imports(folder)
                  if not f.startswith(("server/tools/", "server/cli/"))]
    assert [(f, n) for f, n in production if n.startswith("server.tools")] == []


def test_tests_import_from_tools_only_what_a_command_uses() -> None:
    def module(name: str) -> str:  # server.tools.<module>[.<submodule>]
        parts = name.split(".")
        return ".".join(parts[:4] if parts[2] == "bench" else parts[:3])

    used = {module(n) for folder in ("server/cli", "server/tools") for _, n in _imports(folder)
            if n.startswith("server.tools.")}
    from_tests = {module(n) for _, n in _imports("tests") if n.startswith("server.tools.")}
    assert sorted(from_tests - used) == []

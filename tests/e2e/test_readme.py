"""The README's worked example runs as written, against a real server
process, and its last results hold what it promises."""

from __future__ import annotations

import json
import os
import re
import subprocess

from server.tools import paths
from tests.e2e.test_e2e import ADMIN, served  # noqa: F401 - the fixture, a server of this module's own

README = paths.REPO / "README.md"


def _example() -> str:
    text = README.read_text()
    section = text[text.index("## Try it"):]
    return re.search(r"```sh\n(.*?)```", section, re.DOTALL).group(1)  # type: ignore[union-attr]


def test_readme_example_runs(served: tuple[str, str]) -> None:  # noqa: F811
    base, _ = served
    script = _example()
    out = subprocess.run(["bash", "-euo", "pipefail", "-c", script], capture_output=True,
                         check=False, text=True, env={**os.environ, "BASE": base, "ADMIN": ADMIN}, timeout=120)
    assert out.returncode == 0, out.stderr
    docs = [json.loads(line) for line in _documents(out.stdout)]
    results = next(d for d in docs if "results" in d)
    assert sorted(b["name"]["value"] for b in results["results"]["bindings"]) == ["Alice", "Bob"]
    assert docs[-1]["status"] == "ready" and docs[-1]["rows"] == 2


def _documents(stdout: str) -> list[str]:
    """The JSON documents curl printed one after another."""
    decoder, i, out = json.JSONDecoder(), 0, []
    while i < len(stdout):
        if stdout[i].isspace():
            i += 1
            continue
        _, end = decoder.raw_decode(stdout, i)
        out.append(stdout[i:end])
        i = end
    return out

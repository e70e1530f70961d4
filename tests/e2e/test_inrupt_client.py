"""The Inrupt client (``@inrupt/solid-client`` 3, npm) against `podviews
serve`, with a fetch that adds the owner's bearer token: containers
(``createContainerAt``, ``createContainerInContainer``, ``deleteContainer``),
a dataset saved twice (the second save is a PATCH), files (``overwriteFile``,
``saveFileInContainer``, ``getFile``, ``deleteFile``), the effective access,
and deletes — every step succeeds and reads back what it wrote."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.tools import paths
from tests.e2e.conftest import NODE, node_steps, npm_package, owned_pod

pytestmark = pytest.mark.skipif(not NODE, reason="Node.js is not installed")

CLIENT = Path(__file__).parent / "inrupt" / "client.mjs"
STEPS = ["createContainerAt", "createContainerInContainer", "saveSolidDatasetTwice",
         "overwriteFile", "saveFileInContainer", "getEffectiveAccess", "deleteFile",
         "deleteAll"]


def test_the_inrupt_client_round_trips(podviews: str) -> None:
    modules = npm_package(paths.REPO / ".inrupt", "@inrupt/solid-client@3")
    pod = owned_pod(podviews, "inrupt")
    done = node_steps(CLIENT, modules, pod)
    assert list(done) == STEPS
    assert done["saveSolidDatasetTwice"] == ["Annie", "Bob"]
    assert done["saveFileInContainer"].startswith(f"{pod.url}box/")
    assert done["getEffectiveAccess"]["user"] == {"read": True, "append": True, "write": True}
    assert pod.client.get(f"{pod.url}box/").status_code == 404

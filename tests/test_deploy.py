"""Deployment files: the compose file validates; the Helm chart renders and
its manifests validate against the Kubernetes schemas (where the tools are
installed — otherwise the tests say which tool is missing)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / "helm" / "podviews"


def _compose() -> list[str] | None:
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"],
                                                 capture_output=True).returncode == 0:
        return ["docker", "compose"]
    return ["docker-compose"] if shutil.which("docker-compose") else None


@pytest.mark.skipif(_compose() is None, reason="neither `docker compose` nor `docker-compose` "
                                                "is installed: the compose file is not validated")
def test_compose_file_validates() -> None:
    out = subprocess.run([*_compose(), "-f", str(ROOT / "docker-compose.yml"), "config", "-q"],  # type: ignore[misc]
                         capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin:/usr/local/bin", "PODVIEWS_ADMIN_TOKEN": "t"})
    assert out.returncode == 0, out.stderr
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    assert {"postgres", "migrate", "api", "worker", "spark-master", "spark-worker"} <= set(services)


def test_chart_values_are_documented() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["apiVersion"] == "v2" and chart["name"] == "podviews"
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert {"image", "adminToken", "api", "worker", "executor", "postgresql",
            "migrations"} <= set(values)


@pytest.mark.skipif(shutil.which("helm") is None,
                    reason="helm is not installed: the chart is not rendered or validated")
@pytest.mark.parametrize("bundled", [True, False])
def test_chart_renders_and_validates(bundled: bool) -> None:
    import kubernetes_validate  # type: ignore[import-not-found]

    args = ["helm", "template", "pv", str(CHART), "--set", "adminToken=t",
            "--set", f"postgresql.bundled={str(bundled).lower()}"]
    if not bundled:
        args += ["--set", "postgresql.externalUrl=postgresql://u:p@db/podviews"]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    docs = [d for d in yaml.safe_load_all(out) if d]
    kinds = {d["kind"] for d in docs}
    assert {"Deployment", "Service", "Job", "ConfigMap", "Secret"} <= kinds
    assert ("StatefulSet" in kinds) == bundled
    for d in docs:
        kubernetes_validate.validate(d, "1.30", strict=True)

"""Deployment files: the compose file validates; the Helm chart renders and
its manifests validate against the Kubernetes schemas (where the tools are
installed — otherwise the tests say which tool is missing)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from server.tools import paths

ROOT = paths.REPO
CHART = ROOT / "helm" / "podviews"


def _compose() -> list[str] | None:
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"],
                                                 capture_output=True, check=False).returncode == 0:
        return ["docker", "compose"]
    return ["docker-compose"] if shutil.which("docker-compose") else None


@pytest.mark.skipif(_compose() is None, reason="neither `docker compose` nor `docker-compose` "
                                                "is installed: the compose file is not validated")
def test_compose_file_validates() -> None:
    compose = _compose()
    assert compose is not None
    out = subprocess.run([*compose, "-f", str(ROOT / "docker-compose.yml"), "config", "-q"],
                         capture_output=True, text=True, check=False,
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


def _helm() -> str | None:
    """helm on PATH, or beside the tests' interpreter (where .ci/install-helm puts it)."""
    return shutil.which("helm") or shutil.which("helm", path=str(Path(sys.executable).parent))


needs_helm = pytest.mark.skipif(_helm() is None, reason="helm is not installed (.ci/install-helm "
                                                        "puts one in .venv/bin): the chart is not "
                                                        "rendered or validated")

# Three ways to install: the bundled Postgres, an external one (and a Spark
# cluster), an admin token kept in a Secret of the operator's.
CONFIGS = {
    "bundled": ["adminToken=t"],
    "external": ["adminToken=t", "postgresql.bundled=false",
                 "postgresql.externalUrl=postgresql://u:p@db/podviews",
                 "executor.sparkMaster=spark://spark-master:7077"],
    "existing-secret": ["existingSecret=ops-podviews"],
}


def _template(*sets: str) -> subprocess.CompletedProcess[str]:
    args = [_helm() or "helm", "template", "pv", str(CHART)]
    for s in sets:
        args += ["--set", s]
    return subprocess.run(args, capture_output=True, text=True, check=False)


def _render(config: str) -> dict[tuple[str, str], dict]:
    out = _template(*CONFIGS[config])
    assert out.returncode == 0, out.stderr
    docs = [d for d in yaml.safe_load_all(out.stdout) if d]
    return {(d["kind"], d["metadata"]["name"]): d for d in docs}


def _pod_specs(objs: dict[tuple[str, str], dict]) -> dict[tuple[str, str], dict]:
    return {key: d["spec"]["template"] for key, d in objs.items()
            if key[0] in ("Deployment", "StatefulSet", "Job")}


@needs_helm
def test_chart_lints() -> None:
    args = [_helm() or "helm", "lint", "--strict", str(CHART), "--set", "adminToken=t"]
    out = subprocess.run(args, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stdout + out.stderr


@needs_helm
@pytest.mark.parametrize("config", CONFIGS)
def test_chart_renders_manifests_valid_for_kubernetes(config: str) -> None:
    import kubernetes_validate  # type: ignore[import-not-found]

    objs = _render(config)
    kinds = {kind for kind, _ in objs}
    assert {"Deployment", "Service", "Job", "ConfigMap", "Secret"} <= kinds
    assert ("StatefulSet" in kinds) == (config != "external")
    for d in objs.values():
        kubernetes_validate.validate(d, "1.30", strict=True)


@needs_helm
@pytest.mark.parametrize("config", CONFIGS)
def test_chart_objects_refer_to_one_another(config: str) -> None:
    from server.config import Settings

    objs = _render(config)
    secrets = {name: set(d["stringData"]) for (kind, name), d in objs.items() if kind == "Secret"}
    secrets.setdefault("ops-podviews", {"admin-token"})  # the operator's own Secret
    maps = {name: d["data"] for (kind, name), d in objs.items() if kind == "ConfigMap"}
    pods = _pod_specs(objs)
    for key, pod in pods.items():
        for c in pod["spec"]["containers"]:
            for ref in c.get("envFrom", []):
                assert ref["configMapRef"]["name"] in maps, key
            for env in c.get("env", []):
                if "valueFrom" in env:
                    ref = env["valueFrom"]["secretKeyRef"]
                    assert ref["key"] in secrets[ref["name"]], (key, env["name"])
    for (kind, name), svc in objs.items():  # every Service selects some pods
        if kind == "Service":
            assert any(svc["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
                       for pod in pods.values()), name
    for (kind, name), d in objs.items():  # every workload selects its own pods
        if kind in ("Deployment", "StatefulSet"):
            assert d["spec"]["selector"]["matchLabels"].items() <= \
                d["spec"]["template"]["metadata"]["labels"].items(), name
    # every setting the chart passes is one the server reads
    known = {f"PODVIEWS_{field.upper()}" for field in Settings.model_fields}
    (config_map,) = maps.values()
    assert set(config_map) <= known
    spark = "spark://spark-master:7077" if config == "external" else "local[*]"
    assert config_map["PODVIEWS_SPARK_MASTER"] == spark and config_map["PODVIEWS_WORKERS"] == "0"


@needs_helm
def test_migrations_run_before_install_and_upgrade_after_their_settings() -> None:
    objs = _render("bundled")

    def hook(kind: str, suffix: str) -> tuple[set[str], int]:
        (d,) = [d for (k, n), d in objs.items() if k == kind and n.endswith(suffix)]
        notes = d["metadata"]["annotations"]
        return set(notes["helm.sh/hook"].split(",")), int(notes["helm.sh/hook-weight"])

    job_hooks, job_weight = hook("Job", "-migrate")
    assert job_hooks == {"pre-install", "pre-upgrade"}
    for kind, suffix in [("ConfigMap", "-config"), ("Secret", "-secret"),
                         ("StatefulSet", "-postgres"), ("Service", "-postgres")]:
        hooks, weight = hook(kind, suffix)
        assert "pre-install" in hooks and weight < job_weight, (kind, suffix)
    # a change of settings rolls the API and the workers
    pods = _pod_specs(objs)
    checksums = {n: p["metadata"]["annotations"]["checksum/config"]
                 for (k, n), p in pods.items() if k == "Deployment"}
    assert len(checksums) == 2
    other = [d for d in yaml.safe_load_all(_template("adminToken=u").stdout) if d]
    assert all(p["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
               != checksums[p["metadata"]["name"]] for p in other if p["kind"] == "Deployment")


@needs_helm
@pytest.mark.parametrize("sets, named", [
    ([], "adminToken"),
    (["adminToken=t", "postgresql.bundled=false"], "postgresql.externalUrl"),
])
def test_chart_refuses_missing_settings_naming_them(sets: list[str], named: str) -> None:
    out = _template(*sets)
    assert out.returncode != 0 and named in out.stderr

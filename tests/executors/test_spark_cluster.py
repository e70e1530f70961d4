"""The maintenance worker on a Spark cluster: a real standalone master and
worker, started from pyspark's own distribution, run a `podviews worker`'s
backfills and batches (the compose file's and the chart's shape, where
PODVIEWS_SPARK_MASTER names a cluster); every view then equals its
from-scratch evaluation, and the master ran the jobs as an application."""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from storage import pods
from tests.executors.test_spark import _data, views_over_random_data
from tests.maintenance.test_kill import _check, _settle
from tests.maintenance.test_pipeline import QUERIES

CLUSTER_QUERIES = {name: QUERIES[name] for name in ("optional-filter",)}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spark_class(log: Path, *args: str) -> subprocess.Popen:
    import pyspark

    home = Path(pyspark.__file__).parent
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1"}
    return subprocess.Popen([str(home / "bin" / "spark-class"), *args], env=env,
                            stdout=log.open("wb"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def _wait_for(log: Path, text: str, proc: subprocess.Popen, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        assert proc.poll() is None, log.read_text(errors="replace")[-2000:]
        time.sleep(0.3)
    raise AssertionError(f"no {text!r} in {log}: {log.read_text(errors='replace')[-2000:]}")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture
def spark_cluster(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A standalone master and one worker on loopback: (master URL, master log)."""
    if not Path("/usr/share/java/postgresql.jar").exists():
        pytest.fail("the Spark executor needs the Postgres JDBC driver at "
                    "/usr/share/java/postgresql.jar (Debian: libpostgresql-jdbc-java)")
    url = f"spark://127.0.0.1:{_free_port()}"
    master_log, worker_log = tmp_path / "master.log", tmp_path / "worker.log"
    master = _spark_class(master_log, "org.apache.spark.deploy.master.Master", "--host",
                          "127.0.0.1", "--port", url.rsplit(":", 1)[1], "--webui-port",
                          str(_free_port()))
    worker = None
    try:
        _wait_for(master_log, "I have been elected leader", master)
        worker = _spark_class(worker_log, "org.apache.spark.deploy.worker.Worker", url,
                              "--cores", "2", "--memory", "2g", "--work-dir",
                              str(tmp_path / "work"), "--webui-port", str(_free_port()))
        _wait_for(master_log, "Registering worker", master)
        yield url, master_log
    finally:
        for proc in (worker, master):
            if proc is not None:
                _stop(proc)


def test_a_worker_maintains_views_on_a_spark_cluster(
        migrated: str, spark_cluster: tuple[str, Path]) -> None:
    master_url, master_log = spark_cluster
    engine = sa.create_engine(migrated)
    rng = random.Random(11)
    pod, current, views = views_over_random_data(engine, rng, 30, CLUSTER_QUERIES)
    worker = subprocess.Popen(
        [sys.executable, "-m", "server.cli.main", "worker", "--database-url", migrated,
         "--executor", "spark", "--spark-master", master_url],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _settle(engine, timeout=300)  # the backfills
        current = set(rng.sample(sorted(current), k=20)) | _data(rng, 10)
        with engine.begin() as c:
            pods.put_resource(c, pod, "r", current)
        _settle(engine, timeout=300)  # one batch
    finally:
        worker.send_signal(signal.SIGTERM)
        _, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err.decode(errors="replace")[-3000:]
    _check(engine, views)
    with engine.connect() as c:
        executors = c.execute(sa.text("SELECT kind, payload->>'executor' FROM jobs")).all()
    assert {kind for kind, _ in executors} == {"backfill", "apply_changes"}
    assert {executor for _, executor in executors} == {"spark"}
    assert "Registered app podviews" in master_log.read_text()
    # the session made at the worker's start and warmed, its programs run on the cluster
    assert "Spark session warmed" in err.decode(errors="replace")
    assert "warming the Spark session" not in err.decode(errors="replace")

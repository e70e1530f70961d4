"""Faults under load: a stream of PATCHes while `podviews serve` is SIGKILLed
and started again, then while its embedded Postgres is SIGKILLed (the
server starts it again and reconnects by itself). Every write answered 2xx
is there afterwards, none is applied twice, a database outage is answered
503 with Retry-After (never 500), and `podviews check consistency` passes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import sqlalchemy as sa

from server.tools.process import serving
from storage.embedded import Embedded

ADMIN = "dev-admin-token"


class Stream:
    """PATCHes sent one after another, each inserting its own triple."""

    def __init__(self) -> None:
        self.base = ""
        self.token = ""
        self.acked: set[int] = set()
        self.statuses: list[int] = []
        self.i = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            self.i += 1
            try:
                r = httpx.patch(f"{self.base}/pods/p/r{self.i % 5}", timeout=5,
                                content=f"INSERT DATA {{ <http://ex/w{self.i}> "
                                        f"<http://ex/n> {self.i} }}",
                                headers={"authorization": f"Bearer {self.token}",
                                         "content-type": "application/sparql-update"})
            except httpx.TransportError:
                time.sleep(0.05)  # the server is down: the write may or may not be stored
                continue
            self.statuses.append(r.status_code)
            if r.status_code < 300:
                self.acked.add(self.i)
            else:
                assert r.status_code == 503 and r.headers.get("retry-after"), r.text
                time.sleep(0.05)

    def running(self) -> int:
        """Let it run until a few more writes are acknowledged."""
        start = len(self.acked)
        deadline = time.monotonic() + 60
        while len(self.acked) < start + 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(self.acked) >= start + 5, "writes are not being acknowledged"
        return len(self.acked)


def _cluster(data_dir: Path) -> Path:
    return Embedded(data_dir / "postgres").located()


def _postmaster(data_dir: Path) -> int:
    return int((_cluster(data_dir) / "pgdata" / "postmaster.pid").read_text().split()[0])


def test_kills_lose_no_acknowledged_write_and_apply_none_twice(tmp_path: Path) -> None:
    env = {"PODVIEWS_DATA_DIR": str(tmp_path), "PODVIEWS_EXECUTOR": "sql"}
    stream, started = Stream(), []
    with serving(env, inherit=False, started=started) as base:
        admin = {"authorization": f"Bearer {ADMIN}"}
        owner = httpx.post(f"{base}/admin/agents", headers=admin,
                           json={"webid": "https://o.example/#me", "role": "owner"}).json()
        consumer = httpx.post(f"{base}/admin/agents", headers=admin,
                              json={"webid": "https://c.example/#me", "role": "consumer"}).json()
        httpx.post(f"{base}/admin/pods", headers=admin,
                   json={"name": "p", "owner": "https://o.example/#me"})
        httpx.post(f"{base}/admin/consents", headers={"authorization": f"Bearer {owner['token']}"},
                   json={"pod": "p", "consumer": "https://c.example/#me"})
        httpx.post(f"{base}/views", headers={"authorization": f"Bearer {consumer['token']}"},
                   json={"name": "count", "query": "SELECT (COUNT(*) AS ?n) "
                                                   "WHERE { ?s <http://ex/n> ?v }"})
        stream.base, stream.token = base, owner["token"]
        stream.thread.start()
        stream.running()
        started[0].send_signal(signal.SIGKILL)  # the API process dies mid-stream
        started[0].wait()
    # start the server again on the same data
    with serving(env, inherit=False) as base:
        stream.base = base
        stream.running()
        os.kill(_postmaster(tmp_path), signal.SIGKILL)  # the database dies mid-stream
        stream.running()  # the server started it again and reconnected
        stream.stop.set()
        stream.thread.join(30)
        url = _database_url(tmp_path)
        _check_writes(url, stream.acked)
        done = subprocess.run([sys.executable, "-m", "server.cli", "check", "consistency",
                               "--database-url", url], capture_output=True, text=True,
                              timeout=300, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
    assert 500 not in stream.statuses


def _database_url(data_dir: Path) -> str:
    pg = _cluster(data_dir)
    port = (pg / "pgdata" / "postmaster.pid").read_text().splitlines()[3]
    return f"postgresql+psycopg://podviews@:{port}/postgres?host={pg.resolve()}"


def _check_writes(url: str, acked: set[int]) -> None:
    """Every acknowledged write is in its resource; no write made two changes."""
    engine = sa.create_engine(url)
    with engine.connect() as c:
        stored = {int(v) for v in c.execute(sa.text(
            "SELECT o.lexical FROM quads q JOIN terms p ON p.id = q.p JOIN terms o ON o.id = q.o "
            "WHERE p.lexical = 'http://ex/n'")).scalars()}
        twice = c.execute(sa.text(
            "SELECT s.lexical, count(*) FROM change_triples ct JOIN terms s ON s.id = ct.s "
            "WHERE ct.sign = 1 GROUP BY 1 HAVING count(*) > 1")).all()
    engine.dispose()
    assert acked <= stored, sorted(acked - stored)[:10]
    assert twice == []

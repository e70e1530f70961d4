"""Maintenance workers as processes of their own beside the API (design note
25, the trust issue: a job's CPU — a regex backtracking, a large backfill —
never shares the API's interpreter lock): ``podviews serve`` starts them,
starts a worker again if it dies, and stops them (SIGTERM: the running job
finishes or rolls back as a whole) when it stops."""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import subprocess
import sys
import threading

log = logging.getLogger("podviews.serve")


class Workers:
    def __init__(self, url: str, count: int, base: str | None = None,
                 check_every: float = 1.0) -> None:
        self.url, self.count, self.check_every = url, count, check_every
        self.base = base  # resource IRIs (the names of the documents' graphs)
        self.procs: list[subprocess.Popen[bytes]] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="workers", daemon=True)

    def start(self) -> None:
        self.procs = [self._spawn() for _ in range(self.count)]
        self.thread.start()

    def _spawn(self) -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-m", "server.cli", "worker",
                                 "--database-url", self.url],
                                env={**os.environ, PARENT: str(os.getpid()),
                                     **({"PODVIEWS_BASE_URL": self.base} if self.base else {})})


    def _watch(self) -> None:
        while not self.stopping.wait(self.check_every):
            for i, p in enumerate(self.procs):
                if p.poll() is not None and not self.stopping.is_set():
                    log.warning("worker process %s exited with %s; starting another",
                                p.pid, p.returncode)
                    self.procs[i] = self._spawn()

    def stop(self, timeout: float = 30) -> None:
        self.stopping.set()
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


PARENT = "PODVIEWS_WORKER_PARENT"  # set for a worker serve started: it ends with serve


def die_with_parent() -> None:
    """In a worker serve started: SIGTERM when serve dies, even killed
    (Linux), so a killed server leaves no worker behind."""
    parent = os.environ.get(PARENT)
    if parent is None:
        return
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        return  # not Linux: workers outlive a killed server until they are stopped
    if os.getppid() != int(parent):  # serve died before the request took effect
        os.kill(os.getpid(), signal.SIGTERM)

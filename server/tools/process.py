"""A `podviews serve` process (and `podviews worker` processes), for the
end-to-end tests and the throughput bench: started with given settings,
used once /healthz answers, stopped."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import httpx

from server.tools import probe
from storage.embedded import free_port


def wait_until_up(url: str, proc: subprocess.Popen, what: str,  # type: ignore[type-arg]
                  log: IO[bytes] | None = None) -> None:
    """Return once ``url`` answers; fail with the process's output (its pipe,
    or the file ``log`` it writes to) if it exits."""
    for _ in range(600):
        if proc.poll() is not None:
            if proc.stdout:
                out = proc.stdout.read()
            elif log is not None and log.seekable():
                log.seek(0)
                out = log.read()
            else:
                out = b""
            raise RuntimeError(f"{what} exited: {out.decode(errors='replace')[-3000:]}")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not start")


@contextmanager
def serving(env: dict[str, str], log: IO[bytes] | None = None, inherit: bool = True,
            started: list[subprocess.Popen] | None = None) -> Iterator[str]:  # type: ignore[type-arg]
    """A `podviews serve` with these PODVIEWS_* settings on a free port
    (``inherit``: on top of this process's environment); its base URL. The
    process is appended to ``started`` when given."""
    port = free_port()
    base_env = os.environ if inherit else {k: v for k, v in os.environ.items()
                                           if not k.startswith("PODVIEWS_")}
    # a file, never an undrained pipe: a server that logs a pipe's worth
    # (64 KB) would block in its next log line
    out = log or tempfile.TemporaryFile()  # noqa: SIM115 - closed below, after the process
    proc = subprocess.Popen([sys.executable, "-m", "server.cli.main", "serve"],
                            env={**base_env, "PODVIEWS_PORT": str(port), **env},
                            stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    if started is not None:
        started.append(proc)
    try:
        wait_until_up(f"{base}/healthz", proc, "podviews serve", out)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        if log is None:
            out.close()


@contextmanager
def working(env: dict[str, str], count: int, log: IO[bytes] | None = None,
            started: list[subprocess.Popen] | None = None) -> Iterator[None]:  # type: ignore[type-arg]
    """``count`` `podviews worker` processes with these PODVIEWS_* settings,
    stopped (SIGTERM) on exit; appended to ``started`` when given."""
    procs = [subprocess.Popen([sys.executable, "-m", "server.cli.main", "worker"],
                              env={**os.environ, **env}, stdout=log or subprocess.DEVNULL,
                              stderr=subprocess.STDOUT) for _ in range(count)]
    if started is not None:
        started.extend(procs)
    try:
        yield
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=60)


class Healthz:
    """``/healthz`` probed every ``every`` seconds by a process of its own
    (``server.tools.probe``) until ``close``: when each probe started and how
    long it took (inf: no answer)."""

    def __init__(self, base: str, every: float = 0.025) -> None:
        self.samples: list[tuple[float, float]] = []
        self.proc = subprocess.Popen([sys.executable, "-m", "server.tools.probe",
                                      f"{base}/healthz", str(every)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.every = every
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            start, took = line.split()
            self.samples.append((float(start), float(took)))

    def since(self, mark: float) -> list[float]:
        """Probe times (seconds) of the probes started at ``mark`` or later,
        up to one that started after this call (the work has ended by then;
        inf if none answers within the probe's own timeout)."""
        now = time.monotonic()
        while not any(when >= now for when, _ in self.samples[-3:]):
            if self.proc.poll() is not None or time.monotonic() > now + probe.TIMEOUT + 5:
                return [*self._since(mark), float("inf")]
            time.sleep(self.every)
        return self._since(mark)

    def _since(self, mark: float) -> list[float]:
        return [took for when, took in self.samples if when >= mark]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        self.reader.join()


def rss_bytes(pid: int) -> int:
    """Resident memory of a process and its descendants (Linux /proc)."""
    total = 0
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        total += int(next(x for x in status.splitlines() if x.startswith("VmRSS")).split()[1])
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except (OSError, StopIteration):
        return 0
    return total * 1024 + sum(rss_bytes(int(c)) for c in children)


def cpu_seconds(pid: int) -> float | None:
    """The CPU time (user and system, seconds) the process ``pid`` has used
    so far, from ``/proc``; None for a process gone (or no ``/proc``: not
    Linux)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime

"""A `podviews serve` process (and `podviews worker` processes), for the
end-to-end tests and the throughput bench: started with given settings,
used once /healthz answers, stopped."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

import httpx

from storage.embedded import free_port


def wait_until_up(url: str, proc: subprocess.Popen, what: str) -> None:  # type: ignore[type-arg]
    """Return once ``url`` answers; fail with the process's output if it exits."""
    for _ in range(600):
        if proc.poll() is not None:
            out = proc.stdout.read().decode()[-3000:] if proc.stdout else ""
            raise RuntimeError(f"{what} exited: {out}")
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
    proc = subprocess.Popen([sys.executable, "-m", "server.cli.main", "serve"],
                            env={**base_env, "PODVIEWS_PORT": str(port), **env},
                            stdout=log or subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    if started is not None:
        started.append(proc)
    try:
        wait_until_up(f"{base}/healthz", proc, "podviews serve")
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=60)


@contextmanager
def working(env: dict[str, str], count: int, log: IO[bytes] | None = None) -> Iterator[None]:
    """``count`` `podviews worker` processes with these PODVIEWS_* settings,
    stopped (SIGTERM) on exit."""
    procs = [subprocess.Popen([sys.executable, "-m", "server.cli.main", "worker"],
                              env={**os.environ, **env}, stdout=log or subprocess.DEVNULL,
                              stderr=subprocess.STDOUT) for _ in range(count)]
    try:
        yield
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=60)

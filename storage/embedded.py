"""An embedded Postgres: a private cluster in a data directory, started on a
free local port, for ``podviews serve`` without PODVIEWS_DATABASE_URL and for
tests on machines with no server running.

The server binaries come from the system (``initdb``/``pg_ctl`` on PATH or in
``/usr/lib/postgresql/*/bin``) or, failing that, from the ``pgserver`` wheel.
``initdb`` refuses to run as root, so as root the cluster is owned by the
``postgres`` user (MEASURED.md: initdb ~1 s, start 0.13 s) and, where that
user cannot reach the data directory, lives under /var/lib/podviews.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path


class EmbeddedError(RuntimeError):
    """No way to run an embedded Postgres here."""


def _bindir() -> Path | None:
    found = shutil.which("pg_ctl")
    if found and shutil.which("initdb"):
        real = Path(os.path.realpath(found)).parent
        if (real / "postgres").exists():
            return real
    for cand in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if Path(cand, "initdb").exists() and Path(cand, "postgres").exists():
            return Path(cand)
    return None


def _reachable_by_others(path: Path) -> bool:
    """Can another user traverse every existing parent of ``path``?"""
    for parent in path.resolve().parents:
        if parent.exists() and not os.stat(parent).st_mode & 0o001:
            return False
    return True


def _alive(pid: int | None) -> bool:
    if pid is None or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, another user's (the postgres user's postmaster)
    return True


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Embedded:
    """The cluster of ``data_dir``. A process that starts it owns it (its pid
    in ``owner.pid``) and stops it; a process finding it run by a live owner
    (``podviews check`` beside ``podviews serve``) uses it and leaves it
    running; one left by a process that died is restarted."""

    data_dir: Path
    port: int = 0
    user: str = "podviews"
    # fsync on: the embedded default is a user's database and an acknowledged
    # write must survive a power cut (decision 1); a test suite's throwaway
    # cluster turns it off
    durable: bool = True
    _owner: str | None = None
    _attached: bool = False

    @property
    def url(self) -> str:
        """Through the Unix socket in the data directory where its path fits
        the kernel's limit (a statement's round trip here: 75 µs against
        210–300 µs over TCP), else over TCP. Spark's JDBC reads the port and
        connects over TCP either way."""
        socket_dir = self.data_dir.resolve()
        if len(f"{socket_dir}/.s.PGSQL.{self.port}") < 100:
            return f"postgresql+psycopg://{self.user}@:{self.port}/postgres?host={socket_dir}"
        return f"postgresql+psycopg://{self.user}@127.0.0.1:{self.port}/postgres"

    def start(self) -> str:
        """Initialise the cluster if needed, start it; the database URL."""
        bindir = _bindir()
        if bindir is None:
            return self._start_pgserver()
        self._owner = "postgres" if os.geteuid() == 0 else None
        self.data_dir = self.located()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self._owner:
            shutil.chown(self.data_dir, self._owner)
        pgdata = self.data_dir / "pgdata"
        if not (pgdata / "PG_VERSION").exists():
            self._run([str(bindir / "initdb"), "-D", str(pgdata), "-U", self.user,
                       "--auth=trust", "-E", "UTF8", *([] if self.durable else ["--no-sync"])])
        running = self._running_port(pgdata)
        if running is not None and _alive(self._owner_pid()):
            self.port, self._attached = running, True  # a live process runs it: share it
            return self.url
        # a cluster left running by a process that was killed: stop it first
        self._run([str(bindir / "pg_ctl"), "-D", str(pgdata), "-m", "fast", "-w", "stop"],
                  check=False)
        self.port = self.port or free_port()
        opts = self._options()
        self._run([str(bindir / "pg_ctl"), "-D", str(pgdata), "-o", opts, "-w",
                   "-l", str(self.data_dir / "postgres.log"), "start"])
        (self.data_dir / "owner.pid").write_text(str(os.getpid()))
        return self.url

    def _options(self) -> str:
        opts = f"-p {self.port} -k {self.data_dir} -c listen_addresses=127.0.0.1"
        return opts if self.durable else f"{opts} -c fsync=off"

    def located(self) -> Path:
        """Where the cluster of ``data_dir`` lives: there, or — as root, where
        the postgres user cannot reach that path — in a durable place it
        can, one per data directory."""
        if os.geteuid() != 0 or _reachable_by_others(self.data_dir):
            return self.data_dir
        key = hashlib.sha1(str(self.data_dir.resolve()).encode()).hexdigest()[:12]
        Path("/var/lib/podviews").mkdir(parents=True, exist_ok=True)
        return Path("/var/lib/podviews") / key

    def ensure_running(self) -> bool:
        """Start the cluster again, on its port, if its postmaster died
        (killed, or out of memory); whether it had to."""
        bindir = _bindir()
        pgdata = self.data_dir / "pgdata"
        if bindir is None or self._attached or self._running_port(pgdata) is not None:
            return False
        self._run([str(bindir / "pg_ctl"), "-D", str(pgdata), "-m", "immediate", "stop"],
                  check=False)  # clears a stale pid file
        opts = self._options()
        self._run([str(bindir / "pg_ctl"), "-D", str(pgdata), "-o", opts, "-w",
                   "-l", str(self.data_dir / "postgres.log"), "start"])
        return True

    def _owner_pid(self) -> int | None:
        try:
            return int((self.data_dir / "owner.pid").read_text())
        except (OSError, ValueError):
            return None

    @staticmethod
    def _running_port(pgdata: Path) -> int | None:
        """The port of the postmaster running on ``pgdata``, if one is."""
        try:
            lines = (pgdata / "postmaster.pid").read_text().splitlines()
            pid, port = int(lines[0]), int(lines[3])
        except (OSError, ValueError, IndexError):
            return None
        return port if _alive(pid) else None

    def stop(self) -> None:
        """Stop the cluster, unless this process only shares it."""
        bindir = _bindir()
        if self._attached:
            return
        if bindir is not None and (self.data_dir / "pgdata").exists():
            self._run([str(bindir / "pg_ctl"), "-D", str(self.data_dir / "pgdata"), "-m",
                       "fast", "-w", "stop"], check=False)

    def _run(self, cmd: list[str], check: bool = True) -> None:
        if self._owner:
            cmd = ["runuser", "-u", self._owner, "--", *cmd]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if check and done.returncode != 0:
            raise EmbeddedError(f"{' '.join(cmd)} failed: {done.stderr.strip()}")

    def _start_pgserver(self) -> str:
        try:
            import pgserver  # type: ignore[import-not-found]
        except ImportError:
            raise EmbeddedError("no Postgres binaries found and pgserver is not installed; "
                                "install postgresql or `pip install pgserver`") from None
        server = pgserver.get_server(str(self.data_dir), cleanup_mode=None)
        return str(server.get_uri()).replace("postgresql://", "postgresql+psycopg://", 1)

"""``python -m server.tools.probe URL EVERY``: GET ``URL`` every ``EVERY``
seconds until stdin closes, printing one line per probe: when it started
(``time.monotonic``, the same clock in every process of the machine) and how
long it took, ``inf`` when it got no 200.

A process of its own, so that what it measures is the server: a prober that
shares the measuring process would count that process's pauses too (its
garbage collections over a test run's heap, the GIL its other threads hold)."""

from __future__ import annotations

import sys
import threading
import time

import httpx

TIMEOUT = 30.0  # seconds


def main(url: str, every: float) -> None:
    stop = threading.Event()

    def until_stdin_closes() -> None:
        sys.stdin.read()
        stop.set()
    threading.Thread(target=until_stdin_closes, daemon=True).start()
    with httpx.Client(timeout=TIMEOUT) as c:
        while not stop.is_set():
            start = time.monotonic()
            try:
                ok = c.get(url).status_code == 200
            except httpx.TransportError:
                ok = False
            print(start, time.monotonic() - start if ok else float("inf"), flush=True)
            stop.wait(every)


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))

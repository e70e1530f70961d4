"""A small pool of processes for request work that is CPU-bound Python and
may run for seconds (a SPARQL Update's WHERE in rdflib): run in a thread of the
API it would hold the GIL the event loop needs, and ``/healthz`` would wait
behind it (measured by ``podviews bench attack``; design note 44).

The pool starts its processes on first use (spawn: nothing of the API's state
is inherited), recycles each after a number of tasks so that memory a large
patch took is given back, and is replaced when a process dies."""

from __future__ import annotations

import multiprocessing
import signal
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, ParamSpec, TypeVar

from server.errors import NotReady, OverLimit

P = ParamSpec("P")
R = TypeVar("R")

PROCESSES = 2
TASKS_PER_PROCESS = 100

_lock = threading.Lock()
_pool: ProcessPoolExecutor | None = None


def _executor() -> ProcessPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ProcessPoolExecutor(PROCESSES, multiprocessing.get_context("spawn"),
                                        max_tasks_per_child=TASKS_PER_PROCESS)
        return _pool


def _discard(broken: ProcessPoolExecutor) -> None:
    global _pool
    with _lock:
        if _pool is broken:
            _pool = None
    broken.shutdown(wait=False, cancel_futures=True)


def run_within(seconds: float, fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """``fn(*args, **kwargs)`` in a pool process (``fn`` and its arguments
    picklable), its exceptions raised here; past ``seconds`` the task raises
    ``OverLimit`` (422) in its process, wherever it is. A process that died
    (killed, out of memory) is a 503: the pool is replaced for the next
    request."""
    pool = _executor()
    try:
        return pool.submit(_timed, seconds, fn, args, kwargs).result()
    except BrokenProcessPool:
        _discard(pool)
        raise NotReady("the process evaluating this request died; retry",
                       {"retry-after": "1"}) from None


def _timed(seconds: float, fn: Callable[..., R], args: tuple[Any, ...],
           kwargs: dict[str, Any]) -> R:
    """``fn`` under a wall-clock alarm, in the pool process's main thread
    (where Python runs signal handlers): a request's work is bounded
    whatever its shape — an update's WHERE whose pairs a filter discards
    (``?a ?b ?c OPTIONAL { ?d ?e ?f FILTER(?c = ?f) }``) reads few triples
    and spends little of its step budget, but compares every pair."""
    def expire(signum: int, frame: object) -> None:
        raise OverLimit(f"the request takes more than {seconds:g} s to evaluate; make it "
                        "more selective")

    before = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn(*args, **kwargs)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)


def shutdown() -> None:
    """Stop the pool's processes (at the API's shutdown)."""
    global _pool
    with _lock:
        pool, _pool = _pool, None
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=True)

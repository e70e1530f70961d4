"""Progress of long command-line work (``load``, ``watch``, ``bench``), drawn with rich
on stderr so that tables and ``--json`` on stdout stay clean; nothing is
drawn where stderr is not a terminal."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import Progress

Advance = Callable[..., None]  # advance(steps=1, description=None, total=None)


@contextmanager
def progress(description: str, total: int | None = None) -> Iterator[Advance]:
    """A progress bar of ``total`` steps (a spinner when None), gone when
    the block ends; yields ``advance(steps=1, description=None, total=None)``
    (a new total for work that grows as it goes)."""
    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(description, total=total)

        def advance(steps: int = 1, description: str | None = None,
                    total: int | None = None) -> None:
            bar.update(task, advance=steps, description=description, total=total)

        yield advance

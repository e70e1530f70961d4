"""The running state of one server: the dataset of every pod and the
maintained views. Each write is one change with a sequence number; every view
is brought up to date before the write returns (in-memory preview; the
Postgres-backed pipeline replaces this hub)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

from views.compile import Compiled
from views.dataset import Dataset
from views.maintain import Maintainer


@dataclass
class View:
    id: int
    name: str
    text: str
    compiled: Compiled
    maintainer: Maintainer
    watermark: int = 0


@dataclass
class Hub:
    ds: Dataset = field(default_factory=lambda: Dataset(union_default=True))
    views: dict[int, View] = field(default_factory=dict)
    seq: int = 0
    lock: threading.RLock = field(default_factory=threading.RLock)
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))

    def add_view(self, name: str, text: str, compiled: Compiled) -> View:
        with self.lock:
            view = View(next(self._ids), name, text, compiled,
                        Maintainer(compiled.pattern, self.ds), watermark=self.seq)
            self.views[view.id] = view
            return view

    def change(self, quads: Iterable[tuple[tuple, int]]) -> int:
        """Apply one change (quads with +1/-1) and maintain every view; the
        change's sequence number."""
        with self.lock:
            delta = self.ds.apply(quads)
            self.seq += 1
            for view in self.views.values():
                view.maintainer.apply(delta)
                view.watermark = self.seq
            return self.seq

"""A view's changes for its consumer (architecture decision 10): the deltas
after a position, in seq order, read in one snapshot (decision 9) — with
the view's results first when the consumer starts without a position, so it
holds the view at ``at`` and follows from there. Access is the results':
``service.row`` and ``service.state``."""

from __future__ import annotations

from dataclasses import dataclass

from rdflib.term import Identifier
from sqlalchemy import Connection, Engine, Row

from server.api.auth import Principal
from server.api.views.service import State, row, state
from server.errors import Conflict, Gone, NotReady
from storage import catalog, feed, terms
from views.compile import compiled
from views.kset import KSet

Binding = dict[str, Identifier]


@dataclass(frozen=True)
class Change:
    """One delta, or the part of it a page holds (``skip`` rows of it were
    on earlier pages; ``complete``: none follow)."""

    seq: int
    added: list[Binding]
    removed: list[Binding]
    skip: int
    complete: bool


@dataclass(frozen=True)
class Changes:
    """A page of the feed: the snapshot (``since`` omitted), the changes, and
    where to go on — ``since``/``skip`` for the next request. ``at``: the
    position the page brings a consumer to once it has applied it whole
    (the view's watermark when every delta up to it is on the page; None
    when the page ends inside a delta).
    ``failed``: the view failed and its feed ends here, why."""

    variables: tuple[str, ...]
    snapshot: list[Binding] | None
    changes: list[Change]
    since: int
    skip: int
    at: int | None
    more: bool  # deltas follow this page already
    failed: str | None


def with_feed(c: Connection, who: Principal, view_id: int) -> tuple[Row, State]:
    """``who``'s view and its state, in the snapshot ``c``: 404 for a view
    not theirs, 409 for one whose results are not a set of bindings (ASK,
    LIMIT/OFFSET: no changes to follow)."""
    v = row(c, who, view_id)
    q = compiled(v.query).query
    if q.form == "ASK" or q.limit is not None or q.offset:
        raise Conflict(f"view {view_id}'s results are " + (
            "a boolean" if q.form == "ASK" else "sliced (LIMIT/OFFSET)") +
            ": they have no changes to follow; read its results")
    return v, state(v)


def read(engine: Engine, who: Principal, view_id: int, since: int | None, skip: int,
         budget: int) -> Changes:
    """The changes of the view after ``since`` (the view's results first,
    and then the changes after them, when ``since`` is None), about
    ``budget`` rows of deltas at most; 410 when ``since`` is older than the
    feed keeps, 503 while the view is not readable, 409 for a view whose
    results are not a set of bindings (ASK, LIMIT/OFFSET)."""
    with catalog.snapshot(engine) as c:
        v, s = with_feed(c, who, view_id)
        q = compiled(v.query).query
        if not s.current and s.status != "failed":
            raise NotReady(f"view {view_id} is {s.status}" + (f": {s.note}" if s.note else ""),
                           {"Retry-After": "1"})
        pos = feed.position(c, v.id)
        snapshot: KSet | None = None
        if since is None:
            if not s.current:
                raise Conflict(f"view {view_id} failed: {s.note or 'see its jobs'}")
            snapshot, since, skip = catalog.results(c, v), int(v.watermark), 0
        elif since < pos.floor:
            raise Gone(f"view {view_id}'s changes after {since} are no longer kept (its feed "
                       f"starts after {pos.floor}); read GET /views/{view_id}/changes without "
                       "since for a snapshot and follow from there")
        found = feed.deltas(c, v.id, since, skip, budget)
        names = terms.decode(c, feed.term_ids(found))
    changes = [_change(d, names, q.variables) for d in found]
    snap = None if snapshot is None else _bindings(snapshot, q.variables)
    if found and not found[-1].complete:  # the page ends inside a delta
        last = found[-1]
        return Changes(q.variables, snap, changes, last.seq - 1, last.skip + len(last.rows),
                       None, True, None)
    read_to = found[-1].seq if found else since
    caught_up = pos.last is None or read_to >= pos.last
    at = max(read_to, int(v.watermark)) if caught_up else read_to
    failed = (s.note or "the view failed") if caught_up and s.status == "failed" else None
    return Changes(q.variables, snap, changes, at, 0, at, not caught_up, failed)


def _change(d: feed.Delta, names: dict[int, Identifier], variables: tuple[str, ...]) -> Change:
    added: list[Binding] = []
    removed: list[Binding] = []
    for k, ids in d.rows:
        b = {v: names[t] for v, t in ids.items() if v in variables}
        (added if k > 0 else removed).extend([b] * abs(k))
    return Change(d.seq, added, removed, d.skip, d.complete)


def _bindings(view: KSet, variables: tuple[str, ...]) -> list[Binding]:
    out: list[Binding] = []
    for m, k in view.items():
        out.extend([{v: t for v, t in m if v in variables}] * max(k, 0))
    return out

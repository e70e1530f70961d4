"""The change feed of views (architecture decision 10): each job's ΔV of a
view's root — the bindings added and removed, with their counts — stored at
the change-log position the job brought the view to (``seq``), in the job's
transaction, so consumers follow a view in order, exactly once, resumable by
seq.

ΔV is captured where it happens, not where it is computed: a view's root
K-relation tables carry statement triggers (``krel.watch``) that add every
row change to the job's capture table while capture is on, whichever
executor made the change (the interpreter's writes, Spark's merge, a
rebuild's drop and refill). ``record`` nets the captured changes per binding
and stores the non-zero ones. The one exception is the SQL executor's
rendered statement, which writes the root's delta itself: it records those
rows as ΔV and ends its job in the same statement, with the capture off
(``from_rows``, design note 170).

A view's feed starts where its first state was built (``views.feed_floor``);
older positions are compacted away by age and count (``Retention``), and by a
revocation (the deltas before it held the pod's rows): a consumer positioned
before the floor cannot resume and must read a snapshot.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, Row, text

from storage import driver, krel


@dataclass(frozen=True)
class Retention:
    """How much of a view's feed is kept: its last ``changes`` deltas (at
    least the last one), none older than ``seconds``."""

    changes: int = 10_000
    seconds: float = 7 * 24 * 3600.0


def capture_call(view: str, root: str) -> str:
    """The SQL expression that turns the capture on for the transaction,
    for the view and root given as SQL expressions: in one call, the
    session's capture table made where missing (once per session, emptied
    at each commit) and the settings (migrations 0015, 0016)."""
    return f"podviews_feed_capture(CAST({view} AS text) || ':' || {root})"


def root_call(view: str, root: str) -> str:
    """The SQL expression that names the view's feed root for the
    transaction without turning the capture on (``capture_call``'s
    arguments): a root table created then is watched all the same
    (``storage.krel.create``). A job whose rendered statement records ΔV
    itself (design note 170) needs no capture."""
    return f"set_config('podviews.feed_root', CAST({view} AS text) || ':' || {root}, true)"


def capture(conn: Connection, view: int, root: str) -> None:
    """Until the transaction ends, changes to the view's root tables are
    captured, and a root table created for ``root`` is watched (a job's
    lock on its view does it in the lock's statement: ``capture_call``)."""
    conn.execute(text(f"SELECT {capture_call(':v', ':r')}"), {"v": view, "r": root})


def forget(conn: Connection, view: int, root: str | None) -> None:
    """The rows of the view's root tables as captured removals, before the
    tables are dropped (a rebuild: the new root's rows arrive as additions)."""
    for name, variables in krel.tables(conn, view).get(root or "", {}).values():
        ids = ", ".join(f"t.{c}" for c in krel.column_names(variables))
        conn.execute(text(f"INSERT INTO pg_temp.feed_captured SELECT CAST(:vars AS text), "
                          f"ARRAY[{ids}]::bigint[], -t.k FROM \"{name}\" t"),
                     {"vars": json.dumps(variables)})


def start(conn: Connection, view: int, root: str, seq: int) -> None:
    """The view's first state is built at ``seq``: its root tables are
    watched from now on and its feed starts there."""
    for name, variables in krel.tables(conn, view).get(root, {}).values():
        krel.watch(conn, name, variables)
    conn.execute(text("UPDATE views SET feed_floor = :s WHERE id = :v"), {"s": seq, "v": view})


# ΔV stored at :s, removals first, then the feed compacted by retention — in
# one statement (three round trips a job less, design note 122). ``net``
# (a CTE, after ``last``) gives ΔV as its rows ``(binding, k)``: the
# captured changes netted per (variables, term ids), the JSON binding
# ({variable: term id}) built only for those whose count moved (design
# note 130) — ``CAPTURED`` — or a rendered statement's own root delta
# (design note 170). It is consumed only when :s is after the view's last
# delta (``AFTER_LAST``); else nothing is written and the caller decides
# (``record``). Both cuts read only the deltas they drop, not the deltas
# kept (design note 142): the count cut the oldest ``excess`` (the view's
# deltas, counted in ``views.feed_deltas``, the new head among them, less
# :keep) in seq order, the age cut those written before the age limit by
# the index of each view's deltas by time (``at`` grows with seq: a view's
# jobs run one at a time, each claimed as it starts, so the deltas dropped
# are always the oldest and the floor moves past them). ``recorded``'s
# CTEs go into a job's closing statement too (``storage.views_repo.close``,
# and the rendered statement that ends its job), with ``COUNTED`` setting
# the view's feed columns in its one update of the view's row.
LAST = "last AS (SELECT max(seq) AS seq FROM view_changes WHERE view_id = :v)"
AFTER_LAST = ":s > coalesce((SELECT seq FROM last), -1)"
CAPTURED = [
    f"c AS (DELETE FROM pg_temp.feed_captured WHERE {AFTER_LAST} RETURNING vars, ids, k)",
    "netted AS (SELECT vars, ids, sum(k) AS k FROM c GROUP BY vars, ids HAVING sum(k) <> 0)",
    """net AS (
  SELECT (SELECT coalesce(jsonb_object_agg(v.name, netted.ids[v.i]), '{}'::jsonb)
          FROM jsonb_array_elements_text(CAST(netted.vars AS jsonb)) WITH ORDINALITY
               AS v(name, i)) AS binding, netted.k
  FROM netted)"""]


def _among(seqs: str) -> str:
    """The condition that a row's seq is one of ``seqs`` (SQL: an array of
    the seqs of the view's oldest deltas), bounded by the first and last
    of them too (the same rows). A job's plans are generic, made while the
    feed was small: with the list alone Postgres could read every delta
    or row of the view and filter their seqs, a job's cost growing with
    the feed (design note 185). A range on the key's second column is an
    index condition: NULL, nothing read, when the list is empty; and from
    the first seq, not the dead entries of deltas dropped before."""
    return (f" AND seq BETWEEN (SELECT min(s) FROM unnest({seqs}) AS s)"
            f" AND (SELECT max(s) FROM unnest({seqs}) AS s) AND seq = ANY({seqs})")


_GONE_ROWS = _among("ARRAY(SELECT seq FROM gone)")  # the rows of the deltas ``gone`` dropped
_STORED = """head AS (INSERT INTO view_changes (view_id, seq, added, removed)
  SELECT :v, :s, coalesce(sum(k) FILTER (WHERE k > 0), 0), coalesce(-sum(k) FILTER (WHERE k < 0), 0)
  FROM net HAVING count(*) > 0 RETURNING added, removed),
body AS (INSERT INTO view_change_rows (view_id, seq, i, k, binding)
  SELECT :v, :s, row_number() OVER (ORDER BY k > 0, binding), k, binding FROM net),
excess AS (SELECT feed_deltas + (SELECT count(*) FROM head) - :keep AS n FROM views WHERE id = :v),
cut AS (SELECT ARRAY(SELECT seq FROM view_changes WHERE view_id = :v
                     ORDER BY view_id, seq LIMIT greatest((SELECT n FROM excess), 0))
  || ARRAY(SELECT seq FROM view_changes WHERE view_id = :v
           AND at < now() - make_interval(secs => :age)) AS seqs),
gone AS (DELETE FROM view_changes WHERE view_id = :v""" + \
    _among("CAST((SELECT seqs FROM cut) AS bigint[])") + """{gate} RETURNING seq),
gone_rows AS (DELETE FROM view_change_rows WHERE view_id = :v""" + _GONE_ROWS + ")"


def recorded_ctes(net: Sequence[str], gate: str = "") -> str:
    """The CTEs storing ΔV, which ``net`` (CTEs after ``LAST``) defines, and
    compacting the feed; ``gate``: a condition the compaction also needs,
    written ``AND …`` (``net`` is gated by its maker)."""
    return ", ".join([LAST, *net, _STORED.format(gate=gate)])


def from_rows(changes: str, gate: str = "") -> list[str]:
    """``net`` (for ``recorded_ctes``) from a query of ΔV's rows (binding,
    k), one per binding whose count moves, as a rendered statement gives
    its root's delta (design note 170); ``gate`` as there."""
    return [f"net AS (SELECT binding, k FROM ({changes}) AS r WHERE {AFTER_LAST}{gate})"]


RECORDED = recorded_ctes(CAPTURED)
COUNTED = ("feed_floor = greatest(feed_floor, (SELECT max(seq) FROM gone)), "
           "feed_deltas = feed_deltas + (SELECT count(*) FROM head) - (SELECT count(*) FROM gone)")
RECORD_RESULT = ("(SELECT seq FROM last) AS last, (SELECT added FROM head) AS added, "
                 "(SELECT removed FROM head) AS removed")
_RECORD = (f"WITH {RECORDED}, counted AS (UPDATE views SET {COUNTED} "
           "WHERE id = :v AND (EXISTS (SELECT FROM head) OR EXISTS (SELECT FROM gone))) "
           f"SELECT {RECORD_RESULT}")


def parameters(view: int, seq: int, retention: Retention) -> dict[str, object]:
    """``RECORDED``'s parameters."""
    return {"v": view, "s": seq, "age": retention.seconds, "keep": max(retention.changes, 1)}


def record(conn: Connection, view: int, seq: int, retention: Retention) -> tuple[int, int]:
    """ΔV captured in this transaction stored at ``seq``; then the feed
    compacted by ``retention``. (bindings added, removed), with counts.

    ``seq`` is after every recorded delta of the view: a job records at the
    position it brought the view to, and a view at position U reflects
    every change and consent move logged up to U, so a later job with
    changes to record is at a later position. The one exception is a
    rebuild whose new plan gives other results (a fixed bug) at the
    position of the last delta: the feed then restarts at ``seq``."""
    return recorded(conn, view, seq, retention,
                    driver.one(conn, _RECORD, parameters(view, seq, retention)))


def recorded(conn: Connection, view: int, seq: int, retention: Retention, found: Row
             ) -> tuple[int, int]:
    """``record``'s outcome from the row of a statement with ``RECORDED``
    (``RECORD_RESULT``'s columns): where ``seq`` was not after the view's
    last delta, nothing was consumed, and the feed restarts at ``seq``."""
    if found.last is not None and seq <= found.last:
        if not conn.execute(text("SELECT EXISTS (SELECT 1 FROM pg_temp.feed_captured)")).scalar():
            return 0, 0
        compact(conn, view, int(found.last), floor=seq)
        found = driver.one(conn, _RECORD, parameters(view, seq, retention))
    return (int(found.added or 0), int(found.removed or 0))


def last_seq(conn: Connection, view: int) -> int | None:
    """The position of the view's last recorded delta."""
    return conn.execute(text("SELECT max(seq) FROM view_changes WHERE view_id = :v"),
                        {"v": view}).scalar()


def compact(conn: Connection, view: int, upto: int, floor: int | None = None) -> None:
    """The view's deltas up to ``upto`` dropped: consumers resume from
    ``floor`` (``upto`` unless given) or later, or read a snapshot."""
    conn.execute(text(
        "WITH gone AS (DELETE FROM view_changes WHERE view_id = :v AND seq <= :u RETURNING seq), "
        f"gone_rows AS (DELETE FROM view_change_rows WHERE view_id = :v{_GONE_ROWS}) "
        "UPDATE views SET feed_floor = greatest(feed_floor, :f), "
        "feed_deltas = feed_deltas - (SELECT count(*) FROM gone) WHERE id = :v"),
        {"v": view, "u": upto, "f": upto if floor is None else floor})


# ------------------------------------------------------------------ reads


@dataclass(frozen=True)
class Delta:
    """One recorded ΔV: its position, its sizes, and the rows read of it
    (``rows``: (k, {variable: term id}), removals first, from ``skip`` on)."""

    seq: int
    added: int
    removed: int
    rows: list[tuple[int, dict[str, int]]]
    skip: int
    total: int  # rows the delta has in all

    @property
    def complete(self) -> bool:
        return self.skip + len(self.rows) == self.total


def deltas(conn: Connection, view: int, since: int, skip: int, budget: int) -> list[Delta]:
    """The view's deltas after ``since`` in seq order, the first of them from
    its row ``skip`` on, up to about ``budget`` rows in all: whole deltas
    while they fit, the last one cut at the budget (at least one row)."""
    heads = conn.execute(text(
        "SELECT c.seq, c.added, c.removed, (SELECT count(*) FROM view_change_rows r "
        " WHERE r.view_id = c.view_id AND r.seq = c.seq) AS total FROM view_changes c "
        "WHERE c.view_id = :v AND c.seq > :s ORDER BY c.seq LIMIT :n"),
        {"v": view, "s": since, "n": max(budget, 1)}).all()
    out: list[Delta] = []
    left = max(budget, 1)
    for i, h in enumerate(heads):
        first = skip if i == 0 else 0
        take = min(int(h.total) - first, left)
        if take <= 0 and out:
            break
        rows = _rows(conn, view, int(h.seq), first, take)
        out.append(Delta(int(h.seq), int(h.added), int(h.removed), rows, first, int(h.total)))
        left -= take
        if left <= 0:
            break
    return out


def _rows(conn: Connection, view: int, seq: int, skip: int, n: int
          ) -> list[tuple[int, dict[str, int]]]:
    return [(int(r.k), {v: int(t) for v, t in r.binding.items()}) for r in conn.execute(text(
        "SELECT k, binding FROM view_change_rows WHERE view_id = :v AND seq = :s AND i > :skip "
        "ORDER BY i LIMIT :n"), {"v": view, "s": seq, "skip": skip, "n": n})]


def term_ids(found: Sequence[Delta]) -> set[int]:
    return {t for d in found for _, b in d.rows for t in b.values()}


def position(conn: Connection, view: int) -> Row:
    """Where the view's feed stands: ``floor`` and ``last`` (its last delta's seq)."""
    return conn.execute(text(
        "SELECT v.feed_floor AS floor, (SELECT max(seq) FROM view_changes c "
        "WHERE c.view_id = v.id) AS last FROM views v WHERE v.id = :v"), {"v": view}).one()

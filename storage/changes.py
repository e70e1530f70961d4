"""The change log: every write to a pod is recorded here, in the writer's
transaction — the resource's diff applied to its quads and to the pod's
support-counted default graph (decision 5), one entry with its ΔG (the
default graph's set-membership changes), and one job for each view the
change can change. Whoever writes (LDP, ``podviews load``, an upstream sync)
calls ``record_change`` and cannot forget to wake the views."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Connection, Row, text

from storage import db, driver, queue
from storage.arrays import columns, unnest

IdTriple = tuple[int, int, int]
SPO = ("s", "p", "o")
SEQUENCE_LOCK = 0x706F6476  # advisory lock key serialising the change log
KIND = "apply_changes"  # the kind of job a change makes for each view it wakes


# The resource's diff applied to its quads and to the pod's default graph,
# the support-counted union of its resources (decision 5), with ``delta``
# the 0 <-> 1 transitions: the only changes views see. Inserted and deleted
# triples are disjoint, so the CTEs touch disjoint rows. The diff comes as
# arrays (``unnest``) or, for a large one, from staging tables. Inserted in
# key order, the quads' and the default graph's primary keys grow at their
# ends (bsbm-1000 in one write: 11 CPU-s in random order, 7.3 sorted).
# Writers of two resources of a pod may change one triple's count at once:
# the rows the diff touches are locked first (``held``), which waits for
# the other writer and reads the count it left, and whether a deleted
# triple's row goes (``gone``) or counts one less (``fewer``) is decided on
# that count, not on the one this statement's snapshot saw (design note
# 166). Every removed triple's row is one or the other, and the statement
# checks it did so (``podviews_all_removed``, migration 0031): else it
# fails as a serialization failure, which the writers retry. The rows are
# locked through one materialised CTE of the signed diff (``keyed``): as a
# ``UNION ALL`` of the two, Postgres's recheck of a row another writer had
# updated (EvalPlanQual) lost the row when the join's outer side was the
# union, and its count went unchanged (design note 179). They are locked
# in key order before any insertion (``up`` reads ``held`` first), so two
# writers lock shared rows in one order and do not deadlock over them (65
# deadlocks in 1,600 racing writes, 1 after). The statement is planned for
# each write (not prepared): its plan depends on the pod's size and the
# diff's, which a plan kept on a session would not follow.
#
# The resource's own diff, its named graph's change (migration 0013).
_DIFF = "(SELECT s, p, o, 1 AS sign FROM {ins} UNION ALL SELECT s, p, o, -1 FROM {dels})"
# The diff's rows (``d``) that are not ΔG's (``{delta}``), which ``change_quads``
# keeps: ΔG is part of the diff, with the same signs (a triple enters or leaves
# the pod only as it enters or leaves the resource), so a document's change is
# its change's rows of both tables (``diffs``). Most
# diffs are all ΔG (a triple held by one resource of its pod), and then the
# count alone, compared once before any row is read, says there is nothing to
# keep (migration 0033, design note 186).
_BEYOND = ("(SELECT count(*) FROM {delta}) < {diff} AND NOT EXISTS (SELECT 1 FROM {delta} x "
           "WHERE x.s = d.s AND x.p = d.p AND x.o = d.o)")
_APPLY = """
WITH ins AS (SELECT s, p, o FROM {ins} ORDER BY s, p, o),
del AS (SELECT s, p, o FROM {dels}),
quads_in AS (INSERT INTO quads (resource_id, s, p, o) SELECT :r, s, p, o FROM ins),
quads_out AS (DELETE FROM quads q USING del d
  WHERE q.resource_id = :r AND q.s = d.s AND q.p = d.p AND q.o = d.o),
keyed AS MATERIALIZED """ + _DIFF.format(ins="ins", dels="del") + """,
held AS MATERIALIZED (SELECT t.s, t.p, t.o, t.n, k.sign FROM pod_triples t JOIN keyed k
  ON t.pod_id = :pod AND t.s = k.s AND t.p = k.p AND t.o = k.o
  ORDER BY t.s, t.p, t.o FOR UPDATE OF t),
up AS (INSERT INTO pod_triples (pod_id, s, p, o, n) SELECT :pod, s, p, o, 1 FROM ins
  WHERE (SELECT count(*) FROM held) >= 0
  ON CONFLICT (pod_id, s, p, o) DO UPDATE SET n = pod_triples.n + 1 RETURNING s, p, o, n),
gone AS (DELETE FROM pod_triples t USING held h
  WHERE t.pod_id = :pod AND t.s = h.s AND t.p = h.p AND t.o = h.o AND h.sign < 0 AND h.n = 1
  RETURNING t.s, t.p, t.o),
fewer AS (UPDATE pod_triples t SET n = t.n - 1 FROM held h
  WHERE t.pod_id = :pod AND t.s = h.s AND t.p = h.p AND t.o = h.o AND h.sign < 0 AND h.n > 1
  RETURNING 1),
delta AS (SELECT s, p, o, 1 AS sign FROM up WHERE n = 1 UNION ALL SELECT s, p, o, -1 FROM gone
  WHERE podviews_all_removed((SELECT count(*) FROM gone) + (SELECT count(*) FROM fewer),
                             (SELECT count(*) FROM del)))
"""
# Writers take sequence numbers one at a time and hold them to commit (the
# advisory lock, taken before the row's sequence number is drawn: ``change``
# reads ``lock``), so commit order is sequence order: a snapshot holds a
# prefix of the log. In one statement the lock is taken once the pod's
# default graph is changed (``delta`` reads every row ``up``, ``gone`` and
# ``fewer`` return), as when it was a statement of its own: a writer never
# waits for a row of ``pod_triples`` while holding the lock the other
# writers wait for.
_LOCK = "SELECT pg_advisory_xact_lock(:k)"
_LOCK_APPLIED = _LOCK + " FROM (SELECT count(*) FROM delta) AS applied"
_CHANGE = ("INSERT INTO changes (pod_id, resource_id, path, inserted, deleted) "
           "SELECT :pod, :r, (SELECT path FROM resources WHERE id = :r), :ni, :nd {lock} "
           "RETURNING seq")
# The views reading the pod (:pod) that a change of these predicates (:preds)
# can wake (``views_woken``).
_WOKEN = ("SELECT DISTINCT v.id FROM consents c JOIN views v ON v.consumer_id = c.consumer_id "
          "AND (c.view_id IS NULL OR c.view_id = v.id) WHERE c.pod_id = :pod "
          "AND c.revoked_at IS NULL AND cardinality(CAST(:preds AS bigint[])) > 0 "
          "AND (v.predicates IS NULL OR v.predicates && CAST(:preds AS bigint[]))")
# A small write is one statement (design note 138): the diff applied, the
# change logged with its ΔG and diff, a job queued for each view it wakes
# (``_WOKEN``) and one NOTIFY if any; its text built once.
_WRITE = (
    _APPLY.format(ins=unnest(SPO, "i", "i"), dels=unnest(SPO, "d", "d"))
    + ", lock AS (" + _LOCK_APPLIED + "), change AS (" + _CHANGE.format(lock="FROM lock")
    + "), logged AS (INSERT INTO change_triples (seq, s, p, o, sign) "
    "SELECT change.seq, d.s, d.p, d.o, d.sign FROM change, delta d), "
    "diff AS (INSERT INTO change_quads (seq, s, p, o, sign) "
    "SELECT change.seq, d.s, d.p, d.o, d.sign FROM change, keyed AS d "
    "WHERE " + _BEYOND.format(delta="delta", diff=":ni + :nd") + " ORDER BY d.s, d.p, d.o), "
    "jobs AS (" + queue.insert_jobs(f"change, ({_WOKEN}) AS v",
                                    "jsonb_build_object('seq', change.seq)") + ") "
    "SELECT change.seq, (SELECT pg_notify(:channel, :kind) FROM (SELECT 1 FROM jobs LIMIT 1) "
    "AS j) FROM change")
# A diff of more triples than this is COPYed into staging tables, and its
# ΔG goes from one to the change log without passing through Python.
STAGED = 5_000


def record_change(conn: Connection, pod: int, rid: int, inserted: set[IdTriple],
                  deleted: set[IdTriple]) -> int:
    """Apply the resource's diff (term ids), log the change with its ΔG and
    enqueue the jobs of the views it can change; the change's sequence
    number."""
    # the resource's diff wakes the views: one reading the document (GRAPH, FROM)
    # sees a change the default graph does not
    predicates = sorted({t[1] for t in inserted} | {t[1] for t in deleted})
    keys = {"r": rid, "pod": pod, "k": SEQUENCE_LOCK, "ni": len(inserted), "nd": len(deleted),
            "preds": predicates}
    if len(inserted) + len(deleted) <= STAGED:
        return int(driver.one(conn, _WRITE, {
            **keys, "channel": queue.CHANNEL, "kind": KIND, **columns(inserted, SPO, "i"),
            **columns(deleted, SPO, "d")}, prepare=False).seq)
    _stage(conn, {"staged_ins": inserted, "staged_del": deleted, "staged_delta": ()})
    driver.rows(conn, _APPLY.format(ins="staged_ins", dels="staged_del")
                + "INSERT INTO staged_delta SELECT * FROM delta", keys, prepare=False)
    conn.execute(text(_LOCK), keys)
    seq = int(conn.execute(text(_CHANGE.format(lock="")), keys).scalar_one())
    conn.execute(text("INSERT INTO change_triples (seq, s, p, o, sign) "
                      "SELECT :seq, s, p, o, sign FROM staged_delta ORDER BY s, p, o"),
                 {"seq": seq})
    conn.execute(text("INSERT INTO change_quads (seq, s, p, o, sign) SELECT :seq, * FROM "
                      + _DIFF.format(ins="staged_ins", dels="staged_del") + " AS d WHERE "
                      + _BEYOND.format(delta="staged_delta", diff=":n") + " ORDER BY s, p, o"),
                 {"seq": seq, "n": len(inserted) + len(deleted)})
    queue.enqueue_many(conn, KIND, views_woken(conn, pod, set(predicates)),
                       {"seq": seq})
    return seq


def record_consent(conn: Connection, pod: int) -> int:
    """Log a consent granted or revoked over ``pod``: a change without
    triples, whose sequence number is the position from which the views it
    reaches reflect it (a job bringing a view to a position applies every
    consent logged up to it)."""
    conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": SEQUENCE_LOCK})
    return int(conn.execute(text(
        "INSERT INTO changes (pod_id, resource_id, inserted, deleted) VALUES (:pod, NULL, 0, 0) "
        "RETURNING seq"), {"pod": pod}).scalar_one())


def _stage(conn: Connection, tables: dict[str, Iterable[tuple[int, ...]]]) -> None:
    """Each set of rows into an empty temporary table of that name (s, p, o,
    and sign when the rows have it), by binary COPY."""
    raw = db.raw(conn).cursor()
    for name, rows in tables.items():
        conn.execute(text(f"CREATE TEMP TABLE IF NOT EXISTS {name} (s bigint, p bigint, "
                          "o bigint, sign smallint) ON COMMIT DROP"))
        conn.execute(text(f"TRUNCATE {name}"))
        with raw.copy(f"COPY {name} (s, p, o) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["int8", "int8", "int8"])
            for row in rows:
                copy.write_row(row)


def views_woken(conn: Connection, pod: int, predicates: set[int]) -> list[int]:
    """The views reading ``pod`` that a ΔG with these predicates can change:
    those matching any predicate, or one of them (design note 24). The
    others' watermarks stay where they are: they reflect the change already.

    A view reads the pod when an active consent covers it — found from the
    consents, not from ``consent_views``, whose rows a view's backfill adopts
    only when it commits: a write committed while the backfill ran (after its
    snapshot) must wake the view too, or the view would claim to reflect it."""
    return [int(r[0]) for r in conn.execute(text(_WOKEN), {"pod": pod,
                                                             "preds": sorted(predicates)})]


def _of_predicates(preds: str) -> str:
    """A change triple ``ct`` with one of the predicates ``preds`` (an SQL
    expression of term ids; NULL: any)."""
    return f"({preds} IS NULL OR ct.p = ANY({preds}))"


def diffs(a: str, u: str, preds: str) -> str:
    """The resources' diffs of the changes in (a, u] with one of the
    predicates ``preds`` (SQL expressions; NULL: any), as rows (seq, s, p,
    o, sign): each change's ΔG and the rest of its diff, which the write
    keeps apart (``_BEYOND``)."""
    return " UNION ALL ".join(
        f"SELECT ct.seq, ct.s, ct.p, ct.o, ct.sign FROM {table} ct "
        f"WHERE ct.seq > {a} AND ct.seq <= {u} AND {_of_predicates(preds)}"
        for table in ("change_triples", "change_quads"))


def net_changes(conn: Connection, pods: list[int], after: int, upto: int,
                predicates: list[int] | None = None) -> list[Row]:
    """For every triple changed in (after, upto] in these pods — with one of
    ``predicates`` (term ids) when given — the sum of its per-pod signs and
    whether some pod holds it now (at ``upto``)."""
    return list(conn.execute(text(_NET), net_parameters(pods, after, upto, predicates)).all())


def _net(pods: str, a: str, u: str, preds: str) -> str:
    """``net_changes``'s query over the SQL expressions of its parameters.
    Over one pod, a triple's signs in the log are its 0 <-> 1 transitions
    there, so a net change of +1 (-1) says the pod holds it (does not) at
    ``upto``: its holders are counted only where more pods are read or
    nothing moved (design note 167). They are counted by a lateral
    subquery, once: as a column of a subquery that the staging of ΔG reads
    three times, Postgres inlined the count into each use (design note
    152). The rendered path stages ΔG by the same query, its signs taken,
    in a function (``podviews_delta_staged``, migrations 0028 and 0030): a
    change here is a change there, in a migration of its own."""
    return (
        "SELECT d.s, d.p, d.o, d.net, h.holders "
        "FROM (SELECT ct.s, ct.p, ct.o, sum(ct.sign) AS net FROM change_triples ct "
        f"  WHERE ct.seq > {a} AND ct.seq <= {u} AND {_of_predicates(preds)} "
        "  AND ct.seq IN (SELECT seq FROM changes "
        f"    WHERE pod_id = ANY({pods}) AND seq > {a} AND seq <= {u}) "
        "  GROUP BY 1, 2, 3) AS d CROSS JOIN LATERAL (SELECT "
        f"  CASE WHEN cardinality({pods}) = 1 AND d.net <> 0 THEN CAST(d.net > 0 AS int) "
        "  ELSE (SELECT count(*) "
        f"  FROM pod_triples t WHERE t.pod_id = ANY({pods}) AND t.s = d.s AND t.p = d.p "
        "  AND t.o = d.o) END AS holders) AS h")


_PARAMETERS = (("pods", "bigint[]"), ("a", "bigint"), ("u", "bigint"), ("preds", "bigint[]"))
_NET = _net(*(f"CAST(:{name} AS {kind})" for name, kind in _PARAMETERS))

def net_parameters(pods: list[int], after: int, upto: int,
                   predicates: list[int] | None) -> dict[str, object]:
    return {"pods": pods, "a": after, "u": upto, "preds": predicates}


def change_count(conn: Connection, pods: list[int], after: int, upto: int,
                 predicates: list[int] | None = None) -> int:
    """Changed triples of these pods in (after, upto], with one of
    ``predicates`` when given: the size of a batch."""
    return int(conn.execute(text(
        "SELECT count(*) FROM change_triples ct JOIN changes c ON c.seq = ct.seq "
        f"WHERE c.pod_id = ANY(:p) AND c.seq > :a AND c.seq <= :u AND "
        f"{_of_predicates('CAST(:preds AS bigint[])')}"),
        {"p": pods, "a": after, "u": upto, "preds": predicates}).scalar_one())

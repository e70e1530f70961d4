"""What operators watch, read from the database at scrape time (so every
worker process is covered): the queue, job outcomes and sizes, each view's
lag and status, connected workers."""

from __future__ import annotations

from sqlalchemy import Connection, Row, text

_QUEUE = "SELECT kind, status, count(*) AS n FROM jobs WHERE status <> 'done' GROUP BY 1, 2"
# a job's work in triples (ΔG for changes, the pods' triples for a backfill),
# by kind and executor: a histogram over the jobs done
JOB_BUCKETS = (1, 10, 100, 1_000, 10_000, 100_000, 1_000_000)

# The done jobs still in the queue and those pruned from it (``prune``),
# counted alike: by kind and executor
_EXECUTOR = "coalesce(payload->>'executor', 'unknown')"
_FAILURES = (
    "SELECT kind, sum(dead) AS dead, sum(failed) AS failed FROM ("
    " SELECT kind, count(*) FILTER (WHERE status = 'dead') AS dead, "
    " coalesce(sum(GREATEST(attempts - CASE WHEN status = 'done' THEN 1 ELSE 0 END, 0)), 0) "
    " AS failed FROM jobs GROUP BY 1 "
    " UNION ALL SELECT kind, 0, failed FROM job_totals) AS j GROUP BY 1")
_DONE = (f"SELECT kind, executor, sum(n) AS n FROM (SELECT kind, {_EXECUTOR} AS executor, "
         "count(*) AS n FROM jobs WHERE status = 'done' GROUP BY 1, 2 "
         "UNION ALL SELECT kind, executor, done FROM job_totals) AS j GROUP BY 1, 2")
# how many sizes ``t`` fall at or under each bucket: the histogram's counts
_BUCKETS = [f"count(t) FILTER (WHERE t <= {b})" for b in JOB_BUCKETS]
_BUCKETED = ", ".join(f"{c} AS le{b}" for c, b in zip(_BUCKETS, JOB_BUCKETS, strict=True))
_SIZES = (
    "SELECT kind, executor, sum(n) AS n, sum(total) AS total, "
    + ", ".join(f"sum(le{b}) AS le{b}" for b in JOB_BUCKETS)
    + f" FROM (SELECT kind, executor, count(*) AS n, sum(t) AS total, {_BUCKETED} "
    f"FROM (SELECT kind, {_EXECUTOR} AS executor, CAST(payload->>'triples' AS bigint) AS t "
    "FROM jobs WHERE status = 'done') AS d WHERE t IS NOT NULL GROUP BY 1, 2 "
    "UNION ALL SELECT kind, executor, sized, triples, "
    + ", ".join(f"le[{i + 1}]" for i in range(len(JOB_BUCKETS)))
    + " FROM job_totals WHERE sized > 0) AS j GROUP BY 1, 2")
# The done jobs older than :age seconds deleted (their progress with them)
# and added to ``job_totals``: their number, failed attempts and sizes
_PRUNE = (
    "WITH gone AS (DELETE FROM jobs WHERE status = 'done' "
    " AND updated_at < now() - make_interval(secs => :age) "
    f" RETURNING kind, {_EXECUTOR} AS executor, attempts, "
    " CAST(payload->>'triples' AS bigint) AS t), "
    "counted AS (SELECT kind, executor, count(*) AS done, "
    " sum(GREATEST(attempts - 1, 0)) AS failed, count(t) AS sized, "
    f" coalesce(sum(t), 0) AS triples, ARRAY[{', '.join(_BUCKETS)}] AS le "
    "FROM gone GROUP BY 1, 2), "
    "added AS (INSERT INTO job_totals (kind, executor, done, failed, sized, triples, le) "
    " SELECT * FROM counted ON CONFLICT (kind, executor) DO UPDATE SET "
    " done = job_totals.done + excluded.done, failed = job_totals.failed + excluded.failed, "
    " sized = job_totals.sized + excluded.sized, triples = job_totals.triples + excluded.triples, "
    " le = ARRAY(SELECT a + b FROM unnest(job_totals.le, excluded.le) WITH ORDINALITY "
    "  AS u(a, b, i) ORDER BY i)) "
    "SELECT count(*) FROM gone")
_LAG = """
SELECT v.id, v.name, v.status,
       GREATEST(coalesce(max(CAST(j.payload->>'seq' AS bigint)), v.watermark) - v.watermark, 0)
         AS seqs,
       coalesce(extract(epoch FROM now() - min(j.created_at)), 0) AS seconds
FROM views v LEFT JOIN jobs j ON j.view_id = v.id AND j.status <> 'done'
GROUP BY v.id ORDER BY v.id"""




def prune(conn: Connection, age: float) -> int:
    """The done jobs older than ``age`` seconds leave the queue, counted in
    ``job_totals`` (the metrics read them there); how many left. The queue
    gains a row per view each write wakes: kept, they made every scrape
    read them all (design note 143)."""
    return int(conn.execute(text(_PRUNE), {"age": age}).scalar_one())


def queue_depth(conn: Connection) -> list[Row]:
    """Jobs not done: (kind, status, n)."""
    return list(conn.execute(text(_QUEUE)).all())


def job_failures(conn: Connection) -> list[Row]:
    """(kind, dead, failed attempts so far)."""
    return list(conn.execute(text(_FAILURES)).all())


def jobs_done(conn: Connection) -> list[Row]:
    """(kind, executor, n) of the jobs done."""
    return list(conn.execute(text(_DONE)).all())


def job_sizes(conn: Connection) -> list[Row]:
    """(kind, executor, n, total, le<bucket>…) of the jobs done."""
    return list(conn.execute(text(_SIZES)).all())


def view_lag(conn: Connection) -> list[Row]:
    """(id, name, status, seqs, seconds) of every view."""
    return list(conn.execute(text(_LAG)).all())


def workers_connected(conn: Connection) -> int:
    return int(conn.execute(text(
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE application_name LIKE 'podviews-worker%'")).scalar_one())


def ping(conn: Connection) -> None:
    conn.execute(text("SELECT 1"))

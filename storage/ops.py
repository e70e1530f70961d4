"""What operators watch, read from the database at scrape time (so every
worker process is covered): the queue, job outcomes and sizes, each view's
lag and status, connected workers."""

from __future__ import annotations

from sqlalchemy import Connection, Row, text

_QUEUE = "SELECT kind, status, count(*) AS n FROM jobs WHERE status <> 'done' GROUP BY 1, 2"
_FAILURES = ("SELECT kind, count(*) FILTER (WHERE status = 'dead') AS dead, "
             "coalesce(sum(GREATEST(attempts - CASE WHEN status = 'done' THEN 1 ELSE 0 END, 0)), 0) "
             "AS failed FROM jobs GROUP BY 1")
_DONE = ("SELECT kind, coalesce(payload->>'executor', 'unknown') AS executor, count(*) AS n "
         "FROM jobs WHERE status = 'done' GROUP BY 1, 2")
# a job's work in triples (ΔG for changes, the pods' triples for a backfill),
# by kind and executor: a histogram over the jobs done
JOB_BUCKETS = (1, 10, 100, 1_000, 10_000, 100_000, 1_000_000)
_SIZES = ("SELECT kind, payload->>'executor' AS executor, count(*) AS n, sum(t) AS total, "
          + ", ".join(f"count(*) FILTER (WHERE t <= {b}) AS le{b}" for b in JOB_BUCKETS)
          + " FROM (SELECT kind, payload, CAST(payload->>'triples' AS bigint) AS t FROM jobs "
          "WHERE status = 'done') AS j WHERE t IS NOT NULL GROUP BY 1, 2")
_LAG = """
SELECT v.id, v.name, v.status,
       GREATEST(coalesce(max(CAST(j.payload->>'seq' AS bigint)), v.watermark) - v.watermark, 0)
         AS seqs,
       coalesce(extract(epoch FROM now() - min(j.created_at)), 0) AS seconds
FROM views v LEFT JOIN jobs j ON j.view_id = v.id AND j.status <> 'done'
GROUP BY v.id ORDER BY v.id"""




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

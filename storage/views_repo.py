"""Views, consents and the change log as the pipeline reads them."""

from __future__ import annotations

from sqlalchemy import Connection, text


def create_view(conn: Connection, consumer: int, name: str, query: str) -> int:
    return int(conn.execute(text(
        "INSERT INTO views (consumer_id, name, query, status, watermark) "
        "VALUES (:c, :n, :q, 'backfilling', 0) RETURNING id"),
        {"c": consumer, "n": name, "q": query}).scalar_one())


def lock_view(conn: Connection, view: int):  # type: ignore[no-untyped-def]
    """The view's row, locked for this transaction; None if another holds it."""
    return conn.execute(text("SELECT id, query, status, watermark, consumer_id FROM views "
                             "WHERE id = :v FOR UPDATE SKIP LOCKED"), {"v": view}).one_or_none()


def set_state(conn: Connection, view: int, status: str, watermark: int) -> None:
    conn.execute(text("UPDATE views SET status = :s, watermark = :w WHERE id = :v"),
                 {"s": status, "w": watermark, "v": view})


def grant(conn: Connection, pod: int, consumer: int, view: int | None = None) -> int:
    cid = int(conn.execute(text(
        "INSERT INTO consents (pod_id, consumer_id, view_id) VALUES (:p, :c, :v) RETURNING id"),
        {"p": pod, "c": consumer, "v": view}).scalar_one())
    conn.execute(text("INSERT INTO consent_events (consent_id, action, actor) "
                      "VALUES (:i, 'grant', 'admin')"), {"i": cid})
    return cid


def readable_pods(conn: Connection, view: int) -> list[int]:
    """Pods whose owners consent to the view (or to all its consumer's views)."""
    return [int(r[0]) for r in conn.execute(text(
        "SELECT DISTINCT c.pod_id FROM consents c JOIN views v ON v.consumer_id = c.consumer_id "
        "WHERE v.id = :v AND c.revoked_at IS NULL AND (c.view_id IS NULL OR c.view_id = :v) "
        "ORDER BY 1"), {"v": view})]


def views_reading(conn: Connection, pod: int) -> list[int]:
    return [int(r[0]) for r in conn.execute(text(
        "SELECT DISTINCT v.id FROM views v JOIN consents c ON c.consumer_id = v.consumer_id "
        "WHERE c.pod_id = :p AND c.revoked_at IS NULL AND (c.view_id IS NULL OR c.view_id = v.id)"),
        {"p": pod})]


def last_seq(conn: Connection) -> int:
    return int(conn.execute(text("SELECT coalesce(max(seq), 0) FROM changes")).scalar_one())


def net_changes(conn: Connection, pods: list[int], after: int, upto: int) -> list:  # type: ignore[type-arg]
    """For every triple changed in (after, upto] in these pods: the sum of its
    per-pod signs and whether some pod holds it now (at ``upto``)."""
    return conn.execute(text(
        "WITH d AS (SELECT ct.s, ct.p, ct.o, sum(ct.sign) AS net FROM change_triples ct "
        "  WHERE ct.seq > :a AND ct.seq <= :u AND ct.seq IN (SELECT seq FROM changes "
        "    WHERE pod_id = ANY(:pods) AND seq > :a AND seq <= :u) GROUP BY 1, 2, 3) "
        "SELECT d.s, d.p, d.o, d.net, (SELECT count(*) FROM pod_triples t WHERE "
        "  t.pod_id = ANY(:pods) AND t.s = d.s AND t.p = d.p AND t.o = d.o) AS holders FROM d"),
        {"pods": pods, "a": after, "u": upto}).all()

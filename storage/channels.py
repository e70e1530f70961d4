"""Solid Notifications channels on views' results (design notes 90–99): who
subscribed, how they are reached, and the seq each has delivered up to — so
a channel's deliveries follow its view's change feed (``storage.feed``) in
order, exactly once, from whichever API process serves it. A webhook's
failed attempts are data: ``attempts`` in a row and the time of the next
one (exponential backoff), and ``dead`` once they are spent."""

from __future__ import annotations

from sqlalchemy import Connection, Row, text

WEBSOCKET, WEBHOOK = "websocket", "webhook"
ACTIVE, DEAD, ENDED = "active", "dead", "ended"


def create(conn: Connection, kind: str, token_hash: bytes, view: int, role: str,
           agent: int | None, webid: str, position: int, send_to: str | None = None) -> int:
    """A new active channel delivering the view's deltas after ``position``."""
    return int(conn.execute(text(
        "INSERT INTO notification_channels (kind, token_hash, view_id, role, agent_id, webid, "
        "send_to, position) VALUES (:k, :h, :v, :r, :a, :w, :s, :p) RETURNING id"),
        {"k": kind, "h": token_hash, "v": view, "r": role, "a": agent, "w": webid,
         "s": send_to, "p": position}).scalar_one())


def by_token(conn: Connection, token_hash: bytes) -> Row | None:
    return conn.execute(text("SELECT * FROM notification_channels WHERE token_hash = :h"),
                        {"h": token_hash}).one_or_none()


def advance(conn: Connection, channel: int, position: int) -> None:
    """Delivered up to ``position`` (never backwards); a webhook's failures forgotten."""
    conn.execute(text(
        "UPDATE notification_channels SET position = greatest(position, :p), attempts = 0, "
        "last_error = NULL WHERE id = :c"), {"c": channel, "p": position})


def end(conn: Connection, channel: int, status: str, why: str | None = None) -> None:
    conn.execute(text("UPDATE notification_channels SET status = :s, last_error = "
                      "coalesce(:w, last_error) WHERE id = :c"),
                 {"c": channel, "s": status, "w": why})


def delete(conn: Connection, token_hash: bytes) -> bool:
    return conn.execute(text("DELETE FROM notification_channels WHERE token_hash = :h"),
                        {"h": token_hash}).rowcount > 0


# A webhook with something to deliver: a delta after its position, or an end
# to tell (its view failed, or its position fell below the feed's floor).
_DUE = """
SELECT ch.* FROM notification_channels ch JOIN views v ON v.id = ch.view_id
WHERE ch.kind = 'webhook' AND ch.status = 'active' AND ch.next_attempt <= now()
  AND (EXISTS (SELECT 1 FROM view_changes c WHERE c.view_id = ch.view_id AND c.seq > ch.position)
       OR v.status = 'failed' OR v.feed_floor > ch.position)
ORDER BY ch.next_attempt LIMIT :n FOR UPDATE OF ch SKIP LOCKED
"""


def due(conn: Connection, limit: int) -> list[Row]:
    """Webhooks with something to deliver now, locked for this transaction
    (another process's deliverer skips them)."""
    return list(conn.execute(text(_DUE), {"n": limit}))


def failed(conn: Connection, channel: int, why: str, attempts: int, backoff: float) -> bool:
    """A failed attempt: the next after ``backoff`` · 2^(failures so far − 1)
    seconds, or the channel dead once ``attempts`` have failed in a row.
    True when it died."""
    return bool(conn.execute(text(
        "UPDATE notification_channels SET attempts = attempts + 1, last_error = :w, "
        "status = CASE WHEN attempts + 1 >= :n THEN 'dead' ELSE status END, "
        "next_attempt = now() + make_interval(secs => :b * power(2, attempts)) "
        "WHERE id = :c RETURNING status = 'dead'"),
        {"c": channel, "w": why[:2000], "n": attempts, "b": backoff}).scalar_one())


def counts(conn: Connection) -> list[Row]:
    """Channels by kind and status (``/metrics``)."""
    return list(conn.execute(text(
        "SELECT kind, status, count(*) AS n FROM notification_channels GROUP BY kind, status")))

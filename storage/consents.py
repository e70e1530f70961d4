"""Consents: a pod owner's consent for a consumer's views (decision 6:
consent is data), its audit trail, and where it stands for each view — a
pod feeds a view between the sequence numbers at which its grant and its
revoke applied (``consent_views``)."""

from __future__ import annotations

from sqlalchemy import Connection, Row, text

# the pods of a view's consents (``{view}``) that meet ``{where}``
_PODS = ("SELECT DISTINCT c.pod_id FROM consent_views cv JOIN consents c "
         "ON c.id = cv.consent_id WHERE cv.view_id = {view} AND {where} ORDER BY 1")
_APPLIED = "cv.granted_seq IS NOT NULL AND cv.revoked_seq IS NULL"
# the pods a view reads: consents whose grant has applied to it and whose
# revocation has not
READABLE = _PODS.format(view="{view}", where=_APPLIED)
# the pods whose consent is revoked but whose data the view's state still
# holds (its revoke job has not applied yet): the view must not be read
REVOKED_UNAPPLIED = _PODS.format(view="{view}", where=f"c.revoked_at IS NOT NULL AND {_APPLIED}")
# the pods whose consents in force reach the view, applied to it or not
CONSENTED = _PODS.format(view="{view}", where="c.revoked_at IS NULL")


def grant(conn: Connection, pod: int, consumer: int, view: int | None = None,
          actor: str = "admin") -> tuple[int, list[int]]:
    """Record a consent; the views it reaches (each gets a grant job)."""
    cid = int(conn.execute(text(
        "INSERT INTO consents (pod_id, consumer_id, view_id) VALUES (:p, :c, :v) RETURNING id"),
        {"p": pod, "c": consumer, "v": view}).scalar_one())
    conn.execute(text("INSERT INTO consent_events (consent_id, action, actor) "
                      "VALUES (:i, 'grant', :a)"), {"i": cid, "a": actor})
    views = [int(r[0]) for r in conn.execute(text(
        "INSERT INTO consent_views (consent_id, view_id) SELECT :i, id FROM views "
        "WHERE consumer_id = :c AND (CAST(:v AS bigint) IS NULL OR id = :v) RETURNING view_id"),
        {"i": cid, "c": consumer, "v": view})]
    return cid, views


def revoke(conn: Connection, consent: int, actor: str = "admin") -> tuple[int, list[int]]:
    """Mark a consent revoked: its pod, and the views it reached (each gets a
    revoke job)."""
    pod = int(conn.execute(text("UPDATE consents SET revoked_at = now() WHERE id = :i "
                                "RETURNING pod_id"), {"i": consent}).scalar_one())
    conn.execute(text("INSERT INTO consent_events (consent_id, action, actor) "
                      "VALUES (:i, 'revoke', :a)"), {"i": consent, "a": actor})
    return pod, [int(r[0]) for r in conn.execute(text(
        "SELECT view_id FROM consent_views WHERE consent_id = :i"), {"i": consent})]


def consent_view(conn: Connection, consent: int, view: int) -> Row | None:
    return conn.execute(text(
        "SELECT cv.granted_seq, cv.revoked_seq, c.pod_id, c.revoked_at FROM consent_views cv "
        "JOIN consents c ON c.id = cv.consent_id WHERE cv.consent_id = :i AND cv.view_id = :v"),
        {"i": consent, "v": view}).one_or_none()


def mark_consent(conn: Connection, consent: int, view: int, column: str, seq: int) -> None:
    assert column in ("granted_seq", "revoked_seq")
    conn.execute(text(f"UPDATE consent_views SET {column} = :s "
                      "WHERE consent_id = :i AND view_id = :v"),
                 {"s": seq, "i": consent, "v": view})


def adopt_consents(conn: Connection, view: int, seq: int) -> None:
    """At a backfill: every active consent covering the view applies from
    ``seq``, and every revoked one has left it by then."""
    conn.execute(text(
        "INSERT INTO consent_views (consent_id, view_id, granted_seq) "
        "SELECT c.id, v.id, :s FROM consents c JOIN views v ON v.consumer_id = c.consumer_id "
        "WHERE v.id = :v AND c.revoked_at IS NULL AND (c.view_id IS NULL OR c.view_id = v.id) "
        "ON CONFLICT (consent_id, view_id) DO UPDATE SET granted_seq = :s"),
        {"v": view, "s": seq})
    _leave_revoked(conn, view, seq)


# a consent (c) reaching a view (cv) that is not applied to it: in force and
# not entered, or revoked and not left
UNSETTLED = ("((c.revoked_at IS NULL AND cv.granted_seq IS NULL) "
             "OR (c.revoked_at IS NOT NULL AND cv.revoked_seq IS NULL))")


def settle(conn: Connection, view: int, seq: int) -> None:
    """Every consent reaching the view applied at ``seq``: those in force
    that had not entered it, and the revoked ones that had not left it."""
    conn.execute(text(
        "UPDATE consent_views cv SET "
        "granted_seq = CASE WHEN c.revoked_at IS NULL THEN :s ELSE cv.granted_seq END, "
        "revoked_seq = CASE WHEN c.revoked_at IS NULL THEN cv.revoked_seq ELSE :s END "
        f"FROM consents c WHERE c.id = cv.consent_id AND cv.view_id = :v AND {UNSETTLED}"),
        {"v": view, "s": seq})


def _leave_revoked(conn: Connection, view: int, seq: int) -> None:
    """Every revoked consent that had not left the view leaves it at ``seq``."""
    conn.execute(text(
        "UPDATE consent_views cv SET revoked_seq = :s FROM consents c WHERE c.id = cv.consent_id "
        "AND cv.view_id = :v AND c.revoked_at IS NOT NULL AND cv.revoked_seq IS NULL"),
        {"v": view, "s": seq})


def consented_pods_of(conn: Connection, view: int) -> list[int]:
    """Pods whose consents in force reach the view (applied to it or not)."""
    return [int(r[0]) for r in conn.execute(text(CONSENTED.format(view=":v")), {"v": view})]


def consented_pods(conn: Connection, consumer: int) -> list[int]:
    """Pods whose owners consent to all of the consumer's views."""
    return [int(r[0]) for r in conn.execute(text(
        "SELECT DISTINCT pod_id FROM consents WHERE consumer_id = :c AND view_id IS NULL "
        "AND revoked_at IS NULL ORDER BY 1"), {"c": consumer})]


def readable_pods(conn: Connection, view: int) -> list[int]:
    """Pods the view reads: consents whose grant has applied to it and whose
    revocation has not."""
    return [int(r[0]) for r in conn.execute(text(READABLE.format(view=":v")), {"v": view})]


_CONSENTS = """
SELECT c.id, p.name AS pod, p.owner_id, a.webid AS consumer, c.view_id AS view,
       c.granted_at, c.revoked_at,
       (SELECT coalesce(json_agg(json_build_object('action', e.action, 'actor', e.actor,
                                                   'at', e.at) ORDER BY e.id), '[]')
          FROM consent_events e WHERE e.consent_id = c.id) AS events
FROM consents c JOIN pods p ON p.id = c.pod_id JOIN agents a ON a.id = c.consumer_id
"""


def consents(conn: Connection, owner: int | None = None) -> list[Row]:
    """Every consent with its audit trail (of one owner's pods, if given)."""
    return list(conn.execute(text(_CONSENTS + " WHERE CAST(:o AS bigint) IS NULL OR "
                                  "p.owner_id = :o ORDER BY c.id"), {"o": owner}).all())


def consent(conn: Connection, consent_id: int) -> Row | None:
    return conn.execute(text(_CONSENTS + " WHERE c.id = :i"), {"i": consent_id}).one_or_none()

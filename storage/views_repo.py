"""Views, consents and the change log as the pipeline reads them."""

from __future__ import annotations

from sqlalchemy import Connection, text


def create_view(conn: Connection, consumer: int, name: str, query: str,
                predicates: list[int] | None) -> int:
    """``predicates``: the term ids of the predicates the view can match
    (None: any), which decide the writes that wake it."""
    return int(conn.execute(text(
        "INSERT INTO views (consumer_id, name, query, status, watermark, predicates) "
        "VALUES (:c, :n, :q, 'backfilling', 0, :preds) RETURNING id"),
        {"c": consumer, "n": name, "q": query, "preds": predicates}).scalar_one())


# the pods a view reads: consents whose grant has applied to it and whose
# revocation has not
_READABLE = ("SELECT DISTINCT c.pod_id FROM consent_views cv JOIN consents c "
             "ON c.id = cv.consent_id WHERE cv.view_id = {view} AND cv.granted_seq IS NOT NULL "
             "AND cv.revoked_seq IS NULL ORDER BY 1")


def lock_view(conn: Connection, view: int):  # type: ignore[no-untyped-def]
    """The view's row, locked for this transaction; None if another holds it.
    With it, in the same statement, what a job reads next: ``upto`` (the last
    change's seq), ``pods`` (the pods it reads) and ``tables`` (its K-relation
    tables: rows of ``state.view_tables``)."""
    return conn.execute(text(
        "SELECT v.id, v.query, v.status, v.watermark, v.consumer_id, v.predicates, "
        " (SELECT coalesce(max(seq), 0) FROM changes) AS upto, "
        f" ARRAY({_READABLE.format(view='v.id')}) AS pods, "
        " (SELECT coalesce(json_agg(json_build_array(k.node, k.table_name, k.variables)), "
        "   '[]') FROM krel_tables k WHERE k.view_id = v.id) AS tables "
        "FROM views v WHERE v.id = :v FOR NO KEY UPDATE OF v SKIP LOCKED"),
        {"v": view}).one_or_none()


def set_state(conn: Connection, view: int, status: str, watermark: int) -> None:
    conn.execute(text("UPDATE views SET status = :s, watermark = :w WHERE id = :v"),
                 {"s": status, "w": watermark, "v": view})


def advance(conn: Connection, view: int, status: str, upto: int) -> None:
    """The view's watermark moves to ``upto``; its queued change jobs that
    this covers are done too ("coalesced"). One statement."""
    conn.execute(text(
        "WITH moved AS (UPDATE views SET status = :s, watermark = :u WHERE id = :v) "
        "UPDATE jobs SET status = 'done', updated_at = now(), "
        "payload = payload || CAST('{\"executor\": \"coalesced\"}' AS jsonb) WHERE id IN ("
        " SELECT id FROM jobs WHERE view_id = :v AND kind = 'apply_changes' "
        " AND status = 'queued' AND CAST(payload->>'seq' AS bigint) <= :u "
        " FOR NO KEY UPDATE SKIP LOCKED)"), {"s": status, "v": view, "u": upto})


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


def revoke(conn: Connection, consent: int, actor: str = "admin") -> list[int]:
    """Mark a consent revoked; the views it reached (each gets a revoke job)."""
    conn.execute(text("UPDATE consents SET revoked_at = now() WHERE id = :i"), {"i": consent})
    conn.execute(text("INSERT INTO consent_events (consent_id, action, actor) "
                      "VALUES (:i, 'revoke', :a)"), {"i": consent, "a": actor})
    return [int(r[0]) for r in conn.execute(text(
        "SELECT view_id FROM consent_views WHERE consent_id = :i"), {"i": consent})]


def consent_view(conn: Connection, consent: int, view: int):  # type: ignore[no-untyped-def]
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
    """At backfill: every active consent covering the view applies from ``seq``."""
    conn.execute(text(
        "INSERT INTO consent_views (consent_id, view_id, granted_seq) "
        "SELECT c.id, v.id, :s FROM consents c JOIN views v ON v.consumer_id = c.consumer_id "
        "WHERE v.id = :v AND c.revoked_at IS NULL AND (c.view_id IS NULL OR c.view_id = v.id) "
        "ON CONFLICT (consent_id, view_id) DO UPDATE SET granted_seq = :s"),
        {"v": view, "s": seq})


def readable_pods(conn: Connection, view: int) -> list[int]:
    """Pods the view reads: consents whose grant has applied to it and whose
    revocation has not."""
    return [int(r[0]) for r in conn.execute(text(_READABLE.format(view=":v")), {"v": view})]


def pod_entry(conn: Connection, pod: int, others: list[int]) -> list:  # type: ignore[type-arg]
    """The triples of ``pod`` that none of ``others`` holds: what the pod adds
    to (or takes from) a view's input when it enters (or leaves)."""
    return conn.execute(text(
        "SELECT s, p, o FROM pod_triples t WHERE t.pod_id = :p AND NOT EXISTS ("
        " SELECT 1 FROM pod_triples u WHERE u.pod_id = ANY(:others) AND u.s = t.s "
        " AND u.p = t.p AND u.o = t.o)"), {"p": pod, "others": others}).all()


def views_reading(conn: Connection, pod: int, seq: int) -> list[int]:
    """The views reading ``pod`` that change ``seq`` can change: its ΔG has a
    triple with one of their predicates."""
    return [int(r[0]) for r in conn.execute(text(
        "SELECT DISTINCT cv.view_id FROM consent_views cv JOIN consents c ON c.id = cv.consent_id "
        "JOIN views v ON v.id = cv.view_id WHERE c.pod_id = :p AND c.revoked_at IS NULL "
        "AND EXISTS (SELECT 1 FROM change_triples ct WHERE ct.seq = :seq "
        "            AND (v.predicates IS NULL OR ct.p = ANY(v.predicates)))"),
        {"p": pod, "seq": seq})]


def last_seq(conn: Connection) -> int:
    return int(conn.execute(text("SELECT coalesce(max(seq), 0) FROM changes")).scalar_one())


# a change triple ``ct`` with one of the predicates :preds (term ids; NULL: any)
_OF_PREDICATES = "(CAST(:preds AS bigint[]) IS NULL OR ct.p = ANY(CAST(:preds AS bigint[])))"


def net_changes(conn: Connection, pods: list[int], after: int, upto: int,  # type: ignore[type-arg]
                predicates: list[int] | None = None) -> list:
    """For every triple changed in (after, upto] in these pods — with one of
    ``predicates`` (term ids) when given — the sum of its per-pod signs and
    whether some pod holds it now (at ``upto``)."""
    return conn.execute(text(
        "WITH d AS (SELECT ct.s, ct.p, ct.o, sum(ct.sign) AS net FROM change_triples ct "
        f"  WHERE ct.seq > :a AND ct.seq <= :u AND {_OF_PREDICATES} "
        "  AND ct.seq IN (SELECT seq FROM changes "
        "    WHERE pod_id = ANY(:pods) AND seq > :a AND seq <= :u) GROUP BY 1, 2, 3) "
        "SELECT d.s, d.p, d.o, d.net, (SELECT count(*) FROM pod_triples t WHERE "
        "  t.pod_id = ANY(:pods) AND t.s = d.s AND t.p = d.p AND t.o = d.o) AS holders FROM d"),
        {"pods": pods, "a": after, "u": upto, "preds": predicates}).all()


def triple_count(conn: Connection, pods: list[int]) -> int:
    """Triples held by these pods (with repeats across pods): the size of a
    view's input, for the job router."""
    return int(conn.execute(text("SELECT count(*) FROM pod_triples WHERE pod_id = ANY(:p)"),
                            {"p": pods}).scalar_one())


def change_count(conn: Connection, pods: list[int], after: int, upto: int,
                 predicates: list[int] | None = None) -> int:
    """Changed triples of these pods in (after, upto], with one of
    ``predicates`` when given: the size of a batch."""
    return int(conn.execute(text(
        "SELECT count(*) FROM change_triples ct JOIN changes c ON c.seq = ct.seq "
        f"WHERE c.pod_id = ANY(:p) AND c.seq > :a AND c.seq <= :u AND {_OF_PREDICATES}"),
        {"p": pods, "a": after, "u": upto, "preds": predicates}).scalar_one())


def view_row(conn: Connection, view: int):  # type: ignore[no-untyped-def]
    return conn.execute(text("SELECT id, consumer_id, name, query, status, watermark, created_at "
                             "FROM views WHERE id = :v"), {"v": view}).one_or_none()


def views_of(conn: Connection, consumer: int) -> list:  # type: ignore[type-arg]
    return conn.execute(text("SELECT id, consumer_id, name, query, status, watermark, created_at "
                             "FROM views WHERE consumer_id = :c ORDER BY id"),
                        {"c": consumer}).all()


def unfinished_jobs(conn: Connection, view: int) -> list:  # type: ignore[type-arg]
    """The view's jobs not done yet: (kind, status, last_error, done, total,
    seq: the change-log position the job brings the view to, if any)."""
    return conn.execute(text(
        "SELECT j.kind, j.status, j.last_error, p.done, p.total, "
        "CAST(j.payload->>'seq' AS bigint) AS seq FROM jobs j "
        "LEFT JOIN job_progress p ON p.job_id = j.id "
        "WHERE j.view_id = :v AND j.status <> 'done' ORDER BY j.id"), {"v": view}).all()


def _state_tables(conn: Connection, view: int) -> list[str]:
    return [r[0] for r in conn.execute(
        text("SELECT table_name FROM krel_tables WHERE view_id = :v"), {"v": view})]


def state_rows(conn: Connection, view: int) -> int:
    """Rows in the view's K-relation tables: its auxiliary state."""
    return sum(int(conn.execute(text(f'SELECT count(*) FROM "{t}"')).scalar_one())
               for t in _state_tables(conn, view))


def drop_view(conn: Connection, view: int) -> None:
    """The view, its jobs, its consents' links and its K-relation tables.
    Waits for a job running on it (the view's row lock)."""
    conn.execute(text("SELECT id FROM views WHERE id = :v FOR UPDATE"), {"v": view})
    for table in _state_tables(conn, view):
        conn.execute(text(f'DROP TABLE IF EXISTS "{table}"'))
    conn.execute(text("DELETE FROM views WHERE id = :v"), {"v": view})


_CONSENTS = """
SELECT c.id, p.name AS pod, p.owner_id, a.webid AS consumer, c.view_id AS view,
       c.granted_at, c.revoked_at,
       (SELECT coalesce(json_agg(json_build_object('action', e.action, 'actor', e.actor,
                                                   'at', e.at) ORDER BY e.id), '[]')
          FROM consent_events e WHERE e.consent_id = c.id) AS events
FROM consents c JOIN pods p ON p.id = c.pod_id JOIN agents a ON a.id = c.consumer_id
"""


def consents(conn: Connection, owner: int | None = None) -> list:  # type: ignore[type-arg]
    """Every consent with its audit trail (of one owner's pods, if given)."""
    return conn.execute(text(_CONSENTS + " WHERE CAST(:o AS bigint) IS NULL OR p.owner_id = :o "
                             "ORDER BY c.id"), {"o": owner}).all()


def consent(conn: Connection, consent_id: int):  # type: ignore[no-untyped-def]
    return conn.execute(text(_CONSENTS + " WHERE c.id = :i"), {"i": consent_id}).one_or_none()

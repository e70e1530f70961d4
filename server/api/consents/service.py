"""Consents (architecture decision 6: consent is data): a pod's owner (or the
admin) grants a consumer's views the pod, or revokes it; each view the
consent reaches gets a grant or revoke job, stamped with the change-log
position it was recorded at — a change of its own in the log, so a view's
state at a position is a function of the log up to it (readers passing that
``min_seq`` wait for it; the change feed records its ΔV there)."""

from __future__ import annotations

from sqlalchemy import Connection, Engine, Row

from server.api.auth import Principal, require
from server.api.consents.schemas import ConsentIn, ConsentOut
from server.errors import BadRequest, Conflict, NotFound
from storage import changes, consents, db, pods, queue, views_repo


def grant(engine: Engine, who: Principal, body: ConsentIn) -> tuple[ConsentOut, int]:
    """The consent, and the change-log position its grant is applied at."""
    require(who, "admin", "owner")
    with engine.begin() as c:
        pod = pods.pod_row(c, body.pod)
        if pod is None or not (who.is_admin() or pod.owner_id == who.agent):
            raise NotFound(f"no pod {body.pod}")
        consumer = pods.agent_by_webid(c, body.consumer)
        if consumer is None or consumer.role != "consumer":
            raise BadRequest(f"{body.consumer} is not an agent with the role consumer")
        if body.view is not None:
            view = views_repo.view_row(c, body.view)
            if view is None or view.consumer_id != consumer.id:
                raise BadRequest(f"{body.consumer} has no view {body.view}")
        cid, at = record_grant(c, pod.id, consumer.id, body.view, who.webid)
        return out(_row(c, cid)), at


def record_grant(conn: Connection, pod: int, consumer: int, view: int | None = None,
                 actor: str = "admin") -> tuple[int, int]:
    """Consent of ``pod`` for a consumer's views (or one), in the caller's
    transaction: (the consent, the change-log position its grant applies at)."""
    cid, reached = consents.grant(conn, pod, consumer, view, actor)
    at = changes.record_consent(conn, pod)
    queue.enqueue_many(conn, "grant", reached, {"consent": cid, "seq": at})
    return cid, at


def listing(engine: Engine, who: Principal) -> list[ConsentOut]:
    require(who, "admin", "owner")
    with db.reading(engine) as c:
        return [out(r) for r in consents.consents(c, None if who.is_admin() else who.agent)]


def revoke(engine: Engine, who: Principal, consent_id: int) -> int:
    """Revoke a consent; the change-log position its revocation applies at."""
    require(who, "admin", "owner")
    with engine.begin() as c:
        found = consents.consent(c, consent_id)
        if found is None or not (who.is_admin() or found.owner_id == who.agent):
            raise NotFound(f"no consent {consent_id}")
        if found.revoked_at is not None:
            raise Conflict(f"consent {consent_id} was revoked at {found.revoked_at.isoformat()}")
        return record_revoke(c, consent_id, who.webid)


def record_revoke(conn: Connection, consent: int, actor: str = "admin") -> int:
    """Revoke a consent in the caller's transaction; the change-log position
    its revocation applies at."""
    pod, reached = consents.revoke(conn, consent, actor)
    at = changes.record_consent(conn, pod)
    queue.enqueue_many(conn, "revoke", reached, {"consent": consent, "seq": at})
    return at


def _row(conn: Connection, consent_id: int) -> Row:
    found = consents.consent(conn, consent_id)
    assert found is not None
    return found


def out(r: Row) -> ConsentOut:
    return ConsentOut(id=r.id, pod=r.pod, consumer=r.consumer, view=r.view,
                      granted_at=r.granted_at, revoked_at=r.revoked_at, events=r.events)

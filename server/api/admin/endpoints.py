"""Admin endpoints: agents and pods (the admin), consents (the admin or the
pod's owner), with an audit trail of who granted and revoked."""

from __future__ import annotations

from typing import Annotated

import sqlalchemy as sa
from fastapi import APIRouter, Depends, Request, Response

from server.api.admin.schemas import AgentIn, AgentOut, ConsentIn, ConsentOut, PodIn, PodOut
from server.api.auth import Principal, new_token, principal, require
from server.api.params import Id
from server.errors import BadRequest, Conflict, NotFound
from server.maintenance import jobs as pipeline
from storage import pods, views_repo

router = APIRouter(prefix="/admin", tags=["admin"])
Who = Annotated[Principal, Depends(principal)]


@router.post("/agents", status_code=201, response_model=AgentOut)
def create_agent(body: AgentIn, who: Who, request: Request, response: Response) -> AgentOut:
    require(who, "admin")
    token, hashed = new_token()
    try:
        with request.app.state.engine.begin() as c:
            agent = pods.create_agent(c, body.webid, body.role, hashed)
    except sa.exc.IntegrityError:
        raise Conflict(f"an agent with WebID {body.webid} exists") from None
    response.headers["Location"] = f"/admin/agents/{agent}"
    return AgentOut(id=agent, webid=body.webid, role=body.role, token=token)


@router.post("/pods", status_code=201, response_model=PodOut)
def create_pod(body: PodIn, who: Who, request: Request, response: Response) -> PodOut:
    require(who, "admin")
    try:
        with request.app.state.engine.begin() as c:
            owner = pods.agent_by_webid(c, body.owner)
            if owner is None or owner.role != "owner":
                raise BadRequest(f"{body.owner} is not an agent with the role owner")
            pod = pods.create_pod(c, body.name, owner.id)
    except sa.exc.IntegrityError:
        raise Conflict(f"a pod named {body.name} exists") from None
    url = f"{request.app.state.settings.public_base}/pods/{body.name}/"
    response.headers["Location"] = url
    return PodOut(id=pod, name=body.name, owner=body.owner, url=url)


@router.post("/consents", status_code=201, response_model=ConsentOut)
def grant(body: ConsentIn, who: Who, request: Request, response: Response) -> ConsentOut:
    require(who, "admin", "owner")
    with request.app.state.engine.begin() as c:
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
        cid = pipeline.grant(c, pod.id, consumer.id, body.view, actor=who.webid)
        out = _out(views_repo.consent(c, cid))
    response.headers["Location"] = f"/admin/consents/{cid}"
    return out


@router.get("/consents", response_model=list[ConsentOut])
def list_consents(who: Who, request: Request) -> list[ConsentOut]:
    require(who, "admin", "owner")
    with request.app.state.engine.connect() as c:
        rows = views_repo.consents(c, None if who.is_admin() else who.agent)
    return [_out(r) for r in rows]


@router.delete("/consents/{consent_id}", status_code=204)
def revoke(consent_id: Id, who: Who, request: Request) -> Response:
    require(who, "admin", "owner")
    with request.app.state.engine.begin() as c:
        row = views_repo.consent(c, consent_id)
        if row is None or not (who.is_admin() or row.owner_id == who.agent):
            raise NotFound(f"no consent {consent_id}")
        if row.revoked_at is not None:
            raise Conflict(f"consent {consent_id} was revoked at {row.revoked_at.isoformat()}")
        pipeline.revoke(c, consent_id, actor=who.webid)
    return Response(status_code=204)


def _out(row) -> ConsentOut:  # type: ignore[no-untyped-def]
    return ConsentOut(id=row.id, pod=row.pod, consumer=row.consumer, view=row.view,
                      granted_at=row.granted_at, revoked_at=row.revoked_at, events=row.events)

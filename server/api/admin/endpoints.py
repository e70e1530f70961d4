"""Admin endpoints: agents and pods (the admin only). Consents, which pod
owners manage too, are in ``server.api.consents``."""

from __future__ import annotations

import sqlalchemy as sa
from fastapi import APIRouter, Response

from server.api.admin.schemas import AgentIn, AgentOut, PodIn, PodOut
from server.api.auth import new_token, require
from server.api.deps import Config, Db, Who
from server.errors import BadRequest, Conflict
from storage import pods

router = APIRouter(prefix="/admin", tags=["admin"])


@router.post("/agents", status_code=201, response_model=AgentOut)
def create_agent(body: AgentIn, who: Who, db: Db, response: Response) -> AgentOut:
    require(who, "admin")
    token, hashed = new_token()
    try:
        with db.begin() as c:
            agent = pods.create_agent(c, body.webid, body.role, hashed)
    except sa.exc.IntegrityError:
        raise Conflict(f"an agent with WebID {body.webid} exists") from None
    response.headers["Location"] = f"/admin/agents/{agent}"
    return AgentOut(id=agent, webid=body.webid, role=body.role, token=token)


@router.post("/pods", status_code=201, response_model=PodOut)
def create_pod(body: PodIn, who: Who, db: Db, settings: Config, response: Response) -> PodOut:
    require(who, "admin")
    try:
        with db.begin() as c:
            owner = pods.agent_by_webid(c, body.owner)
            if owner is None or owner.role != "owner":
                raise BadRequest(f"{body.owner} is not an agent with the role owner")
            pod = pods.create_pod(c, body.name, owner.id)
    except sa.exc.IntegrityError:
        raise Conflict(f"a pod named {body.name} exists") from None
    url = f"{settings.public_base}/pods/{body.name}/"
    response.headers["Location"] = url
    return PodOut(id=pod, name=body.name, owner=body.owner, url=url)

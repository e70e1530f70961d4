"""Consent endpoints, under /admin: grant, list (with the audit trail),
revoke. Grants and revocations answer with the ``Podviews-Seq`` they apply
at: a reader passing it as ``min_seq`` sees the view with (or without) the
pod."""

from __future__ import annotations

from fastapi import APIRouter, Response

from server.api.consents import service
from server.api.consents.schemas import ConsentIn, ConsentOut
from server.api.deps import Db, Who
from server.api.params import Id

router = APIRouter(prefix="/admin", tags=["consents"])


@router.post("/consents", status_code=201, response_model=ConsentOut)
def grant(body: ConsentIn, who: Who, db: Db, response: Response) -> ConsentOut:
    out, seq = service.grant(db, who, body)
    response.headers["Location"] = f"/admin/consents/{out.id}"
    response.headers["Podviews-Seq"] = str(seq)
    return out


@router.get("/consents", response_model=list[ConsentOut])
def list_consents(who: Who, db: Db) -> list[ConsentOut]:
    return service.listing(db, who)


@router.delete("/consents/{consent_id}", status_code=204)
def revoke(consent_id: Id, who: Who, db: Db) -> Response:
    seq = service.revoke(db, who, consent_id)
    return Response(status_code=204, headers={"Podviews-Seq": str(seq)})

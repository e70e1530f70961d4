from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from server.api.admin.schemas import POD_NAME


class ConsentIn(BaseModel):
    pod: str = Field(pattern=POD_NAME)
    consumer: str = Field(min_length=1, description="the consumer's WebID")
    view: int | None = Field(default=None, ge=1, le=2**62,
                             description="one of the consumer's views; absent: all of them")


class ConsentEvent(BaseModel):
    action: str
    actor: str
    at: datetime


class ConsentOut(BaseModel):
    id: int
    pod: str
    consumer: str
    view: int | None
    granted_at: datetime
    revoked_at: datetime | None
    events: list[ConsentEvent]

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

POD_NAME = r"^[a-z0-9][a-z0-9-]{0,62}$"


class AgentIn(BaseModel):
    webid: str = Field(min_length=1, max_length=2000, pattern=r"^[a-zA-Z][a-zA-Z0-9+.-]*:\S+$",
                       description="the agent's WebID (an IRI)")
    role: Literal["owner", "consumer"]


class AgentOut(BaseModel):
    id: int
    webid: str
    role: str
    token: str = Field(description="bearer token; shown once, stored hashed")


class PodIn(BaseModel):
    name: str = Field(pattern=POD_NAME, description="lower-case letters, digits and '-'")
    owner: str = Field(min_length=1, description="the owner's WebID")


class PodOut(BaseModel):
    id: int
    name: str
    owner: str
    url: str

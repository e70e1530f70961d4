from __future__ import annotations

from pydantic import BaseModel, Field


class ViewIn(BaseModel):
    name: str = Field(min_length=1, max_length=200)
    query: str = Field(min_length=1, description="a SPARQL 1.1 SELECT or ASK query")


class ViewOut(BaseModel):
    id: int
    name: str
    query: str
    status: str
    watermark: int
    rows: int
    plan: str

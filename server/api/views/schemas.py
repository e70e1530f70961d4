from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field


class ViewIn(BaseModel):
    name: str = Field(min_length=1, max_length=200)
    query: str = Field(min_length=1, max_length=100_000,
                       description="a SPARQL 1.1 SELECT, ASK or CONSTRUCT query")
    target: str | None = Field(default=None, max_length=4_000, description=(
        "a CONSTRUCT view only: the IRI of a resource of a pod here, which the "
        "consumer may write, that the view's graph is written into after every "
        "change (the view itself never reads it)"))


class Progress(BaseModel):
    job: str
    status: str
    done: int | None
    total: int | None
    error: str | None


class ViewOut(BaseModel):
    id: int
    name: str
    query: str
    status: str = Field(description="backfilling, rebuilding, revoking (a revoked pod's data "
                                    "is being removed), ready or failed")
    note: str | None = Field(default=None, description="why it is rebuilding, was rebuilt "
                                                       "or failed")
    watermark: int = Field(description="the change-log sequence number the view reflects")
    rows: int | None = Field(description="solutions in the view (null while backfilling)")
    plan: str = Field(description="the maintenance plan in words, one node a line")
    placement: str | None = Field(default=None, description=(
        "where the view's last job ran: 'spark', or 'sql' with its batches as one rendered "
        "statement or through the interpreter and why (null before its first job)"))
    pending: list[Progress] = Field(description="maintenance jobs not done yet")
    created_at: datetime

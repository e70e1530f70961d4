"""What an endpoint asks for, as FastAPI dependencies: the caller (``Who``),
the database (``Db``) and the settings (``Config``) — instead of looking
them up in ``app.state`` by hand."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy import Engine

from server.api.auth import Principal, principal
from server.config import Settings


def _engine(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


def _settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


Who = Annotated[Principal, Depends(principal)]
Db = Annotated[Engine, Depends(_engine)]
Config = Annotated[Settings, Depends(_settings)]

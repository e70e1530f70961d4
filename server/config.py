"""Settings: one class, read only here; every field a PODVIEWS_* variable."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEV_ADMIN_TOKEN = "dev-admin-token"


def user_data_dir() -> str:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local",
                                                           "share")
    return os.path.join(base, "podviews")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PODVIEWS_")

    env: str = "development"
    host: str = "127.0.0.1"
    port: int = 8000
    base_url: str = ""  # public base of resource IRIs; default http://{host}:{port}
    admin_token: str = DEV_ADMIN_TOKEN
    database_url: str | None = None  # None: an embedded Postgres under data_dir
    data_dir: Path = Path(user_data_dir())

    @model_validator(mode="after")
    def _no_default_secret_outside_development(self) -> Settings:
        if self.env != "development" and self.admin_token == DEV_ADMIN_TOKEN:
            raise ValueError("PODVIEWS_ADMIN_TOKEN must be set outside development")
        return self

    @property
    def public_base(self) -> str:
        return (self.base_url or f"http://{self.host}:{self.port}").rstrip("/")

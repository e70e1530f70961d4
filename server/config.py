"""Settings: one class, read only here; every field a PODVIEWS_* variable."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from server.api.ldp.patch import Bounds
from server.api.ldp.rdf import RdfLimits
from server.api.notify.policy import Policy
from server.executors.spark.config import SparkConfig
from server.maintenance.limits import Limits
from server.maintenance.router import Router
from storage.feed import Retention

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
    upstream_url: str | None = None  # a Solid server the pods live on (writes go there first)
    workers: int = 1  # maintenance worker processes `podviews serve` runs beside the API
    executor: str = "auto"  # sql | spark | auto (the router picks by the size of the work)
    spark_master: str = "local[*]"
    spark_threshold: int = 100_000  # triples of work from which auto picks Spark
    # on Spark, batches under this fraction of the view's input run the delta program
    # (Spark SQL); larger ones evaluate every node and replace the state (design note 137)
    spark_delta_below: float = 0.05
    # SQL executor: batches of plans that render run as one statement — every view's
    # (sql_render), or (0: none) those of views that group, whose statement is cheap
    # to plan, or whose state or solutions hold sql_render_from_rows rows or more:
    # small states' batches of costly plans cost less interpreted (design notes 89,
    # 118, 147, 153, 154)
    sql_render: bool = False
    sql_render_from_rows: int = 10_000
    jdbc_jar: str = "/usr/share/java/postgresql.jar"  # Postgres JDBC driver for Spark
    # limits on what a request may ask (problem documents beyond them)
    max_query_depth: int = 64  # brackets nested in a view's query
    max_views_per_consumer: int = 100
    max_view_rows: int = 1_000_000  # estimated at registration; one node's change in one job
    max_state_rows: int = 10_000_000  # rows all of a view's K-relations may hold
    page_rows: int = 10_000  # solutions a results page holds unless ?limit= says fewer
    # a view's change feed keeps its last feed_changes deltas, none older than feed_seconds
    feed_changes: int = 10_000
    feed_seconds: float = 7 * 24 * 3600.0
    # a done job stays in the queue this many seconds, then is counted and pruned
    done_jobs_kept: float = 3600.0
    sse_heartbeat: float = 15.0  # seconds between heartbeats of an idle event stream
    # WebhookChannel2023 (server/api/notify/webhooks.py): failures in a row before a channel
    # is dead, the first retry's wait (doubled after each failure), a POST's timeout, and
    # whether sendTo may be a loopback or private address (tests, on-premises receivers)
    webhook_attempts: int = 8
    webhook_backoff: float = 1.0
    webhook_timeout: float = 5.0
    webhook_private: bool = False
    max_body_bytes: int = 16 << 20  # a write's body (413 beyond, before it is read whole)
    max_patch_bytes: int = 1 << 20  # a PATCH's body (N3 and SPARQL parsers are not linear)
    max_literal_bytes: int = 1 << 20  # characters in one literal of a body
    max_resource_triples: int = 500_000  # triples in one resource
    max_patch_steps: int = Bounds.steps  # pattern-match steps of a patch's WHERE (~60 µs each)
    max_patch_seconds: float = Bounds.seconds  # a SPARQL Update's reading and evaluation, each
    # Solid-OIDC (server/api/solid_oidc.py): issuers trusted for any WebID (else the WebID's
    # profile must name the token's issuer), and the bounds of profile and key fetches
    oidc_trusted_issuers: list[str] = []
    oidc_fetch_private: bool = False  # fetch profiles and keys from loopback/private addresses
    oidc_fetch_timeout: float = 5.0  # seconds per fetch
    oidc_fetch_max_bytes: int = 256 << 10  # a profile, an issuer's configuration or keys
    oidc_cache_seconds: int = 300  # profiles' issuers and issuers' keys are kept this long
    dpop_max_age: int = 60  # seconds a DPoP proof is valid after its iat (and jti remembered)

    @model_validator(mode="after")
    def _no_default_secret_outside_development(self) -> Settings:
        if self.env != "development" and self.admin_token == DEV_ADMIN_TOKEN:
            raise ValueError("PODVIEWS_ADMIN_TOKEN must be set outside development")
        return self

    def patch_bounds(self) -> Bounds:
        return Bounds(self.max_patch_steps, self.max_patch_seconds)

    def rdf_limits(self) -> RdfLimits:
        return RdfLimits(self.max_literal_bytes, self.max_resource_triples)

    def limits(self) -> Limits:
        return Limits(self.max_view_rows, self.max_state_rows,
                      Retention(self.feed_changes, self.feed_seconds), self.done_jobs_kept)

    def webhooks(self) -> Policy:
        return Policy(self.webhook_attempts, self.webhook_backoff, self.webhook_timeout,
                      self.webhook_private)

    def router(self) -> Router:
        return Router(self.executor, self.spark_threshold,
                      SparkConfig(master=self.spark_master, jdbc_jar=self.jdbc_jar),
                      render=self.sql_render, render_from_rows=self.sql_render_from_rows,
                      spark_delta_below=self.spark_delta_below)

    @property
    def public_base(self) -> str:
        return (self.base_url or f"http://{self.host}:{self.port}").rstrip("/")

    @property
    def pods_base(self) -> str:
        """Where pods live (the upstream Solid server's root, or ours): a
        resource's IRI is ``{pods_base}/{pod}/{path}``, the name of its named
        graph in views."""
        return self.upstream_url.rstrip("/") if self.upstream_url else f"{self.public_base}/pods"

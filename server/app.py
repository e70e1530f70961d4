"""The FastAPI application: LDP, views, consents, admin and operations over
one database; with ``workers`` > 0 it also runs that many maintenance
workers as threads for its lifetime (the in-process tests do;
``podviews serve`` runs workers as processes of their own)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import sqlalchemy as sa
from fastapi import FastAPI, Response
from starlette.types import ASGIApp

from server.api import cors, problems
from server.api.admin.endpoints import router as admin_router
from server.api.consents.endpoints import router as consents_router
from server.api.ldp import offload
from server.api.ldp.endpoints import router as ldp_router
from server.api.ldp.upstream import Upstream
from server.api.notify.endpoints import router as notify_router
from server.api.notify.webhooks import Deliverer
from server.api.ops import observability
from server.api.views import fanout
from server.api.views.endpoints import router as views_router
from server.api.views.fanout import Fanout
from server.api.views.live import SharedReads
from server.api.views.notices import ViewNotices
from server.config import Settings
from server.maintenance import worker
from storage import db, ops


class App(FastAPI):
    """FastAPI with the server's own ``send`` kept in each HTTP scope, for
    the writers of event streams (``fanout.capture_send``, design note 134)."""

    def build_middleware_stack(self) -> ASGIApp:
        return fanout.capture_send(super().build_middleware_stack())


def create_app(url: str, settings: Settings | None = None, workers: int = 1) -> FastAPI:
    settings = settings or Settings()
    engine = sa.create_engine(url, pool_size=10, max_overflow=20, pool_pre_ping=True)
    stop = threading.Event()
    threads: list[threading.Thread] = []

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        threads[:] = [threading.Thread(target=worker.run, name=f"worker-{i}", daemon=True,
                                       kwargs={"url": url, "stop": stop,
                                               "router": settings.router(),
                                               "limits": settings.limits(), "idle_wait": 0.5,
                                               "base": settings.pods_base})
                      for i in range(workers)]
        for t in threads:
            t.start()
        app.state.notices = ViewNotices(url)
        app.state.fanout = Fanout(engine, app.state.notices, app.state.shared_reads,
                                  settings.page_rows, settings.sse_heartbeat, app.state.closing,
                                  app.state.metrics.fanned)
        webhooks = Deliverer(engine, settings.public_base, settings.page_rows,
                             settings.webhooks(), app.state.metrics.webhooks)
        try:
            yield
        finally:
            app.state.closing.set()
            webhooks.close()
            app.state.notices.close()
            offload.shutdown()
            stop.set()
            for t in threads:
                t.join(timeout=30)
            engine.dispose()

    app = App(title="Podviews", version="0.1.0", lifespan=lifespan,
                  description="Incrementally maintained SPARQL views over Solid pods.")
    app.state.settings = settings
    app.state.engine = engine
    app.state.notices = None  # listening from start-up on
    app.state.fanout = None  # with the notices
    app.state.closing = threading.Event()  # set when the server begins to shut down
    app.state.shared_reads = SharedReads()
    app.state.upstream = Upstream(settings.upstream_url) if settings.upstream_url else None
    problems.install(app)
    cors.install(app)
    app.state.metrics = observability.install(app, engine,
                                              lambda: any(t.is_alive() for t in threads))
    app.state.metrics.followers.set_function(
        lambda: 0 if app.state.fanout is None else app.state.fanout.following)
    app.include_router(admin_router)
    app.include_router(consents_router)
    app.include_router(views_router)
    app.include_router(notify_router)
    app.include_router(ldp_router)

    health = sa.create_engine(url, pool_size=1, max_overflow=0, pool_pre_ping=True,
                              pool_timeout=HEALTH_TIMEOUT)

    @app.get("/healthz", tags=["ops"], responses={503: {}})
    async def healthz() -> Response:
        """Alive, and the database answers: checked on a connection of its
        own, off the event loop and outside the request thread pool, within
        ``HEALTH_TIMEOUT`` seconds — whatever the other requests are doing."""
        try:
            await asyncio.wait_for(asyncio.to_thread(_ping, health), HEALTH_TIMEOUT)
        except (sa.exc.SQLAlchemyError, TimeoutError):
            return Response('{"status": "database unreachable"}', 503,
                            media_type="application/json", headers={"Retry-After": "1"})
        return Response('{"status": "ok"}', media_type="application/json")

    return app


HEALTH_TIMEOUT = 2.0


def _ping(engine: sa.Engine) -> None:
    with db.reading(engine) as c:
        ops.ping(c)

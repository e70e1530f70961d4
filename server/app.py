"""The FastAPI application."""

from __future__ import annotations

from fastapi import FastAPI

from server import errors
from server.config import Settings
from server.hub import Hub
from server.ldp.endpoints import router as ldp_router
from server.views.endpoints import router as views_router


def create_app(settings: Settings | None = None) -> FastAPI:
    app = FastAPI(title="Podviews", version="0.1.0",
                  description="Incrementally maintained SPARQL views over Solid pods.")
    app.state.settings = settings or Settings()
    app.state.hub = Hub()
    errors.install(app)
    app.include_router(views_router)
    app.include_router(ldp_router)

    @app.get("/healthz", tags=["ops"])
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return app

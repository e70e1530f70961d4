"""The one handler that maps every error to an RFC 9457 problem document
(``application/problem+json``): the service's own (``server.errors``), a
request that fails validation, the database away or refusing a value, and a
query the engine rejects."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DataError, OperationalError

from server.errors import ServiceError
from views.errors import EngineError, SparqlSyntaxError, UnsupportedFeature


def problem(status: int, title: str, detail: str, **extra: object) -> JSONResponse:
    body = {"type": "about:blank", "title": title, "status": status, "detail": detail, **extra}
    return JSONResponse(body, status_code=status, media_type="application/problem+json")


def install(app: FastAPI) -> None:
    @app.exception_handler(ServiceError)
    async def _service(_: Request, e: ServiceError) -> JSONResponse:
        response = problem(e.status, type(e).__doc__.strip().rstrip("."), e.detail)  # type: ignore[union-attr]
        response.headers.update(e.headers)
        return response

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, e: RequestValidationError) -> JSONResponse:
        faults = "; ".join(f"{'.'.join(str(x) for x in err['loc'])}: {err['msg']}"
                           for err in e.errors())
        return problem(422, "Invalid request", faults)

    @app.exception_handler(OperationalError)
    async def _database_away(_: Request, e: OperationalError) -> JSONResponse:
        # the database is unreachable, restarting or too busy: nothing was
        # stored (the transaction did not commit); the pool reconnects
        response = problem(503, "Service unavailable", "the database is unavailable; retry")
        response.headers["Retry-After"] = "1"
        return response

    @app.exception_handler(DataError)
    async def _unstorable(_: Request, e: DataError) -> JSONResponse:
        # e.g. a NUL character, which Postgres text cannot hold; the
        # transaction has rolled back, nothing is stored
        return problem(400, "Value cannot be stored", str(e.orig).splitlines()[0])

    @app.exception_handler(EngineError)
    async def _engine(_: Request, e: EngineError) -> JSONResponse:
        if isinstance(e, SparqlSyntaxError):
            return problem(400, "SPARQL syntax error", str(e), line=e.line, column=e.column)
        if isinstance(e, UnsupportedFeature):
            return problem(400, "Unsupported query feature", str(e), feature=e.feature)
        return problem(400, "Query rejected", str(e))

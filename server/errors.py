"""Service errors and the one handler that maps every error to an RFC 9457
problem document (``application/problem+json``)."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DataError, OperationalError

from views.errors import EngineError, SparqlSyntaxError, UnsupportedFeature


class ServiceError(Exception):
    """The request could not be served."""

    status = 400

    def __init__(self, detail: str | None = None, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail or (self.__doc__ or "").strip())
        self.detail = str(self)
        self.headers = headers or {}


class NotFound(ServiceError):
    """No such resource."""

    status = 404


class Unauthorized(ServiceError):
    """Authentication is required: a bearer token, or a Solid-OIDC access
    token bound to a DPoP proof (RFC 9449 §7.1)."""

    status = 401

    def __init__(self, detail: str | None = None) -> None:
        super().__init__(detail, {
            "WWW-Authenticate": 'Bearer realm="podviews", DPoP realm="podviews"'})


class Forbidden(ServiceError):
    """The caller may not do this."""

    status = 403


class Conflict(ServiceError):
    """The request conflicts with the current state."""

    status = 409


class MethodNotAllowed(ServiceError):
    """The method is not allowed on this resource."""

    status = 405


class NotReady(ServiceError):
    """The view has not caught up yet; retry."""

    status = 503


class Gone(ServiceError):
    """The position is no longer kept; read a snapshot and follow from there."""

    status = 410


class OverLimit(ServiceError):
    """The request is valid but asks for more than this server allows."""

    status = 422


class Unprocessable(ServiceError):
    """The request is well-formed but asks for what cannot be done."""

    status = 422


class BadRequest(ServiceError):
    """The request is malformed."""


class BadRdf(ServiceError):
    """The request body is not valid RDF in the declared media type."""


class UnsupportedMediaType(ServiceError):
    """The request's media type is not supported here."""

    status = 415


class PayloadTooLarge(ServiceError):
    """The request is larger than this server accepts."""

    status = 413


class PreconditionFailed(ServiceError):
    """A condition of the request (If-Match, If-None-Match) does not hold."""

    status = 412


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

"""Service errors: what went wrong with a request, as plain exceptions the
core raises; ``server.api.problems`` maps each to an RFC 9457 problem
document at the HTTP edge (so a command that serves nothing, ``podviews
load`` say, does not import the web framework)."""

from __future__ import annotations


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

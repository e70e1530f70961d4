"""A Solid server as the pods' upstream (``PODVIEWS_UPSTREAM_URL``): pod
``name`` is its container ``{upstream}/{name}/``. Every write is sent there
first, as the client sent it, while the local transaction holding the
resource's lock is still open; an upstream refusal rolls the local write
back and is answered with the upstream's status. Views are maintained from
the same delta, computed locally from the same request."""

from __future__ import annotations

from dataclasses import dataclass, field

import httpx

from server.errors import ServiceError


class UpstreamRefused(ServiceError):
    """The upstream Solid server refused the write."""


class UpstreamUnreachable(ServiceError):
    """The upstream Solid server could not be reached."""

    status = 502


@dataclass
class Upstream:
    base: str
    client: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=30))

    def url(self, pod: str, path: str) -> str:
        return f"{self.base.rstrip('/')}/{pod}/{path}"

    def send(self, method: str, pod: str, path: str, body: bytes = b"",
             headers: dict[str, str] | None = None) -> httpx.Response:
        try:
            r = self.client.request(method, self.url(pod, path), content=body,
                                    headers=headers or {})
        except httpx.HTTPError as e:
            raise UpstreamUnreachable(f"{method} {self.url(pod, path)}: {e}") from None
        if r.status_code >= 400:
            refused = UpstreamRefused(f"{method} {self.url(pod, path)} answered "
                                      f"{r.status_code}: {r.text[:300]}")
            refused.status = r.status_code if r.status_code < 500 else 502
            raise refused
        return r

    def local_path(self, pod: str, location: str) -> str:
        """The path below the pod of an upstream IRI (a POST's Location)."""
        prefix = self.url(pod, "")
        if not location.startswith(prefix):
            raise UpstreamRefused(f"upstream created {location}, outside {prefix}")
        return location[len(prefix):]

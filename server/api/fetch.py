"""Bounded outbound fetches (issue 20's rule: no unbounded request on a
client's behalf): Solid-OIDC reads WebID profiles and issuers' keys,
webhooks deliver Solid Notifications (``post``), and nothing else leaves
the server. A request is http(s) only, to a host whose addresses are all
public (unless ``allow_private``: tests, on-premises issuers), without
redirects, within a timeout and a size limit."""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

import httpx


class FetchError(Exception):
    """The resource could not be fetched within the bounds."""


def _public(host: str, port: int) -> bool:
    try:
        infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    except OSError as e:
        raise FetchError(f"{host} does not resolve: {e}") from None
    return all(ipaddress.ip_address(str(info[4][0]).split("%")[0]).is_global for info in infos)


def check(url: str, allow_private: bool = False) -> None:
    """FetchError unless ``url`` is http(s) to a public host (or ``allow_private``)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FetchError(f"not an http(s) URL: {url}")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise FetchError(f"not a port: {url}") from None
    if not allow_private and not _public(parts.hostname, port):
        raise FetchError(f"{parts.hostname} is no public address")


def fetch(url: str, accept: str, timeout: float, max_bytes: int,
          allow_private: bool = False) -> tuple[str, bytes]:
    """(media type, body) of a 200 answer to a GET of ``url``."""
    check(url, allow_private)
    try:
        with httpx.Client(timeout=timeout, follow_redirects=False) as client, \
                client.stream("GET", url, headers={"accept": accept}) as r:
            if r.status_code != 200:
                raise FetchError(f"{url} answered {r.status_code}")
            body = b""
            for chunk in r.iter_bytes():
                body += chunk
                if len(body) > max_bytes:
                    raise FetchError(f"{url} is larger than {max_bytes} bytes")
            return r.headers.get("content-type", "").split(";")[0].strip(), body
    except httpx.HTTPError as e:
        raise FetchError(f"{url}: {type(e).__name__}") from None


def post(client: httpx.Client, url: str, body: bytes, media: str,
         allow_private: bool = False) -> None:
    """``body`` POSTed to ``url`` with ``client`` (its timeout; no
    redirects); FetchError unless the answer is a 2xx."""
    check(url, allow_private)
    try:
        r = client.post(url, content=body, headers={"content-type": media})
    except httpx.HTTPError as e:
        raise FetchError(f"{url}: {type(e).__name__}") from None
    if not r.is_success:
        raise FetchError(f"{url} answered {r.status_code}")

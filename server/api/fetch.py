"""Bounded outbound fetches (issue 20's rule: no unbounded request on a
client's behalf): Solid-OIDC reads WebID profiles and issuers' keys, and
nothing else leaves the server. A fetch is http(s) only, to a host whose
addresses are all public (unless ``allow_private``: tests, on-premises
issuers), without redirects, within a timeout and a size limit."""

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


def fetch(url: str, accept: str, timeout: float, max_bytes: int,
          allow_private: bool = False) -> tuple[str, bytes]:
    """(media type, body) of a 200 answer to a GET of ``url``."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FetchError(f"not an http(s) URL: {url}")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    if not allow_private and not _public(parts.hostname, port):
        raise FetchError(f"{parts.hostname} is no public address")
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

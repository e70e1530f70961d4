"""JSON-LD contexts a request body may name by URL: the bundled allow-list.

A body's remote ``@context`` is never fetched (a server that fetches what a
client names can be made to call anything it can reach, or to stall on it).
A context URL listed here is replaced by its bundled document; any other is a
400 that names it. The documents are the W3C's, as the Community Solid Server
bundles them (templates/contexts/)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

HERE = Path(__file__).parent
BUNDLED = {
    "https://www.w3.org/ns/activitystreams": "activitystreams.jsonld",
    "https://www.w3.org/ns/solid/notification/v1": "solid-notification-v1.jsonld",
}


@cache
def bundled(url: str) -> object | None:
    """The ``@context`` value of the bundled document for ``url``, or None."""
    name = BUNDLED.get(url.rstrip("#")) or BUNDLED.get(url.replace("http://", "https://", 1))
    if name is None:
        return None
    return json.loads((HERE / name).read_text(encoding="utf-8"))["@context"]

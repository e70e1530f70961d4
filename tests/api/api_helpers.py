"""A Podviews API in process over a fresh database, with its worker thread,
and the agents and pods of a small world: two owners with a pod each, two
consumers, and the admin."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from fastapi.testclient import TestClient

from server.app import create_app
from server.config import Settings

ADMIN = "test-admin-token"
TURTLE = {"content-type": "text/turtle"}


@dataclass
class World:
    client: TestClient
    tokens: dict[str, str]  # who -> bearer token ('admin', 'owner', 'other_owner', …)
    webids: dict[str, str]

    def as_(self, who: str | None) -> dict[str, str]:
        return {} if who is None else {"authorization": f"Bearer {self.tokens[who]}"}


@contextmanager
def world(url: str, workers: int = 1, **settings: object) -> Iterator[World]:
    """The world over the database ``url``, with ``workers`` maintenance
    worker threads (0: no job runs unless the test runs it) and these
    ``settings``."""
    app = create_app(url, Settings(admin_token=ADMIN, base_url="http://pods.test",
                                   **settings),  # type: ignore[arg-type]
                     workers=workers)
    with TestClient(app, base_url="http://pods.test") as client:
        w = World(client, {"admin": ADMIN}, {})
        for who, role in (("owner", "owner"), ("other_owner", "owner"),
                          ("consumer", "consumer"), ("other_consumer", "consumer")):
            r = client.post("/admin/agents", json={"webid": f"https://{who}.test/#me", "role": role},
                            headers=w.as_("admin"))
            assert r.status_code == 201, r.text
            w.tokens[who], w.webids[who] = r.json()["token"], r.json()["webid"]
        for pod, owner in (("alice", "owner"), ("bob", "other_owner")):
            r = client.post("/admin/pods", json={"name": pod, "owner": w.webids[owner]},
                            headers=w.as_("admin"))
            assert r.status_code == 201, r.text
        yield w

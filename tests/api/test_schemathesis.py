"""Property-based requests generated from the OpenAPI spec (schemathesis)
against the app over a real database, as the admin, an owner and a
consumer: no request makes the server fail (no 5xx)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from server.app import create_app
from server.config import Settings
from tests.api.api_helpers import ADMIN, TURTLE, World, world
from tests.conftest import scratch_database


@pytest.fixture(scope="module")
def api(pg_server: str, migrated_template: str) -> Iterator[tuple[World, object]]:
    with scratch_database(pg_server, "pv_fuzz", template=migrated_template) as url, \
            world(url) as w:
        # agents, pods, a resource, a view and a consent to hit
        w.client.put("/pods/alice/doc", content="<#a> <#b> 1 .",
                     headers={**TURTLE, **w.as_("owner")})
        w.client.post("/views", json={"name": "v", "query": "SELECT * { ?s ?p ?o }"},
                      headers=w.as_("consumer"))
        w.client.post("/admin/consents", json={"pod": "alice", "consumer": w.webids["consumer"]},
                      headers=w.as_("owner"))
        app = create_app(url, Settings(admin_token=ADMIN, base_url="http://pods.test"), workers=0)
        yield w, schemathesis.openapi.from_asgi("/openapi.json", app)


def test_no_server_errors(api: tuple[World, object]) -> None:
    """Every operation, 25 generated requests each, as each caller."""
    w, schema = api
    failures: list[str] = []
    seen: Counter[int] = Counter()
    for result in schema.get_all_operations():  # type: ignore[attr-defined]
        operation = result.ok()

        @given(operation.as_strategy())
        @settings(max_examples=25, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        def run(case) -> None:  # type: ignore[no-untyped-def]
            for who in ("admin", "owner", "consumer", None):
                headers = w.as_(who)
                response = case.call(headers=headers)
                seen[response.status_code] += 1
                if response.status_code >= 500:
                    failures.append(f"as {who}: {case.method} {case.formatted_path} "
                                    f"-> {response.status_code} {response.text[:300]}")

        run()
    assert failures == []
    assert sum(n for code, n in seen.items() if code < 300) > 10, seen  # not all turned away

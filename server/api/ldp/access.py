"""May the caller do this to that resource: the one question every LDP
endpoint asks, answered here (``authorize``), and what the caller may do
there (``modes``, sent as ``WAC-Allow``). Until Web Access Control (issue 17)
a pod is its owner's alone: the owner and the admin hold every mode, anyone
else none — an anonymous caller is asked to log in (401), a known one is
not told the pod exists (404)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection

from server.api.auth import ANONYMOUS, Principal
from server.errors import NotFound, Unauthorized
from storage import pods

READ, WRITE, APPEND, CONTROL = "read", "write", "append", "control"
MODES = (READ, WRITE, APPEND, CONTROL)  # in WAC-Allow's order


@dataclass(frozen=True)
class Pod:
    id: int
    name: str
    owner_id: int
    owner: str  # the owner's WebID


def modes(who: Principal, pod: Pod, path: str) -> frozenset[str]:
    """The access modes ``who`` holds on the resource ``path`` of ``pod``."""
    if who.is_admin() or (who.agent is not None and who.agent == pod.owner_id):
        return frozenset(MODES)
    return frozenset()


def authorize(conn: Connection, who: Principal, pod_name: str, path: str, mode: str) -> Pod:
    """The pod, if ``who`` may ``mode`` the resource ``path`` in it; 401 for an
    anonymous caller, 404 otherwise (whether the pod exists is not the
    caller's business)."""
    row = pods.pod_row(conn, pod_name)
    pod = None if row is None else Pod(int(row.id), row.name, int(row.owner_id), row.owner)
    if pod is not None and mode in modes(who, pod, path):
        return pod
    if who.is_anonymous():
        raise Unauthorized(f"{mode} access to this resource needs a login")
    raise NotFound(f"no pod {pod_name}")


def wac_allow(who: Principal, pod: Pod, path: str) -> str:
    """The ``WAC-Allow`` header: the caller's modes and the public's."""
    def listed(held: frozenset[str]) -> str:
        return " ".join(m for m in MODES if m in held)
    return (f'user="{listed(modes(who, pod, path))}",'
            f'public="{listed(modes(ANONYMOUS, pod, path))}"')

"""May the caller do this to that resource: the one question every LDP
endpoint asks, answered here (``authorize``), and what the caller may do
there (``modes``, sent as ``WAC-Allow``). The pod's owner and the admin hold
every mode on every resource (the owner never loses Control); anyone else
holds what the pod's Web Access Control documents grant (``wac``). An
operation needs the modes the Solid Protocol and WAC name (``needed``): an
anonymous caller without them is asked to log in (401); a known caller
without them gets 403 when it holds some mode on the resource, and 404 when
it holds none (whether the pod or the resource exists is not its business).

An ACL document ``<path>.acl`` is read and written by those with Control
on ``<path>``."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import Connection, Engine

from server.api.auth import ANONYMOUS, Principal
from server.api.ldp import wac
from server.api.ldp.headers import ACL_SUFFIX, DESCRIPTION_SUFFIX
from server.errors import Forbidden, NotFound, Unauthorized
from storage import acls, db, pods
from storage.pods import containers_above

READ, WRITE, APPEND, CONTROL = wac.READ, wac.WRITE, wac.APPEND, wac.CONTROL
DELETE = "delete"  # an operation: Write on the resource and on its container
MODES = (READ, WRITE, APPEND, CONTROL)  # in WAC-Allow's order


@dataclass(frozen=True)
class Pod:
    id: int
    name: str
    owner_id: int
    owner: str  # the owner's WebID
    policy: wac.Policy = field(default_factory=lambda: wac.Policy({}), compare=False,
                               repr=False)


def acl_subject(path: str) -> str | None:
    """The path of the resource whose ACL document ``path`` is, or None."""
    return path.removesuffix(ACL_SUFFIX) if path.endswith(ACL_SUFFIX) else None


def described(path: str) -> str | None:
    """The path of the resource whose description ``path`` is, or None (no
    resource of ours is named ``….meta`` otherwise)."""
    return path.removesuffix(DESCRIPTION_SUFFIX) if path.endswith(DESCRIPTION_SUFFIX) else None


def load(conn: Connection, pod_name: str) -> Pod | None:
    """The pod and its access policy (kept across requests while its ACL
    version holds), or None."""
    row = pods.pod_row(conn, pod_name)
    if row is None:
        return None
    pid = int(row.id)
    policy = wac.POLICIES.get(pid, int(row.acl_version), lambda: acls.documents(conn, pid))
    return Pod(pid, row.name, int(row.owner_id), row.owner, policy)


def modes(who: Principal, pod: Pod, path: str) -> frozenset[str]:
    """The access modes ``who`` holds on the resource ``path`` of ``pod``
    (on an ACL document: all of them with Control on its resource, else none;
    on a description, ``….meta``: those on the resource it describes)."""
    if who.is_admin() or (who.agent is not None and who.agent == pod.owner_id):
        return frozenset(MODES)
    subject = acl_subject(path)
    if subject is not None:
        return frozenset(MODES) if CONTROL in modes(who, pod, subject) else frozenset()
    if (of := described(path)) is not None:  # a description: as the resource it describes
        return modes(who, pod, of)
    webid = None if who.is_anonymous() or not who.webid else who.webid
    return pod.policy.modes(path, webid, who.origin)


PATCH = "patch:"  # + the modes a patch needs on an existing resource, joined by "+"


def patching(needs: frozenset[str]) -> str:
    """The operation of a patch needing ``needs`` (``patch.modes``) on an
    existing resource: an insert-only patch needs Append alone, one with a
    WHERE Read as well, one that deletes Read and Write (Solid Protocol
    §5.3.1); creating a resource by patch needs what a PUT does."""
    return PATCH + ("+".join(m for m in MODES if m in needs) or APPEND)  # a no-op: Append


def needed(conn: Connection, pod: Pod, path: str, op: str) -> list[tuple[str, str]]:
    """(mode, path) pairs the operation ``op`` needs (as the Community Solid
    Server reads WAC): READ, POST (APPEND) and CONTROL their mode; a PUT
    (WRITE) Write on an existing resource, a PATCH the modes it needs there
    (``patching``), else either Append on it and on its container; DELETE Write on the resource and its container, and Read
    on a container (it tells whether the container is empty)."""
    subject = acl_subject(path)
    if subject is not None:
        return [(CONTROL, subject)]
    if (of := described(path)) is not None:
        return [(READ if op == READ else WRITE, of)]
    parent = containers_above(path)[-1:] if path else []
    if op == WRITE or op.startswith(PATCH):
        if pods.resource(conn, pod.id, path) is not None:
            return [(m, path) for m in op.removeprefix(PATCH).split("+")]
        return [(APPEND, path), *((APPEND, p) for p in parent)]
    if op == DELETE:
        extra = [(READ, path)] if path == "" or path.endswith("/") else []
        return [(WRITE, path), *((WRITE, p) for p in parent), *extra]
    return [(op, path)]


def authorize(conn: Connection, who: Principal, pod_name: str, path: str, op: str) -> Pod:
    """The pod, if ``who`` may do ``op`` to the resource ``path`` in it; 401
    for an anonymous caller, 403 for a known caller holding some mode on the
    resource (or, for an ACL document, on its resource), 404 otherwise."""
    pod = load(conn, pod_name)
    if pod is not None and all(m in modes(who, pod, p) for m, p in needed(conn, pod, path, op)):
        return pod
    if who.is_anonymous():
        raise Unauthorized(f"{op} access to this resource needs a login")
    subject = acl_subject(path)
    if pod is not None and modes(who, pod, path if subject is None else subject):
        raise Forbidden(f"{who.webid} may not {op} this resource")
    raise NotFound(f"no pod {pod_name}" if pod is None else f"no resource {path}")


def wac_allow(who: Principal, pod: Pod, path: str) -> str:
    """The ``WAC-Allow`` header: the caller's modes and the public's."""
    def listed(held: frozenset[str]) -> str:
        return " ".join(m for m in MODES if m in held)
    public = Principal(ANONYMOUS.role, None, "", who.origin)
    return (f'user="{listed(modes(who, pod, path))}",'
            f'public="{listed(modes(public, pod, path))}"')


def wac_allow_after(engine: Engine, who: Principal, pod_name: str, path: str) -> dict[str, str]:
    """``WAC-Allow`` of a write's answer: the modes after it ({} when the
    pod is gone)."""
    with db.reading(engine) as c:
        pod = load(c, pod_name)
    return {} if pod is None else {"WAC-Allow": wac_allow(who, pod, path)}

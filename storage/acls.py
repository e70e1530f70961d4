"""Web Access Control documents of a pod (``<path>.acl``), apart from its
resources: no view reads them and no container lists them. Every write bumps
the pod's ``acl_version`` in the same transaction, so that decisions cached
under the old version are never used again (in any process)."""

from __future__ import annotations

import hashlib

from sqlalchemy import Connection, text


def documents(conn: Connection, pod: int) -> list[tuple[str, str, str]]:
    """(path, root, N-Triples) of every ACL document of the pod."""
    return [(r.path, r.root, r.body) for r in conn.execute(text(
        "SELECT path, root, body FROM acl_documents WHERE pod_id = :p"), {"p": pod})]


def document(conn: Connection, pod: int, path: str):  # type: ignore[no-untyped-def]
    """The ACL document of the resource ``path`` (root, body, etag,
    updated_at), or None; locked for the caller's write when ``lock``."""
    return conn.execute(text(
        "SELECT root, body, etag, updated_at FROM acl_documents "
        "WHERE pod_id = :p AND path = :path"), {"p": pod, "path": path}).one_or_none()


def lock(conn: Connection, pod: int) -> None:
    """One ACL writer of a pod at a time (its version is bumped once each)."""
    conn.execute(text("SELECT id FROM pods WHERE id = :p FOR NO KEY UPDATE"), {"p": pod})


def etag(body: str) -> str:
    return hashlib.sha1(body.encode()).hexdigest()


def put(conn: Connection, pod: int, path: str, root: str, body: str) -> bool:
    """Create or replace the ACL document of ``path``; whether it is new."""
    new = conn.execute(text(
        "INSERT INTO acl_documents (pod_id, path, root, body, etag) "
        "VALUES (:p, :path, :root, :body, :etag) ON CONFLICT (pod_id, path) DO UPDATE SET "
        "root = excluded.root, body = excluded.body, etag = excluded.etag, updated_at = now() "
        "RETURNING (xmax = 0) AS inserted"),
        {"p": pod, "path": path, "root": root, "body": body, "etag": etag(body)}).scalar_one()
    _bump(conn, pod)
    return bool(new)


def delete(conn: Connection, pod: int, path: str) -> bool:
    """Delete the ACL document of ``path``; whether there was one."""
    gone = conn.execute(text("DELETE FROM acl_documents WHERE pod_id = :p AND path = :path"),
                        {"p": pod, "path": path}).rowcount
    if gone:
        _bump(conn, pod)
    return bool(gone)


def _bump(conn: Connection, pod: int) -> None:
    conn.execute(text("UPDATE pods SET acl_version = acl_version + 1 WHERE id = :p"), {"p": pod})

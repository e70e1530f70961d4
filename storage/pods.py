"""Pods, resources and writes. A write replaces a resource's triples and, in
the caller's transaction, records the change (``storage.changes``): the
quads, the pod's support-counted default graph, the change log entry with its
ΔG and the jobs of the views it can change; its sequence number orders it
among all changes."""

from __future__ import annotations

import contextlib
import hashlib
import struct
import time
from collections.abc import Iterable, Iterator, Sequence

from rdflib.term import Identifier
from sqlalchemy import Connection, Engine, Row, text

from storage import driver, terms
from storage.arrays import columns, unnest
from storage.changes import SPO, IdTriple, record_change
from storage.terms import TermTable

Triple = tuple[Identifier, Identifier, Identifier]


class PodsError(Exception):
    """The pod operation is not possible."""


def create_agent(conn: Connection, webid: str, role: str, token_hash: bytes) -> int:
    return int(conn.execute(text(
        "INSERT INTO agents (webid, role, token_hash) VALUES (:w, :r, :t) RETURNING id"),
        {"w": webid, "r": role, "t": token_hash}).scalar_one())


class NameTaken(PodsError):
    """A document and a container may not share a name (Solid Protocol §3.1)."""


def create_pod(conn: Connection, name: str, owner_id: int) -> int:
    """A new pod, with its root container."""
    pod = int(conn.execute(text("INSERT INTO pods (name, owner_id) VALUES (:n, :o) RETURNING id"),
                           {"n": name, "o": owner_id}).scalar_one())
    ensure_containers(conn, pod, "")
    return pod


def pod_id(conn: Connection, name: str) -> int:
    found = conn.execute(text("SELECT id FROM pods WHERE name = :n"), {"n": name}).scalar()
    if found is None:
        raise PodsError(f"no pod {name!r}")
    return int(found)


def containers_above(path: str) -> list[str]:
    """The containers holding ``path``, from the root ('') down.

    >>> containers_above("a/b/c")
    ['', 'a/', 'a/b/']
    >>> containers_above("a/")
    ['']
    """
    parts = path.rstrip("/").split("/")[:-1] if path.rstrip("/") else []
    return [""] + ["/".join(parts[:i]) + "/" for i in range(1, len(parts) + 1)] \
        if path else []


def name_free(conn: Connection, pod: int, path: str) -> None:
    """``NameTaken`` when a document holds the name of a container above
    ``path``, or the other form of ``path`` (``d1`` for ``d1/``) exists."""
    wanted = [*containers_above(path), path]
    clash = conn.execute(text(
        "SELECT path FROM resources WHERE pod_id = :pod AND rtrim(path, '/') = ANY(:names) "
        "AND NOT path = ANY(:paths) LIMIT 1"),
        {"pod": pod, "names": [p.rstrip("/") for p in wanted], "paths": wanted}).scalar()
    if clash is not None:
        raise NameTaken(f"{clash!r} exists, so {path!r} cannot"
                        if clash.rstrip("/") == path.rstrip("/")
                        else f"{clash!r} is a document, not a container")


def ensure_containers(conn: Connection, pod: int, path: str) -> None:
    """``path``'s name free for it (``name_free``), and the containers above
    it present (created empty where missing)."""
    name_free(conn, pod, path)
    above = containers_above(path)
    made = [*above, path] if path == "" or path.endswith("/") else above
    # Each container is made if missing, then held (FOR KEY SHARE: writers
    # below one container do not wait for each other) until this write
    # commits; a DELETE of the container (FOR UPDATE, then its members
    # counted) waits for it. A container deleted while we waited is made again.
    for _ in range(3):
        conn.execute(text(
            "INSERT INTO resources (pod_id, path, etag, content_type) "
            "SELECT :pod, p, :etag, 'text/turtle' FROM unnest(CAST(:paths AS text[])) AS p "
            "ON CONFLICT (pod_id, path) DO NOTHING"),
            {"pod": pod, "paths": made, "etag": EMPTY_ETAG})
        held = conn.execute(text(
            "SELECT count(*) FROM (SELECT 1 FROM resources WHERE pod_id = :pod "
            "AND path = ANY(:paths) FOR KEY SHARE) AS x"), {"pod": pod, "paths": made}).scalar()
        if held == len(made):
            return
    raise PodsError(f"the containers above {path!r} kept being deleted")


_PACKED = struct.Struct(">qqq").pack


def _etag(ids: set[IdTriple]) -> str:
    """The state of a set of triples (term ids), whatever their order: sorted
    as packed bytes (sorting the tuples took seconds at 335k triples)."""
    return hashlib.sha1(b"".join(sorted(_PACKED(*t) for t in ids))).hexdigest()


EMPTY_ETAG = _etag(set())


# The tables a write fills as it grows.
LOADED = ("pod_triples", "quads", "terms", "change_triples", "change_quads")


@contextlib.contextmanager
def loading(engine: Engine) -> Iterator[Connection]:
    """A bulk load's transaction: committed synchronously, whatever the
    database's default ("loaded" means stored), then the tables it filled
    (``LOADED``) left as autovacuum would, at once, and frozen (``settle``).
    Without statistics the planner takes a loaded predicate for one row (on
    bsbm-100, one rendered batch took 15.7 s by nested loops, 127 ms with
    them: note 89); without the visibility map every row an index-only scan
    of ``pod_triples`` returns fetches its heap page (note 163). The commit
    must be the load's own: VACUUM leaves the rows of an asynchronous commit
    unmarked until the WAL writer has flushed it, and a synchronous commit
    after it does not help (psql: 0 of 443 pages marked; 443 after a 1 s
    wait). VACUUM runs outside a transaction, hence the engine."""
    with engine.begin() as conn:
        conn.execute(text("SET LOCAL synchronous_commit = on"))
        yield conn
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        settle(conn, LOADED)


# How often ``settle`` VACUUMs again a table left with pages not all-visible,
# and how long it waits for the WAL to be flushed before each time.
SETTLE_RETRIES = 2
SETTLE_WAIT = 1.0


def settle(conn: Connection, tables: Sequence[str]) -> None:
    """``VACUUM (FREEZE, ANALYZE)`` of ``tables`` (on an autocommit
    connection); then, while one of them has pages its visibility map does
    not mark all-visible, wait until the WAL is flushed as far as it is
    written and VACUUM that one again (at most ``SETTLE_RETRIES`` times).
    Freezing makes VACUUM wait for a page's cleanup lock rather than skip
    it. The wait is for the hint bit a row's visibility needs: PostgreSQL
    will not mark a row's transaction committed on its page while the
    commit log's LSN for that transaction's group of 32 transaction ids is
    not flushed, and that LSN is the latest *asynchronous* commit in the
    group, from any database of the server. So one other session committing
    asynchronously (the tests' databases do) next to the load left its pages
    unmarked in 3–5 % of loads (design note 189)."""
    conn.execute(text(f"VACUUM (FREEZE, ANALYZE) {', '.join(tables)}"))
    for _ in range(SETTLE_RETRIES):
        short = conn.execute(text(
            "SELECT relname FROM pg_class WHERE relname = ANY(:t) AND relkind = 'r' "
            "AND relnamespace = current_schema()::regnamespace AND relallvisible < relpages"),
            {"t": list(tables)}).scalars().all()
        if not short:
            return
        written = conn.execute(text("SELECT pg_current_wal_insert_lsn()")).scalar_one()
        deadline = time.monotonic() + SETTLE_WAIT
        while conn.execute(text("SELECT pg_current_wal_flush_lsn() < CAST(:w AS pg_lsn)"),
                           {"w": written}).scalar_one() and time.monotonic() < deadline:
            time.sleep(0.01)
        conn.execute(text(f"VACUUM (FREEZE) {', '.join(short)}"))


def put_resource(conn: Connection, pod: int, path: str, triples: Iterable[Triple] | TermTable,
                 content_type: str = "text/turtle") -> int:
    """Create or replace the RDF resource (or container) at ``path`` with
    ``triples``; the change's sequence number. The change is the diff against
    the current resource, taken on term ids (two spellings of one term are
    one triple). The containers above it are created where missing."""
    ensure_containers(conn, pod, path)
    (after,) = _encode(conn, triples)
    rid = int(conn.execute(text(
        "INSERT INTO resources (pod_id, path, etag, content_type) VALUES (:pod, :path, :etag, :ct) "
        "ON CONFLICT (pod_id, path) DO UPDATE SET etag = excluded.etag, body = NULL, "
        "content_type = excluded.content_type, updated_at = now() RETURNING id"),
        {"pod": pod, "path": path, "etag": _etag(after), "ct": content_type}).scalar_one())
    before = _content(conn, rid)
    return record_change(conn, pod, rid, after - before, before - after)


def put_bytes(conn: Connection, pod: int, path: str, body: bytes, content_type: str) -> int:
    """Create or replace the non-RDF resource at ``path``; the change's
    sequence number. A document that held triples loses them; a non-RDF
    resource keeps its description."""
    ensure_containers(conn, pod, path)
    old = resource(conn, pod, path)
    etag = hashlib.sha1(content_type.encode() + b"\n" + body).hexdigest()
    rid = int(conn.execute(text(
        "INSERT INTO resources (pod_id, path, etag, content_type, body) "
        "VALUES (:pod, :path, :etag, :ct, :body) ON CONFLICT (pod_id, path) DO UPDATE SET "
        "etag = excluded.etag, body = excluded.body, content_type = excluded.content_type, "
        "updated_at = now() RETURNING id"),
        {"pod": pod, "path": path, "etag": etag, "ct": content_type, "body": body}).scalar_one())
    dropped = _content(conn, rid) if old is not None and not old.binary else set()
    return record_change(conn, pod, rid, set(), dropped)


def patch_description(conn: Connection, pod: int, rid: int, inserts: Iterable[Triple] | TermTable,
                      deletes: Iterable[Triple] | TermTable) -> int:
    ins, dels = _encode(conn, inserts, deletes)
    present = _present(conn, rid, ins | dels)
    return record_change(conn, pod, rid, ins - present, dels & present)


def description_etag(conn: Connection, rid: int) -> str:
    """The state of a non-RDF resource's description (its triples)."""
    return _etag(_content(conn, rid))


def _present(conn: Connection, rid: int, ids: set[IdTriple]) -> set[IdTriple]:
    """Those of ``ids`` the resource holds (rows read as plain tuples, the
    statement prepared: 500 triples 2.7 → 1.1 ms, design note 192)."""
    return set(driver.rows(conn, _PRESENT, {"r": rid, **columns(ids, SPO)}, named=False))


_PRESENT = (f"SELECT q.s, q.p, q.o FROM {unnest(SPO)} JOIN quads q ON q.resource_id = :r "
            "AND q.s = x.s AND q.p = x.p AND q.o = x.o")


def patch_resource(conn: Connection, pod: int, path: str, inserts: Iterable[Triple] | TermTable,
                   deletes: Iterable[Triple] | TermTable, content_type: str = "text/turtle",
                   held: Row | None = None) -> int:
    """Make ``inserts`` present in the resource at ``path`` (created if
    absent) and ``deletes`` absent; the change's sequence number. Only these
    triples are read, so the work follows the patch, not the resource. The
    ETag moves on from the old one by what changed (a new resource's is
    ``put_resource``'s). ``held``: the resource's row, which the caller holds
    (``resource(…, lock=True)``), so its name is its own and its containers
    stay (a container is deleted only empty, and this resource is in it),
    and its id and ETag are known: one UPDATE ends the write (design note
    193)."""
    if held is None:
        ensure_containers(conn, pod, path)
    ins, dels = _encode(conn, inserts, deletes)
    row = held if held is not None else conn.execute(text(
        "INSERT INTO resources (pod_id, path, etag, content_type) VALUES (:pod, :path, '', :ct) "
        "ON CONFLICT (pod_id, path) DO UPDATE SET updated_at = now() RETURNING id, etag"),
        {"pod": pod, "path": path, "ct": content_type}).one()
    rid = int(row.id)
    present = _present(conn, rid, ins | dels)
    inserted, deleted = ins - present, dels & present
    etag = None
    if inserted or deleted or not row.etag:
        moved = repr(sorted(inserted)) if not row.etag else \
            f"{row.etag}+{sorted(inserted)}-{sorted(deleted)}"
        etag = hashlib.sha1(moved.encode()).hexdigest()
    if etag is not None or held is not None:  # a held row is dated here
        conn.execute(text("UPDATE resources SET etag = coalesce(:e, etag), updated_at = now() "
                          "WHERE id = :r"), {"e": etag, "r": rid})
    return record_change(conn, pod, rid, inserted, deleted)


def delete_resource(conn: Connection, pod: int, path: str) -> int:
    rid = conn.execute(text("SELECT id FROM resources WHERE pod_id = :pod AND path = :path"),
                       {"pod": pod, "path": path}).scalar()
    if rid is None:
        raise PodsError(f"no resource {path!r}")
    seq = record_change(conn, pod, int(rid), set(), _content(conn, int(rid)))
    conn.execute(text("DELETE FROM resources WHERE id = :r"), {"r": rid})
    return seq


def _encode(conn: Connection, *triple_sets: Iterable[Triple] | TermTable) -> list[set[IdTriple]]:
    """Each set of triples as term ids (terms new to the dictionary added, in
    one ``terms.intern_fields``)."""
    tables = [ts if isinstance(ts, TermTable) else TermTable.of(ts) for ts in triple_sets]
    ids = terms.intern_fields(conn, [f for t in tables for f in t.terms])
    out, start = [], 0
    for t in tables:
        at = ids[start:start + len(t.terms)]
        start += len(t.terms)
        out.append({(at[s], at[p], at[o]) for s, p, o in t.triples})
    return out


def _content(conn: Connection, rid: int) -> set[IdTriple]:
    return set(driver.rows(conn, "SELECT s, p, o FROM quads WHERE resource_id = :r", {"r": rid},
                           named=False))


def change_delta(conn: Connection, seq: int) -> dict[Triple, int]:
    """The ΔG of one change, decoded."""
    rows = conn.execute(text("SELECT s, p, o, sign FROM change_triples WHERE seq = :q"),
                        {"q": seq}).all()
    names = terms.decode(conn, (x for r in rows for x in (r.s, r.p, r.o)))
    return {(names[r.s], names[r.p], names[r.o]): r.sign for r in rows}


def default_graph(conn: Connection, pod: int) -> set[Triple]:
    rows = conn.execute(text("SELECT s, p, o FROM pod_triples WHERE pod_id = :pod"),
                        {"pod": pod}).all()
    names = terms.decode(conn, (x for r in rows for x in (r.s, r.p, r.o)))
    return {(names[r.s], names[r.p], names[r.o]) for r in rows}


def agent_by_token(conn: Connection, token_hash: bytes):  # type: ignore[no-untyped-def]
    return conn.execute(text("SELECT id, webid, role FROM agents WHERE token_hash = :t"),
                        {"t": token_hash}).one_or_none()


def agent_by_webid(conn: Connection, webid: str):  # type: ignore[no-untyped-def]
    return conn.execute(text("SELECT id, webid, role FROM agents WHERE webid = :w"),
                        {"w": webid}).one_or_none()


def pod_row(conn: Connection, name: str):  # type: ignore[no-untyped-def]
    """The pod (id, name, owner_id, owner's WebID, acl_version: bumped by
    every write of its ACL documents), or None."""
    return conn.execute(text(
        "SELECT p.id, p.name, p.owner_id, a.webid AS owner, p.acl_version FROM pods p "
        "JOIN agents a ON a.id = p.owner_id WHERE p.name = :n"), {"n": name}).one_or_none()


def resource(conn: Connection, pod: int, path: str, lock: bool = False):  # type: ignore[no-untyped-def]
    """The resource's row (id, path, etag, content_type, updated_at, binary:
    whether it is non-RDF, size: its bytes), or None; ``lock`` holds its name
    for the caller's write — a name, not a row, so that of two writers
    creating one new resource the second waits for the first and then sees
    it (If-None-Match: * is then one 201, the rest 412), and a document and a
    container of one name are never created at once."""
    if lock:
        conn.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"),
                     {"key": f"resource {pod} {path.rstrip('/')}"})
    return conn.execute(text(
        "SELECT id, path, etag, content_type, updated_at, body IS NOT NULL AS binary, "
        "octet_length(body) AS size FROM resources WHERE pod_id = :pod "
        "AND path = :path" + (" FOR UPDATE" if lock else "")),
        {"pod": pod, "path": path}).one_or_none()


def named(conn: Connection, pod: int, path: str) -> str | None:
    """The path of the resource holding ``path``'s name in either form
    (``d1`` or ``d1/``), or None."""
    found = conn.execute(text("SELECT path FROM resources WHERE pod_id = :pod "
                              "AND rtrim(path, '/') = :name"),
                         {"pod": pod, "name": path.rstrip("/")}).scalar()
    return None if found is None else str(found)


def resource_body(conn: Connection, rid: int) -> bytes:
    return bytes(conn.execute(text("SELECT body FROM resources WHERE id = :r"),
                              {"r": rid}).scalar_one())


def resource_triples(conn: Connection, rid: int) -> set[Triple]:
    """The resource's triples, as rdflib terms."""
    return resource_table(conn, rid).decoded()


def resource_table(conn: Connection, rid: int) -> TermTable:
    """The resource's triples as a table of dictionary fields, a subject's
    together: what a GET writes out, with no term object built (design note
    204)."""
    rows = driver.rows(conn, "SELECT s, p, o FROM quads WHERE resource_id = :r ORDER BY s, p, o",
                       {"r": rid}, named=False)
    names = terms.decode_fields(conn, (x for r in rows for x in r))
    at = {i: n for n, i in enumerate(names)}
    return TermTable(list(names.values()), [(at[s], at[p], at[o]) for s, p, o in rows])


def members(conn: Connection, pod: int, container: str) -> list[str]:
    """Paths of the direct members of ``container`` ('' for the root):
    documents just below it, and the containers one level down."""
    return [r[0] for r in conn.execute(text(
        "SELECT path FROM resources WHERE pod_id = :pod AND starts_with(path, :pre) "
        "AND path <> :pre AND strpos(rtrim(substr(path, length(:pre) + 1), '/'), '/') = 0 "
        "ORDER BY path"), {"pod": pod, "pre": container})]


def written(conn: Connection, seq: int):  # type: ignore[no-untyped-def]
    """(etag, changed) of change ``seq``: the resource's ETag after it and the
    triples it inserted and deleted in the resource."""
    return conn.execute(text(
        "SELECT r.etag, c.inserted + c.deleted AS changed FROM changes c "
        "JOIN resources r ON r.id = c.resource_id WHERE c.seq = :s"), {"s": seq}).one()

"""The Postgres schema (architecture: Postgres is the one source of truth).

Static tables only; the K-relations of each view node are created per view and
per schema (decision 3) when a view is registered.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    DateTime,
    Double,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    SmallInteger,
    String,
    Text,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING = {"ix": "ix_%(table_name)s_%(column_0_N_name)s", "uq": "uq_%(table_name)s_%(column_0_N_name)s",
          "ck": "ck_%(table_name)s_%(constraint_name)s",
          "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
          "pk": "pk_%(table_name)s"}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


def _now() -> Mapped[datetime]:
    return mapped_column(DateTime(timezone=True), server_default=func.now(), nullable=False)


class Agent(Base):
    """A WebID with a role: a pod owner or a data consumer."""

    __tablename__ = "agents"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    webid: Mapped[str] = mapped_column(Text, unique=True)
    role: Mapped[str] = mapped_column(String(16))
    token_hash: Mapped[bytes] = mapped_column(LargeBinary, unique=True)
    created_at: Mapped[datetime] = _now()
    __table_args__ = (CheckConstraint("role IN ('owner', 'consumer')", name="role"),)


class DpopProof(Base):
    """A DPoP proof used (its key's thumbprint and ``jti``, hashed) until it
    expires: every API process refuses it a second time (RFC 9449 §11.1;
    migration 0034)."""

    __tablename__ = "dpop_proofs"
    digest: Mapped[bytes] = mapped_column(LargeBinary, primary_key=True)
    expires: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)


class Pod(Base):
    __tablename__ = "pods"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("agents.id"))
    created_at: Mapped[datetime] = _now()
    acl_version: Mapped[int] = mapped_column(BigInteger, server_default="0")  # bumped by ACL writes


class Resource(Base):
    """An LDP resource: a container (its path '' or ending in '/'), an RDF
    document (one named graph of its pod) or a non-RDF resource (``body``,
    its quads the description resource's). A document and a container never
    share a name: the path without its trailing slash is unique in the pod."""

    __tablename__ = "resources"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    pod_id: Mapped[int] = mapped_column(ForeignKey("pods.id", ondelete="CASCADE"))
    path: Mapped[str] = mapped_column(Text)
    etag: Mapped[str] = mapped_column(String(64))
    content_type: Mapped[str] = mapped_column(String(100))
    body: Mapped[bytes | None] = mapped_column(LargeBinary)
    updated_at: Mapped[datetime] = _now()
    __table_args__ = (Index(None, "pod_id", "path", unique=True),
                      Index("uq_resources_pod_id_name", "pod_id", text("rtrim(path, '/')"),
                            unique=True))


class AclDocument(Base):
    """A Web Access Control document (``<path>.acl``): no resource of the pod
    (no view reads it, no container lists it), its triples as N-Triples with
    absolute IRIs, and the pod's root IRI they were written under."""

    __tablename__ = "acl_documents"
    pod_id: Mapped[int] = mapped_column(ForeignKey("pods.id", ondelete="CASCADE"),
                                        primary_key=True)
    path: Mapped[str] = mapped_column(Text, primary_key=True)  # the resource it controls
    root: Mapped[str] = mapped_column(Text)
    body: Mapped[str] = mapped_column(Text)
    etag: Mapped[str] = mapped_column(String(64))
    updated_at: Mapped[datetime] = _now()


# The dictionary's xsd:integer literals, indexed by lexical form (migration 0017): a
# rendered GROUP BY looks its counts' terms up by them (``storage.terms.integer_id``)
INTEGER_LITERALS = "kind = 2 AND datatype = 'http://www.w3.org/2001/XMLSchema#integer'"
# and its decimal, float and double literals by datatype and lexical form (0027): a
# rendered SUM's terms (``storage.terms.number_id``)
NUMBER_TYPES = tuple(f"http://www.w3.org/2001/XMLSchema#{t}" for t in ("decimal", "float", "double"))
NUMBER_LITERALS = f"kind = 2 AND datatype IN ({', '.join(repr(t) for t in NUMBER_TYPES)})"


class Term(Base):
    """The dictionary of RDF terms (decision 2): kind 0 IRI, 1 blank node,
    2 literal; ``digest`` identifies the term; ``num`` and ``ts`` hold parsed
    numeric and dateTime values for filters, ``sortkey`` its place in
    ORDER BY's order for MIN, MAX and SAMPLE."""

    __tablename__ = "terms"
    __table_args__ = (Index("ix_terms_integer_lexical", "lexical",
                            postgresql_where=text(INTEGER_LITERALS)),
                      Index("ix_terms_number_lexical", "datatype", "lexical",
                            postgresql_where=text(NUMBER_LITERALS)))
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    digest: Mapped[bytes] = mapped_column(LargeBinary, unique=True)
    kind: Mapped[int] = mapped_column(SmallInteger)
    lexical: Mapped[str] = mapped_column(Text)
    datatype: Mapped[str | None] = mapped_column(Text)
    lang: Mapped[str | None] = mapped_column(String(64))
    num: Mapped[float | None] = mapped_column(Double)
    ts: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # a typed literal's place in ORDER BY's order, bytewise (``views.sortkey``;
    # migration 0029's ``pv_sort_key`` gives every term's)
    sortkey: Mapped[bytes | None] = mapped_column(LargeBinary)


class Quad(Base):
    """A triple of a resource (its named graph), dictionary-encoded."""

    __tablename__ = "quads"
    # read by resource only; no foreign key: a trigger deletes a deleted
    # resource's quads (migration 0010: a per-row check cost most of a bulk load)
    resource_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    s: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    p: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    o: Mapped[int] = mapped_column(BigInteger, primary_key=True)


class PodTriple(Base):
    """A pod's default graph, the union of its resources, support-counted
    (decision 5): ``n`` resources hold the triple."""

    __tablename__ = "pod_triples"
    pod_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)  # cascade: migration 0010
    s: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    p: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    o: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    n: Mapped[int] = mapped_column(Integer)
    # covering indexes: a full-key probe is exact whichever index the planner
    # picks, and lookups by (p, o) or (o) are index-only
    __table_args__ = (Index(None, "pod_id", "p", "o", "s"), Index(None, "pod_id", "o", "s", "p"))


class Change(Base):
    """The change log: one entry per committed write, in sequence order."""

    __tablename__ = "changes"
    seq: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    pod_id: Mapped[int] = mapped_column(ForeignKey("pods.id", ondelete="CASCADE"))
    resource_id: Mapped[int | None] = mapped_column(BigInteger)
    path: Mapped[str | None] = mapped_column(Text)  # the resource's, kept after it is deleted
    inserted: Mapped[int] = mapped_column(Integer, default=0)
    deleted: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = _now()
    __table_args__ = (Index(None, "pod_id", "seq"),)


class ChangeTriple(Base):
    """ΔG of a change: the pod default graph's set-membership changes."""

    __tablename__ = "change_triples"
    seq: Mapped[int] = mapped_column(BigInteger, primary_key=True)  # cascade: migration 0010
    s: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    p: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    o: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    sign: Mapped[int] = mapped_column(SmallInteger)
    __table_args__ = (CheckConstraint("sign IN (-1, 1)", name="sign"),)


class ChangeQuad(Base):
    """A change's diff of its resource (its named graph), the triples the
    write added (+1) to or removed (-1) from that document (migration 0013),
    less those of its ΔG, which ``change_triples`` holds (migration 0033)."""

    __tablename__ = "change_quads"
    seq: Mapped[int] = mapped_column(BigInteger, primary_key=True)  # cascade: migration 0013
    s: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    p: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    o: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    sign: Mapped[int] = mapped_column(SmallInteger)
    __table_args__ = (CheckConstraint("sign IN (-1, 1)", name="sign"),)


class View(Base):
    __tablename__ = "views"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    consumer_id: Mapped[int] = mapped_column(ForeignKey("agents.id"))
    name: Mapped[str] = mapped_column(String(200))
    query: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16), default="backfilling")
    watermark: Mapped[int] = mapped_column(BigInteger, default=0)
    # the predicates (term ids) its triple patterns can match; NULL: any
    predicates: Mapped[list[int] | None] = mapped_column(ARRAY(BigInteger))
    created_at: Mapped[datetime] = _now()
    # the plan its state was computed with (views.plan): its fingerprint and
    # root node, and the engine code that last checked it (NULL: rebuild)
    plan_fingerprint: Mapped[str | None] = mapped_column(String(64))
    root_node: Mapped[str | None] = mapped_column(String(64))
    plan_engine: Mapped[str | None] = mapped_column(String(64))
    status_note: Mapped[str | None] = mapped_column(Text)  # why it is (re)building or failed
    state_rows: Mapped[int] = mapped_column(BigInteger, server_default="0")  # rows it stores
    # its results' solutions with their multiplicity (NULL: not built since migration 0024)
    solutions: Mapped[int | None] = mapped_column(BigInteger)
    # the oldest change-feed position a consumer may resume from (storage.feed)
    feed_floor: Mapped[int] = mapped_column(BigInteger, server_default="0")
    # the deltas its feed holds (view_changes rows): retention's count (migration 0021)
    feed_deltas: Mapped[int] = mapped_column(BigInteger, server_default="0")
    # a CONSTRUCT view's graph is written into this resource (pod, path); the
    # view never reads it (migration 0013)
    target_pod: Mapped[int | None] = mapped_column(BigInteger)
    target_path: Mapped[str | None] = mapped_column(Text)
    # where its last job's batch ran: the executor, and on SQL the rendered
    # statement or the interpreter and why (migration 0014)
    placement: Mapped[str | None] = mapped_column(Text)
    # the epoch of its group tallies: only rows written in it are read; every
    # job not ended by a rendered statement moves it on (migration 0032)
    tally_epoch: Mapped[int] = mapped_column(BigInteger, server_default="0")
    __table_args__ = (
        CheckConstraint("status IN ('backfilling', 'rebuilding', 'ready', 'failed')",
                        name="status"),)


class ViewChange(Base):
    """A batch's ΔV of a view's root, at the change-log position the batch
    brought the view to (decision 10); its rows in ``view_change_rows``."""

    __tablename__ = "view_changes"
    view_id: Mapped[int] = mapped_column(ForeignKey("views.id", ondelete="CASCADE"),
                                         primary_key=True)
    seq: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    added: Mapped[int] = mapped_column(BigInteger)  # bindings added, with their counts
    removed: Mapped[int] = mapped_column(BigInteger)
    at: Mapped[datetime] = _now()
    __table_args__ = (Index(None, "view_id", "at"),)  # retention's age cut (migration 0021)


class ViewChangeRow(Base):
    """One binding of a ΔV: its term ids by variable and its signed count.
    Of the head ``view_changes`` (view_id, seq), with no foreign key: what
    drops a head drops its rows (``storage.feed``, ``views_repo.drop_view``;
    migration 0026, design note 152)."""

    __tablename__ = "view_change_rows"
    view_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    seq: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    i: Mapped[int] = mapped_column(Integer, primary_key=True)  # removals first, then additions
    k: Mapped[int] = mapped_column(BigInteger)
    binding: Mapped[dict] = mapped_column(JSONB)  # type: ignore[type-arg]


class NotificationChannel(Base):
    """A Solid Notifications channel on a view's results (design notes 90–99):
    WebSocketChannel2023 (``receiveFrom`` names it by a secret whose hash is
    kept) or WebhookChannel2023 (``send_to``); the subscriber's identity, so
    every delivery is access-checked as a read of the results; ``position``:
    the seq it has delivered up to; a webhook's attempts and its backoff."""

    __tablename__ = "notification_channels"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    token_hash: Mapped[bytes] = mapped_column(LargeBinary, unique=True)
    kind: Mapped[str] = mapped_column(String(16))
    view_id: Mapped[int] = mapped_column(ForeignKey("views.id", ondelete="CASCADE"), index=True)
    role: Mapped[str] = mapped_column(String(16))  # the subscriber (server.api.auth.Principal)
    agent_id: Mapped[int | None] = mapped_column(ForeignKey("agents.id", ondelete="CASCADE"))
    webid: Mapped[str] = mapped_column(Text)
    send_to: Mapped[str | None] = mapped_column(Text)
    position: Mapped[int] = mapped_column(BigInteger)
    status: Mapped[str] = mapped_column(String(16), server_default="active")
    attempts: Mapped[int] = mapped_column(Integer, server_default="0")  # failed in a row
    next_attempt: Mapped[datetime] = _now()
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = _now()
    __table_args__ = (
        CheckConstraint("kind IN ('websocket', 'webhook')", name="kind"),
        CheckConstraint("status IN ('active', 'dead', 'ended')", name="status"),
        CheckConstraint("(kind = 'webhook') = (send_to IS NOT NULL)", name="send_to"))


class Consent(Base):
    """A pod owner's consent for a consumer (all its views, or one)."""

    __tablename__ = "consents"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    pod_id: Mapped[int] = mapped_column(ForeignKey("pods.id", ondelete="CASCADE"))
    consumer_id: Mapped[int] = mapped_column(ForeignKey("agents.id"))
    view_id: Mapped[int | None] = mapped_column(ForeignKey("views.id", ondelete="CASCADE"))
    granted_at: Mapped[datetime] = _now()
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class ConsentEvent(Base):
    """The audit trail of consents."""

    __tablename__ = "consent_events"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    consent_id: Mapped[int] = mapped_column(ForeignKey("consents.id", ondelete="CASCADE"))
    action: Mapped[str] = mapped_column(String(16))
    actor: Mapped[str] = mapped_column(Text)
    at: Mapped[datetime] = _now()


class Job(Base):
    """A unit of work of the queue (procrastinate-style: retries are data)."""

    __tablename__ = "jobs"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    kind: Mapped[str] = mapped_column(String(32))
    view_id: Mapped[int | None] = mapped_column(ForeignKey("views.id", ondelete="CASCADE"))
    payload: Mapped[dict] = mapped_column(JSONB, default=dict)  # type: ignore[type-arg]
    status: Mapped[str] = mapped_column(String(16), default="queued")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    max_attempts: Mapped[int] = mapped_column(Integer, default=5)
    run_after: Mapped[datetime] = _now()
    last_error: Mapped[str | None] = mapped_column(Text)
    worker: Mapped[str | None] = mapped_column(String(100))
    created_at: Mapped[datetime] = _now()
    updated_at: Mapped[datetime] = _now()
    __table_args__ = (
        CheckConstraint("status IN ('queued', 'running', 'done', 'failed', 'dead')",
                        name="status"),
        CheckConstraint("kind IN ('apply_changes', 'backfill', 'grant', 'revoke', 'verify')",
                        name="kind"),
        Index(None, "status", "run_after"),
    )


class JobTotal(Base):
    """The done jobs the queue no longer holds, counted by kind and executor
    (``storage.ops.prune``): what the metrics read of them (migration 0022)."""

    __tablename__ = "job_totals"
    kind: Mapped[str] = mapped_column(String(32), primary_key=True)
    executor: Mapped[str] = mapped_column(Text, primary_key=True)
    done: Mapped[int] = mapped_column(BigInteger)
    failed: Mapped[int] = mapped_column(BigInteger)  # their failed attempts before the last
    sized: Mapped[int] = mapped_column(BigInteger)  # those with a size in triples
    triples: Mapped[int] = mapped_column(BigInteger)  # their sizes summed
    # of those sized, how many were at most each of ``storage.ops.JOB_BUCKETS``
    le: Mapped[list[int]] = mapped_column(ARRAY(BigInteger))


class JobProgress(Base):
    """Progress of a running job, written outside the job's own transaction
    (the job row stays locked while it runs)."""

    __tablename__ = "job_progress"
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"),
                                        primary_key=True)
    done: Mapped[int] = mapped_column(BigInteger, default=0)
    total: Mapped[int | None] = mapped_column(BigInteger)
    note: Mapped[str | None] = mapped_column(Text)
    updated_at: Mapped[datetime] = _now()


class KRelTable(Base):
    """One K-relation table of a view node for one schema (decision 3): the
    columns hold term ids of the schema's variables, plus ``k``."""

    __tablename__ = "krel_tables"
    view_id: Mapped[int] = mapped_column(ForeignKey("views.id", ondelete="CASCADE"),
                                         primary_key=True)
    node: Mapped[str] = mapped_column(String(64), primary_key=True)  # views.plan node id
    table_name: Mapped[str] = mapped_column(String(63), primary_key=True)
    variables: Mapped[list[str]] = mapped_column(JSONB)


class ConsentView(Base):
    """Where a consent stands for one view: a pod feeds the view only once its
    grant job has applied (``granted_seq``), until its revoke job has
    (``revoked_seq``); the view's state changes at exactly those points."""

    __tablename__ = "consent_views"
    consent_id: Mapped[int] = mapped_column(ForeignKey("consents.id", ondelete="CASCADE"),
                                            primary_key=True)
    view_id: Mapped[int] = mapped_column(ForeignKey("views.id", ondelete="CASCADE"),
                                         primary_key=True)
    granted_seq: Mapped[int | None] = mapped_column(BigInteger)
    revoked_seq: Mapped[int | None] = mapped_column(BigInteger)

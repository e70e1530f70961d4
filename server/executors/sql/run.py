"""The SQL executor's rendered path: a view's batch maintained by one
statement (``render``) inside the job's transaction, for plans whose every
node renders; ``placement`` says where each node of a plan runs."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rdflib.term import Identifier, Literal, URIRef
from sqlalchemy import Connection, Row, text

from server.executors.sql import render as R
from storage import changes, driver, feed, krel, terms, views_repo
from storage.arrays import literal
from storage.codec import Codec
from views.errors import ViewTooLarge
from views.plan import Group, Plan, Scan

INTERPRETER = "interpreter"
SQL = "sql"
# A batch of at most this many ΔG triples runs its statement prepared: planned
# once per connection, not per batch (planning was most of a selective view's
# statement, note 127); larger batches are planned for their own ΔG
PREPARED_UPTO = 1_000
# ... or this many, for a plan cheap to plan (at most CHEAP_SCANS triple scans,
# ``scans``): planning it costs ~1 ms, and a plan made for a batch of a few
# hundred triples runs faster than the session's generic one (note 172)
CHEAP_PREPARED_UPTO = 300
CHEAP_SCANS = 16
# ΔG's table is analyzed before a statement is planned for a batch of at least
# this many triples, twice as many as when the session last analyzed it, or
# more than PREPARED_UPTO: without its statistics Postgres takes each node's
# delta for a few rows and reads one CTE once per row of another (note 156)
ANALYZED_FROM = 100
_ANALYZED = "podviews_dg_analyzed"  # the size of the batch the session last analyzed ΔG at
# A view whose rendered statement joins more triple scans than this (each of
# a BGP's n delta terms joins its n patterns: ``scans``) runs its batches
# through the interpreter while its state is small (``jobs.unrendered``).
# Its statement is planned once per session and combination of predicates a
# batch changes: BSBM Q2's (12 patterns, 147 scans) cost 30–190 ms a plan, a
# BSBM update 29 ms (median) rendered against 6.4 interpreted; Q1, Q3, Q4
# (25–72 scans) plan in 5–14 ms, an update 3.9–5.3 ms against 5.7–6.6 (note 154)
PLANNED_SCANS = 100
# Nor one that merges its deltas into more K-relation tables than this (one
# per schema of each stored node: ``merged_tables``), each merge a few CTEs of
# the statement. With its BGP anchored (``scans``: 15), BSBM Q2's three
# OPTIONALs still make 21 tables and a statement of ~250 CTEs: rendered, a
# BSBM update took 7.1–7.3 ms (median; 5.5 warm at best, 30–55 ms planned
# anew) against 4.8–5.7 interpreted. Q1–Q4, path and SUM merge into 1 or 2,
# MIN/MAX into 8 (note 180).
MERGED_TABLES = 16
# A batch whose ΔG is under this fraction of the graph's triples re-reads its few
# keys' rows by index probes, one subquery per key (``R.Renderer.per_key``); a
# larger one by joins that read each predicate once. Measured (note 165): the
# delete of 10 products (~200 triples of 335k and 1.7M, ≤ 0.06 %) 10–60 ms
# faster probed; 500 changes of a ~2,000-triple pod (25 %) 1–2.5 ms slower a view
PROBED_BELOW = 0.005

# ΔG staged (migration 0028), counted by predicate and sign; the rest of the
# job's transaction plans the joins of its statements in their written order
# (design note 148): every term of the rendered statement starts from ΔG and
# follows the data (``render.connected``)
_STAGED = ("SELECT podviews_delta_staged(CAST(:pods AS bigint[]), CAST(:a AS bigint), "
           "CAST(:u AS bigint), CAST(:preds AS bigint[]))")


@functools.lru_cache(maxsize=1024)
def unrendered(plan: Plan, spark: bool = False) -> str | None:
    """Why the plan does not render to SQL (to Spark SQL with ``spark``):
    the first node that does not; None when it does."""
    return R.unrendered(plan, spark)


@functools.lru_cache(maxsize=1024)
def reaches(plan: Plan) -> bool:
    """Whether the plan's program on Spark reads only the triples its
    batch's keys reach (``R.reaches``)."""
    return R.reaches(plan)


@functools.lru_cache(maxsize=1024)
def spark_reads(plan: Plan) -> str:
    """What the plan's program on Spark reads of the graph, in words
    (``R.reads``)."""
    return R.reads(plan)


@functools.lru_cache(maxsize=1024)
def scans(plan: Plan) -> int:
    """The triple scans the plan's rendered statement joins: Σ n² over its
    BGPs of n patterns (Theorem 4.3's n delta terms of n scans each), n for
    one anchored at constant subjects (``render.anchored``: one join)."""
    return sum(len(n.triples) if R.anchored(n.triples) else len(n.triples) ** 2
               for n in plan.nodes if isinstance(n, Scan))


@functools.lru_cache(maxsize=1024)
def merged_tables(plan: Plan) -> int:
    """The K-relation tables the plan's rendered statement merges into."""
    return sum(len(schemas) for schemas in R.schemas_needed(plan).values())


@functools.lru_cache(maxsize=1024)
def tallied(plan: Plan) -> dict[str, tuple[int, list[tuple[str, str]]]]:
    """``R.tallied``, once per plan: ``prepare`` reads it every batch."""
    return R.tallied(plan)


def placement(plan: Plan) -> str:
    """Where the plan's nodes run: "sql", or "interpreter" and why."""
    why = unrendered(plan)
    return SQL if why is None else f"{INTERPRETER} ({why})"


def prepare(conn: Connection, view: int, plan: Plan, tables: dict[str, krel.NodeTables],
            tallies: dict[str, str]) -> None:
    """Every table the rendered statement writes, created and registered
    (``tables`` and ``tallies`` updated): one per possible schema of each
    stored node, and the tally table of each group keeping them (``tallied``)."""
    for node, schemas in R.schemas_needed(plan).items():
        have = tables.setdefault(node, {})
        for schema in schemas:
            if schema not in have:
                have[schema] = krel.create(conn, view, node, schema)
    for node, (keys, columns) in tallied(plan).items():
        if node not in tallies:
            tallies[node] = krel.create_tally(conn, view, node, keys, columns)


def fill(conn: Connection, view: int, plan: Plan, pods: list[int], upto: int) -> int:
    """Every tallied group's tallies (``tallied``) written from its members
    as a backfill leaves them, in tables it has just made (a backfill drops
    the view's tables first): a group's first batch then reads them rather
    than its members (design note 183). ΔG's table is made ready and empty
    (ΔG over (upto, upto]) for the graph the statement reads. The number of
    groups written."""
    if not tallied(plan):
        return 0
    tables, tallies = krel.tables(conn, view), dict[str, str]()
    prepare(conn, view, plan, tables, tallies)
    stage(conn, pods, upto, upto, None)
    r = R.Renderer(plan, tables, len(pods), R.Known(term_ids(conn, R.constants(plan)),
                                                      frozenset(), frozenset()))
    written = 0
    for n in plan.nodes:
        if isinstance(n, Group) and n.id in tallies:
            written += conn.execute(text(r.fill(n, tallies[n.id])),
                                    {"v": view, "pods": pods}).rowcount
    return written


# The parameters of the CTEs that end a job (``views_repo.closing``) for a
# ΔG of the size given: a job whose rendered statement ends it (note 170)
Ending = Callable[[int], Mapping[str, Any]]


@dataclass(frozen=True)
class Maintained:
    """A batch applied by the rendered statement: the change in stored rows,
    ΔG's size, and, when the statement ended the job, its closing row
    (``views_repo.close``'s)."""

    grown: int
    triples: int
    closed: Row | None = None


def maintain(conn: Connection, view: int, plan: Plan, tables: dict[str, krel.NodeTables],
             tallies: dict[str, str], pods: list[int], after: int, upto: int,
             predicates: list[int] | None, max_rows: int | None = None,
             counted: list[list[int]] | None = None, graph_rows: float | None = None,
             ending: Ending | None = None) -> Maintained:
    """Apply the changes of ``pods`` in (after, upto] to the view's state by
    the rendered statement.
    Statements: ΔG staged, unless the claim staged it (``counted``: its
    counts, as ``views_repo.claim_and_lock`` gives them), the plan's
    constants looked up (only those not met before on this connection),
    then, unless ΔG changes no node, ΔG's table analyzed where its size
    calls for it (``analyze``) and the statement (a large batch's: ΔG's
    table truncated after) — run again after adding the numbers (a group's
    counts and sums) the dictionary lacked, which it names having changed
    nothing. Its keys are probed where ΔG is under ``PROBED_BELOW`` of
    ``graph_rows`` (the graph's triples, as the claim read them from the
    statistics; None or -1, none yet: joins). With ``ending``, the
    statement also ends the job, ΔV recorded from its root's delta
    (``views_repo.closing``, design note 170); a batch with no statement
    leaves the job to be closed as usual."""
    batch = staged_batch(conn, view, plan, tables, tallies, pods, after, upto, predicates,
                         counted)
    if batch is None:
        return Maintained(0, 0)
    known, size = batch
    if probed(size, graph_rows):
        known = dataclasses.replace(known, probe=True)
    sql = rendering(plan, tables, tallies, len(pods), known, ending is not None)
    found = None
    large = size > prepared_upto(plan)
    if sql is not None:
        params = {"v": view, **(ending(size) if ending is not None else {})}
        analyze(conn, size, large)
        found = applied(conn, sql, pods, large, params)
        within(found.largest, max_rows)
    if large:  # a large ΔG's pages are not kept under the small batches' plans
        conn.execute(text(f"TRUNCATE {R.DG}"))
    if found is None:
        return Maintained(0, size)
    return Maintained(int(found.grown), size, found if ending is not None else None)


def applied(conn: Connection, sql: str, pods: list[int], large: bool,
            params: Mapping[str, Any]) -> Row:
    """The rendered statement's row (``execute``), run again after adding
    the numbers (a group's counts and sums) the dictionary lacked, which
    it names having changed nothing."""
    found = execute(conn, sql, pods, large, params)
    if found.missing:
        terms.intern(conn, [Literal(lexical, datatype=URIRef(datatype)) for datatype, lexical
                            in (m.split(" ", 1) for m in found.missing)])  # as number_id finds them
        found = execute(conn, sql, pods, large, params)
        assert not found.missing, f"numbers still missing from the dictionary: {found.missing}"
    return found


def probed(size: int, graph_rows: float | None) -> bool:
    """Whether a batch of ``size`` triples reads its keys' rows by index
    probes: ΔG under ``PROBED_BELOW`` of ``graph_rows`` (the graph's
    triples by the statistics; None or -1 before any: joins)."""
    return graph_rows is not None and size < PROBED_BELOW * graph_rows


def prepared_upto(plan: Plan) -> int:
    """The largest ΔG whose batch runs the plan's statement prepared (the
    session's plan); a larger one is planned for its own ΔG."""
    return CHEAP_PREPARED_UPTO if scans(plan) <= CHEAP_SCANS else PREPARED_UPTO


def rendering(plan: Plan, tables: dict[str, krel.NodeTables], tallies: dict[str, str],
              pods: int, known: R.Known, ends: bool = False) -> str | None:
    """``R.render``'s statement, remembered: a view's small batches render
    the same few texts again and again (rendering was a tenth of such a
    batch's Python, note 142). ``ends``: the statement ends the job too."""
    key = frozenset((node, schema, name, tuple(variables))
                    for node, by in tables.items() for schema, (name, variables) in by.items())
    return _rendered(plan, key, frozenset(tallies.items()), pods, frozenset(known.ids.items()),
                     known.inserted, known.deleted, known.probe, ends)


@functools.lru_cache(maxsize=1024)
def _rendered(plan: Plan, tables: frozenset[tuple[str, krel.Schema, str, tuple[str, ...]]],
              tallies: frozenset[tuple[str, str]], pods: int,
              ids: frozenset[tuple[Identifier, int]], inserted: frozenset[int] | None,
              deleted: frozenset[int] | None, probe: bool, ends: bool) -> str | None:
    by_node: dict[str, krel.NodeTables] = {}
    for node, schema, name, variables in tables:
        by_node.setdefault(node, {})[schema] = (name, list(variables))
    return R.render(plan, by_node, pods, R.Known(dict(ids), inserted, deleted, probe),
                    _closing if ends else None, dict(tallies))


def _closing(changes: str, grown: str, gate: str) -> tuple[str, str]:
    """``R.Closing`` for the change feed: ΔV the root delta's rows, consumed
    as ``storage.feed`` consumes captured ones."""
    return views_repo.closing(feed.from_rows(changes, gate), grown, gate, tallied=True)


def within(largest: int, max_rows: int | None) -> None:
    """A batch may change a stored node by at most ``max_rows`` rows."""
    if max_rows is not None and largest > max_rows:
        raise ViewTooLarge(f"one of its nodes changes by {largest:,} rows at once; "
                           f"the limit is {max_rows:,}")


def staged_batch(conn: Connection, view: int, plan: Plan, tables: dict[str, krel.NodeTables],
                 tallies: dict[str, str], pods: list[int], after: int, upto: int,
                 predicates: list[int] | None, counted: list[list[int]] | None = None
                 ) -> tuple[R.Known, int] | None:
    """ΔG of ``pods`` in (after, upto] staged (by the claim when it gives
    ``counted``), every table the program may write created (``prepare``):
    what the renderer knows of the batch, and ΔG's size; None when ΔG is
    empty."""
    if upto <= after or not pods:
        return None
    staged = stage(conn, pods, after, upto, predicates) if counted is None else \
        _counts(counted)
    changed = set(staged)
    if not changed:
        return None
    prepare(conn, view, plan, tables, tallies)
    known = R.Known(term_ids(conn, R.constants(plan)),
                    frozenset(p for p, sign in changed if sign > 0),
                    frozenset(p for p, sign in changed if sign < 0))
    return known, sum(staged.values())


def execute(conn: Connection, sql: str, pods: list[int], large: bool,
            params: Mapping[str, Any]) -> Row:
    """The rendered statement's row, run with ``params`` (a job's end's, if
    it ends it). A small batch's statement
    runs prepared, its text with the pods inlined (Postgres plans it once
    for the session, generic in its other parameters; note 127): psycopg
    prepares it at its first run and keeps the session's most recent
    (``storage.driver``). A ``large`` batch's (``prepared_upto``) is
    planned for its ΔG (analyzed first: ``analyze``)."""
    if large:
        return driver.one(conn, sql, {**params, "pods": pods}, prepare=False)
    sql = sql.replace(R.PODS, f"CAST('{literal([int(p) for p in pods])}' AS bigint[])")
    return driver.one(conn, sql, params)


def analyze(conn: Connection, size: int, large: bool) -> None:
    """ΔG's table (``size`` triples staged) analyzed where the plans made
    from its last statistics would take its deltas for much smaller than
    they are (``ANALYZED_FROM``). An ANALYZE makes the session plan its
    prepared statements again; it comes once per doubling of the batches'
    size, and before every large batch, whose statement is planned anyway.
    The size is remembered with the connection: a job rolled back after its
    ANALYZE loses the statistics but not the mark, and the session's plans
    go without them until the next doubling (a cost, never a wrong result)."""
    last = conn.info.get(_ANALYZED, 0)
    if large or size >= max(ANALYZED_FROM, 2 * last):
        conn.execute(text(f"ANALYZE {R.DG}"))
        conn.info[_ANALYZED] = max(size, last)


def stage(conn: Connection, pods: list[int], after: int, upto: int,
          predicates: list[int] | None) -> dict[tuple[int, int], int]:
    """ΔG of the view's input over (after, upto] in the session's temporary
    table ``pv_dg``, made ready and empty, then filled; its triples by
    (predicate, sign). Not emptied at commit: that truncation would make
    Postgres plan the prepared statements that read it again (note 127).
    JIT is turned off for the rest of the transaction: it compiles a
    rendered statement for seconds that runs in milliseconds (note 88).
    ``podviews_delta_staged`` (migration 0028) does all of it; the claim
    calls it itself for a view placed as rendered (note 157). Staging has
    the rest of the transaction join in the written order (note 148)."""
    counted = driver.one(conn, _STAGED, changes.net_parameters(pods, after, upto, predicates))[0]
    return _counts(counted)


def _counts(counted: list[list[int]]) -> dict[tuple[int, int], int]:
    """``podviews_delta_staged``'s counts by (predicate, sign)."""
    return {(int(p), int(sign)): int(n) for p, sign, n in counted}


def term_ids(conn: Connection, terms: set[Identifier]) -> dict[Identifier, int]:
    """The ids of ``terms`` the dictionary holds, remembered with the
    database connection: a term's id never changes once given."""
    known: dict[Identifier, int] = conn.info.setdefault("podviews_term_ids", {})
    missing = [t for t in terms if t not in known]
    if missing:
        known.update(Codec(conn).encode(missing, add=False))
    return {t: known[t] for t in terms if t in known}

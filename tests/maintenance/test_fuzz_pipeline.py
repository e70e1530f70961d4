"""The differential term fuzzer through the pipeline (issue 15): each case's
view registered by a consumer, its batches written to a pod (two resources,
so the pod's default graph counts support), its jobs run by workers on the
SQL executor, its state in Postgres, and the results a reader gets compared
after every batch with pyoxigraph from scratch — and with the view's change
feed, followed from its first snapshot (each job's ΔV, whether the root's
triggers captured it or the rendered statement recorded it, design note
170) (the Spark executor's cases
are in tests/executors/test_spark.py, beside the other Spark tests: one
Spark session warms up once).

Its share of ``PODVIEWS_FUZZ_EXAMPLES``: a 25th through SQL (and a 50th
with every batch's keys probed, a 50th of groups keeping tallies with each
batch's executor drawn), a 2500th
through Spark (the in-memory engine runs all of them,
tests/engine/test_fuzz_terms.py)."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
from collections import Counter
from collections.abc import Iterator

import sqlalchemy as sa
from hypothesis import assume, given, note
from hypothesis import strategies as st
from rdflib.term import Identifier, Literal

from server.api.consents.service import record_grant
from server.api.views.service import register_view
from server.errors import Conflict
from server.executors.sql import run as rendered
from server.maintenance import jobs
from server.maintenance.router import Router
from storage import catalog, pods
from tests.engine import grammar
from tests.engine.fuzz_paths import PathCase, check_path_case, path_cases
from tests.engine.fuzz_terms import (
    IRIS,
    ORDERED,
    PREDICATES,
    PREFIXES,
    Case,
    Changes,
    cases,
    check_case,
    describe,
    render,
)
from tests.engine.test_fuzz_paths import EXAMPLES as PATH_EXAMPLES
from tests.engine.test_fuzz_terms import EXAMPLES, fuzz_settings
from tests.engine.test_properties import EXAMPLES as PROPERTY_EXAMPLES
from tests.maintenance.test_feed import Follower
from views.compile import compile_query
from views.errors import UnsupportedFeature
from views.kset import KSet

_IDS = itertools.count()


class InPipeline:
    """The case's view kept by the pipeline: pod writes, jobs, K-relations."""

    def __init__(self, engine: sa.Engine, case: Case, router: Router) -> None:
        self.engine, self.router, self.case = engine, router, case
        _, self.pod, consumer, _ = granted_pod(engine, "fuzz")
        with engine.begin() as c:
            self.view = register_view(c, consumer, "fuzz", PREFIXES + case.query)
        self.held: list[set[tuple]] = [set(), set()]  # two resources of the pod
        drain(engine, self.view, router)
        self.feed: Follower | None = Follower(engine, self.view, budget=1_000, key=exact)
        try:
            self.feed.start()
        except Conflict:  # ASK, LIMIT/OFFSET: no changes to follow
            self.feed = None

    def __call__(self, changes: Changes) -> KSet:
        touched = set()
        for (_, s, p, o), sign in changes:
            i = self.case.triples.index((s, p, o))
            held = self.held[i % 2]  # triples by index parity; the pod's graph counts both
            (held.add if sign > 0 else held.discard)((s, p, o))
            touched.add(i % 2)
        with self.engine.begin() as c:
            for r in sorted(touched):
                pods.put_resource(c, self.pod, f"r{r}", self.held[r])
        drain(self.engine, self.view, self.router)
        with self.engine.connect() as c:
            got = catalog.view_results(c, self.view)
        if self.feed is None:
            return got
        self.feed.follow()
        assert self.feed.rows == feed_rows(got), \
            "the view's feed, followed, differs from its results"
        return got


def granted_pod(engine: sa.Engine, tag: str) -> tuple[str, int, int, int]:
    """A new pod named ``{tag}-{n}`` with its owner, and a consumer it is
    granted to: (its name, its id, the consumer, the consent)."""
    n = next(_IDS)
    with engine.begin() as c:
        owner = pods.create_agent(c, f"urn:{tag}:owner:{n}", "owner", f"o{n}".encode())
        consumer = pods.create_agent(c, f"urn:{tag}:consumer:{n}", "consumer", f"c{n}".encode())
        pod = pods.create_pod(c, f"{tag}-{n}", owner)
        return f"{tag}-{n}", pod, consumer, record_grant(c, pod, consumer)[0]


def drain(engine: sa.Engine, view: int, router: Router) -> None:
    """Run the queue's jobs to the end; none of ``view``'s failed."""
    while jobs.run_one(engine, "fuzz", router):
        pass
    with engine.connect() as c:
        failed = c.execute(sa.text("SELECT last_error FROM jobs WHERE view_id = :v "
                                   "AND status <> 'done'"), {"v": view}).all()
    assert failed == [], failed


def exact(b: dict[str, Identifier]) -> tuple:
    """A binding as the feed and the results give it (the same terms,
    blank nodes included)."""
    return tuple(sorted(b.items()))


def feed_rows(got: KSet) -> Counter:
    """A view's results as its feed, followed, counts them."""
    return Counter({exact(dict(m)): k for m, k in got.items()})


SQL = Router(mode="sql", render=True)  # plans that render run as SQL, the others interpreted


@fuzz_settings(EXAMPLES // 25)
@given(case=cases())
def test_sql_executor_agrees_with_pyoxigraph(cases_engine: sa.Engine, case: Case) -> None:
    check_case(case, InPipeline(cases_engine, case, SQL))


# The shapes read by index probes. Stars (every pattern's subject ?s), which
# ``render.Renderer.star_scan`` re-evaluates on ΔG's subjects: shared objects, a
# constant, the subject as object, a predicate twice, an OPTIONAL and a filter above
# one; and one it leaves to Theorem 4.3's terms (a variable predicate). BGPs anchored
# at constant subjects (``render.anchored``, design note 180), evaluated whole: a
# chain, a constant's star, a variable bound twice, two anchors, one in no triple.
_PROBED_SHAPES = (
    "?s :p ?o . ?s :q ?w", "?s :p ?o . ?s :q ?o", "?s :p ⟨c0⟩ . ?s :q ?w",
    "?s :p ?s . ?s :q ?w", "?s :p ?o . ?s ?x ?w", "?s :p ?o . ?s :p ?w",
    "?s :p ?o . ?s :q ?w FILTER(?o != ?w)", "?t :q ?w OPTIONAL { ?s :p ?o . ?s :q ?w }",
    ":a :p ?o . ?o :q ?w", ":a :p ?o . :a :q ?w", ":a :p ?o . ?o :p ?w . ?w :q ?x",
    ":a :p ?o . ?o :q ?o", ":a :p ?o . :b :q ?o", ":a :p ?o . ?o :q ⟨c0⟩",
    ":z :p ?o . ?o :q ?w", "?t :q ?w OPTIONAL { :a :p ?o . ?o :q ?w }",
    ":a :p ?o . ?o :q ?w . ?w :p ?o")


@st.composite
def probed_cases(draw: st.DrawFn) -> Case:
    """A case of ``cases``' data and batches whose query is a star's, or
    a BGP's anchored at constant subjects."""
    case = draw(cases())
    shape = draw(st.sampled_from(_PROBED_SHAPES))
    query = render(f"SELECT * WHERE {{ {shape} }}", case.pool, True)
    return dataclasses.replace(case, query=query, order_vars=(), by_value=(), limit=None,
                               offset=0)


@fuzz_settings(EXAMPLES // 50)
@given(case=st.one_of(cases(), probed_cases()))
def test_sql_executor_probing_every_batch_agrees_with_pyoxigraph(cases_engine: sa.Engine,
                                                                  case: Case) -> None:
    """Every batch rendered as one small beside the graph (``run.probed``):
    its keys read by index probes, a star's mappings re-evaluated on them
    (``render.Renderer.star_scan``, design note 177) — what a large pod's
    batches run, which the fuzzer's few triples never reach by the
    statistics."""
    with probing():
        check_case(case, InPipeline(cases_engine, case, SQL))


def test_stars_probed_with_the_centre_as_an_object_too(
        cases_engine: sa.Engine) -> None:
    """Star shapes a random case draws seldom, each batch probed: the
    centre repeated as a pattern's object, beside a shared object and
    beside its own predicate again."""
    a, b, c = IRIS[:3]
    p, q = PREDICATES
    triples = ((a, p, a), (a, q, Literal(1)), (b, p, b), (b, q, Literal(2)), (c, p, a),
               (a, q, Literal(3)))
    batches = (((0, 1), (1, 1), (2, 1), (4, 1)), ((3, 1), (0, -1)), ((0, 1), (5, 1), (1, -1)),
               ((2, -1), (3, -1), (4, -1)))
    with probing():
        for pattern in ("?s :p ?s . ?s :q ?w", "?s :p ?s . ?s :q ?o . ?s :p ?o",
                        "?s :q ?w . ?s :p ?s . ?s :p ?o"):
            case = Case(pool=(Literal(1),), triples=triples, batches=batches,
                        query=f"SELECT * WHERE {{ {pattern} }}")
            check_case(case, InPipeline(cases_engine, case, SQL))


def test_a_star_probed_where_one_pattern_changes_twice_at_one_centre(
        cases_engine: sa.Engine) -> None:
    """Batches whose triples of ΔG all match one pattern of the star, two
    of them at one centre (inserted together, then deleted together): the
    centre is one key, its mappings counted once (seed 12866 found them
    counted twice: results of −1, each removal in the feed twice)."""
    a, d = IRIS[0], IRIS[3]
    p, q = PREDICATES
    triples = ((d, p, Literal(1)), (d, q, Literal(1)), (d, p, a), (a, q, d))
    batches = (((1, 1), (3, 1)), ((0, 1), (2, 1)), ((2, -1), (0, -1)), ((0, 1), (2, 1), (1, -1)))
    with probing():
        for pattern in ("?s :p ?o . ?s :q ?w", "?s :p ?o . ?s :q ?w FILTER(?o != ?w)"):
            case = Case(pool=(Literal(1),), triples=triples, batches=batches,
                        query=f"SELECT * WHERE {{ {pattern} }}")
            check_case(case, InPipeline(cases_engine, case, SQL))


def test_aggregates_of_variables_no_pattern_binds(cases_engine: sa.Engine) -> None:
    """A group whose keys or aggregates name a variable its pattern never
    binds reads a column of NULLs (the structural fuzzer's first find: the
    renderer had no column for ?y, and every job of the view failed)."""
    a, b = IRIS[:2]
    p, _ = PREDICATES
    triples = ((a, p, a), (a, p, b), (b, p, Literal(2)))
    batches = (((0, 1), (1, 1), (2, 1)), ((1, -1),), ((0, -1), (2, -1)))
    for query in ("SELECT (COUNT(DISTINCT ?y) AS ?n) WHERE { ?x :p ?z }",
                  ("SELECT ?x (COUNT(?y) AS ?n) (SUM(?y) AS ?s) (MIN(?y) AS ?m) (COUNT(*) AS ?c) "
                   "WHERE { ?x :p ?z } GROUP BY ?x"),
                  "SELECT ?u (MAX(?z) AS ?m) (AVG(?y) AS ?v) WHERE { ?x :p ?z } GROUP BY ?u"):
        case = Case(pool=(Literal(2),), triples=triples, batches=batches, query=query)
        check_case(case, InPipeline(cases_engine, case, SQL))


@contextlib.contextmanager
def probing() -> Iterator[None]:
    """Every batch's keys read by index probes (``run.probed``), however
    small the graph."""
    was = rendered.probed
    rendered.probed = lambda size, graph_rows: True
    try:
        yield
    finally:
        rendered.probed = was


INTERPRETED = Router(mode="sql", render=False, render_from_rows=0)  # rendering off


@st.composite
def tallied_cases(draw: st.DrawFn) -> tuple[Case, list[bool]]:
    """A case of ``cases``' data and batches whose query groups with
    aggregates that keep tallies when rendered (COUNT and SUM, MIN and MAX:
    ``tally.kept``, design note 181), and for each batch whether the
    rendered statement runs it (else the interpreter)."""
    case = draw(cases())
    fn = draw(st.sampled_from(["SUM", "COUNT", "MIN", "MAX"]))
    where = "?s ?p ?o"
    if fn in ("MIN", "MAX"):  # as fuzz_terms' aggregates: groups ``<`` orders totally
        where += f" FILTER({draw(st.sampled_from(ORDERED))})"
    grouping = draw(st.sampled_from(["", " GROUP BY ?s", " GROUP BY ?p"]))
    head = "?s " if "?s" in grouping else "?p " if "?p" in grouping else ""
    query = f"SELECT {head}({fn}(?o) AS ?a) (COUNT(*) AS ?n) WHERE {{ {where} }}{grouping}"
    routes = draw(st.lists(st.booleans(), min_size=len(case.batches),
                           max_size=len(case.batches)))
    return dataclasses.replace(case, query=query, order_vars=(), limit=None, offset=0,
                               by_value=("a",) if fn in ("MIN", "MAX") else ()), routes


@fuzz_settings(EXAMPLES // 50)
@given(drawn=tallied_cases())
def test_group_tallies_agree_with_pyoxigraph_whichever_path_runs_each_batch(
        cases_engine: sa.Engine, drawn: tuple[Case, list[bool]]) -> None:
    """A linear group's batches run by the rendered statement, which keeps
    its tallies, or by the interpreter, after which none written before
    is read (``views.tally_epoch``): the results equal pyoxigraph's after
    every batch."""
    case, routes = drawn
    pipeline = InPipeline(cases_engine, case, SQL)
    turns = iter(routes)

    def maintain(changes: Changes) -> KSet:
        pipeline.router = SQL if next(turns) else INTERPRETED
        return pipeline(changes)

    check_case(case, maintain)


@st.composite
def structural_cases(draw: st.DrawFn) -> Case:
    """A query of the structural grammar (tests/engine/grammar.py: nested
    OPTIONAL, UNION, MINUS, EXISTS, sub-SELECTs grouped or distinct, BIND,
    VALUES, aggregates with HAVING) over its default graph, with its stream
    of batches, as a case."""
    query, batches = draw(grammar.cases(graphs=0))
    try:
        compile_query(query)
    except UnsupportedFeature:
        assume(False)
    stream = [[(sign, grammar.to_quad(q)[1:]) for sign, q in batch] for batch in batches]
    triples = list(dict.fromkeys(t for batch in stream for _, t in batch))
    batches = tuple(tuple((triples.index(t), sign) for sign, t in batch) for batch in stream)
    pool = tuple(dict.fromkeys(o for _, _, o in triples if isinstance(o, Literal)))
    return Case(pool=pool, triples=tuple(triples), batches=batches,
                query=query.removeprefix(grammar.PREFIX))


@fuzz_settings(max(PROPERTY_EXAMPLES // 20, 1))
@given(case=structural_cases(), probed=st.booleans())
def test_sql_executor_maintains_nested_operators_like_pyoxigraph(cases_engine: sa.Engine,
                                                                 case: Case, probed: bool) -> None:
    """The in-memory property test's queries (a 20th of
    ``PODVIEWS_PROPERTY_EXAMPLES``) kept by the pipeline, the plans that
    render run as SQL: each operator's delta rule under the others; half
    the cases with every batch's keys read by index probes (``probing``)."""
    note(describe(case))
    with probing() if probed else contextlib.nullcontext():
        check_case(case, InPipeline(cases_engine, case, SQL))


@fuzz_settings(max(PATH_EXAMPLES // 5, 1))
@given(case=path_cases())
def test_sql_executor_maintains_paths_like_pyoxigraph(cases_engine: sa.Engine, case: PathCase) -> None:
    """Issue 19: the Closure node with its state in Postgres (a fifth of the
    path fuzzer's cases)."""
    check_path_case(case, InPipeline(cases_engine, case, SQL))

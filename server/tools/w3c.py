"""The W3C SPARQL 1.1 query evaluation tests, run from scratch or incrementally.

Incremental mode: a test's data arrives as random insert batches, then a
random subset is deleted and re-inserted in batches; after every batch the
maintained view must equal the reference evaluator from scratch, and at the
end the query's solutions must equal the W3C expected results.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rdflib import RDF, Graph, Namespace, URIRef
from rdflib.collection import Collection
from rdflib.compare import isomorphic
from rdflib.query import Result
from rdflib.term import BNode, Identifier, Literal, Node

from views import algebra as A
from views.compile import compile_query
from views.dataset import Dataset
from views.errors import EngineError, UnsupportedFeature
from views.interpret import Maintainer
from views.plan import plan_of
from views.reference import evaluate
from views.results import ask, graph, solutions
from views.terms import ExprError, canonical, numeric_type, numeric_value

if TYPE_CHECKING:
    from server.tools.w3c_pipeline import Pipeline

MF = Namespace("http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#")
QT = Namespace("http://www.w3.org/2001/sw/DataAccess/tests/test-query#")
SD = Namespace("http://www.w3.org/ns/sparql-service-description#")
_RESULT_FORMATS = {".srx": "xml", ".srj": "json", ".tsv": "tsv", ".csv": "csv"}
_RDF_FORMATS = {".ttl": "turtle", ".rdf": "xml", ".nt": "nt", ".n3": "n3"}  # RDF result sets


@dataclass
class W3CTest:
    id: str
    query: Path
    data: list[Path]
    graph_data: list[Path]
    result: Path | None
    unsupported: str | None = None
    lax: bool = False  # mf:resultCardinality mf:LaxCardinality (REDUCED)


@dataclass
class Outcome:
    id: str
    status: str  # passed | failed | unsupported
    reason: str = ""


@dataclass
class Report:
    outcomes: list[Outcome] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)

    def as_json(self) -> dict:  # type: ignore[type-arg]
        return {"passed": self.count("passed"), "failed": self.count("failed"),
                "unsupported": self.count("unsupported"),
                "tests": [{"id": o.id, "status": o.status, "reason": o.reason}
                          for o in self.outcomes]}


def manifest_entries(root: Path) -> Iterator[tuple[str, Graph, Node]]:
    """Every entry of the manifest.ttl files under ``root``: its name in the
    suite (``syntax-query/manifest#test_1``), its manifest's graph, its node."""
    for manifest in sorted(root.rglob("manifest.ttl")):
        g = Graph()
        g.parse(manifest, format="turtle")
        prefix = f"{manifest.parent.relative_to(root)}/manifest#"
        for entries in g.objects(None, MF.entries):
            for entry in Collection(g, entries):
                yield prefix + str(entry).rpartition("#")[2], g, entry


def discover(root: Path) -> Iterator[W3CTest]:
    """Every mf:QueryEvaluationTest in the manifest.ttl files under ``root``."""
    for _, g, entry in manifest_entries(root):
        if (entry, RDF.type, MF.QueryEvaluationTest) in g:
            yield _test(g, entry)


def _test(g: Graph, entry: Node) -> W3CTest:
    action = g.value(entry, MF.action)
    query = _path(g.value(action, QT.query))
    result = g.value(entry, MF.result)
    unsupported = None
    if g.value(action, SD.entailmentRegime) is not None or (
            entry, MF.requires, None) in g:
        unsupported = "entailment regime or an optional feature"
    if g.value(action, QT.serviceData) is not None:
        unsupported = "SERVICE"
    return W3CTest(id=str(entry), query=query,
                   data=[_path(d) for d in g.objects(action, QT.data)],
                   graph_data=[_path(d) for d in g.objects(action, QT.graphData)],
                   result=_path(result) if result is not None else None,
                   unsupported=unsupported,
                   lax=(entry, MF.resultCardinality, MF.LaxCardinality) in g)


def _path(iri: Node | None) -> Path:
    if iri is None:
        raise UnsupportedFeature("a manifest entry without its file")
    return Path(str(iri).removeprefix("file://"))


def run(root: Path, mode: str = "incremental", seed: int = 0, executor: str = "memory",
        database_url: str | None = None) -> Report:
    """Run every test under ``root``. ``executor`` "memory" maintains views in
    process; "sql" or "spark" runs each test's data through the pipeline: pod writes, the
    change log, worker jobs and K-relations in the database at
    ``database_url`` (migrated here)."""
    from server.tools.w3c_pipeline import Pipeline

    report = Report()
    sql = Pipeline(database_url, executor) if executor != "memory" else None
    for test in discover(root):
        report.outcomes.append(run_test(test, mode, seed, sql))
    return report


def run_test(test: W3CTest, mode: str, seed: int, sql: Pipeline | None = None) -> Outcome:
    if test.unsupported:
        return Outcome(test.id, "unsupported", test.unsupported)
    try:
        text = test.query.read_text(encoding="utf-8")
        c = compile_query(text, base=test.query.as_uri())
        q = c.query
        quads = _dataset_quads(test, q)
        expected = _expected_graph(test) if q.form == "CONSTRUCT" else _expected(test)
        if isinstance(expected, Expected) and (missed := _unschemed(expected, c.schemas)):
            return Outcome(test.id, "failed", f"an expected solution binds {missed}: not a "
                                              "schema inferred for the query")
        rng = random.Random(f"{seed}:{test.id}")
        if mode == "scratch":
            ds = Dataset()
            ds.apply((qd, 1) for qd in quads)
            view = evaluate(q.pattern, ds)
        elif sql is not None:
            view = sql.incremental(test, text, q, quads, rng)
        else:
            view = _incremental(q, quads, rng)
        problem = _compare_graph(q, view, expected) if isinstance(expected, Graph) else \
            _compare(q, view, expected, test.lax)
    except UnsupportedFeature as e:
        return Outcome(test.id, "unsupported", e.feature)
    except EngineError as e:
        return Outcome(test.id, "failed", str(e))
    except Exception as e:  # noqa: BLE001 - a crash is a failure, reported with its type
        return Outcome(test.id, "failed", f"{type(e).__name__}: {e}")
    return Outcome(test.id, "failed" if problem else "passed", problem or "")


def _dataset_quads(test: W3CTest, q: A.Query) -> list[tuple]:
    defaults = [_path(i) for i in q.from_graphs] if q.from_graphs or q.from_named else test.data
    named = [(URIRef(str(i)), _path(i)) for i in q.from_named] if (
        q.from_graphs or q.from_named) else [(URIRef(p.as_uri()), p) for p in test.graph_data]
    quads: list[tuple] = []
    for path in defaults:
        quads.extend((None, *t) for t in _load(path))
    for name, path in named:
        quads.extend((name, *t) for t in _load(path))
    return list(dict.fromkeys(quads))


def _load(path: Path) -> list[tuple]:
    g = Graph()
    fmt = {".nt": "nt", ".rdf": "xml", ".ttl": "turtle", ".n3": "n3"}.get(path.suffix, "turtle")
    g.parse(path, format=fmt)
    return list(g)


def _incremental(q: A.Query, quads: list[tuple], rng: random.Random) -> dict:
    ds = Dataset()
    view = Maintainer(plan_of(q.pattern), ds)
    for batch, sign in _steps(quads, rng):
        view.apply(ds.apply((qd, sign) for qd in batch))
        scratch = evaluate(q.pattern, ds)
        if view.result != scratch:
            raise AssertionError(
                f"maintained view differs from scratch after a {'+' if sign > 0 else '-'}"
                f"batch of {len(batch)}: {len(view.result)} vs {len(scratch)} mappings")
    return dict(view.result)


def _steps(quads: list[tuple], rng: random.Random) -> list[tuple[list, int]]:
    """Random insert batches, then a random subset deleted and re-inserted."""
    order = quads[:]
    rng.shuffle(order)
    steps = [(b, 1) for b in _batches(order, rng)]
    removed = rng.sample(quads, k=rng.randint(0, len(quads))) if quads else []
    steps += [(b, -1) for b in _batches(removed, rng)]
    steps += [(b, 1) for b in _batches(removed[::-1], rng)]
    return steps


def _absolute(text: str, base: str) -> str:
    """The query with its base made explicit (views are stored as text)."""
    return f"BASE <{base}>\n{text}" if "BASE" not in text.upper().split("SELECT")[0] else text


def _batches(items: list, rng: random.Random) -> Iterator[list]:
    i = 0
    while i < len(items):
        n = rng.randint(1, max(1, min(8, len(items) - i)))
        yield items[i:i + n]
        i += n


# ------------------------------------------------------------------ compare


@dataclass
class Expected:
    bindings: list[dict[str, Identifier]]
    ask: bool | None = None
    textual: bool = False  # CSV: every term compares by its string form


def _expected(test: W3CTest) -> Expected:
    if test.result is None:
        raise UnsupportedFeature("test without a result file")
    if test.result.suffix in _RDF_FORMATS:
        return _rdf_result_set(test.result)
    fmt = _RESULT_FORMATS.get(test.result.suffix)
    if fmt is None:
        raise UnsupportedFeature(f"result format {test.result.suffix}")
    with open(test.result, "rb") as f:
        r = Result.parse(f, format=fmt)
    if r.type == "ASK":
        return Expected([], ask=bool(r.askAnswer))
    rows = [{str(v): t for v, t in b.items() if t is not None} for b in r.bindings]
    return Expected(rows, textual=fmt == "csv")


def _unschemed(expected: Expected, schemas: frozenset) -> list[str] | None:
    """The variables of an expected solution whose set is not one of the
    schemas inferred for the query (``views.schemas``: they bound the
    K-relation tables), or None."""
    for row in expected.bindings:
        if frozenset(row) not in schemas:
            return sorted(row)
    return None


RS = Namespace("http://www.w3.org/2001/sw/DataAccess/tests/result-set#")


def _rdf_result_set(path: Path) -> Expected:
    """The RDF result-set vocabulary of the DAWG tests."""
    g = Graph()
    g.parse(path, format=_RDF_FORMATS[path.suffix], publicID=path.as_uri())
    rs = g.value(None, RDF.type, RS.ResultSet)
    if rs is None:
        raise UnsupportedFeature("RDF results that are not a result set")
    boolean = g.value(rs, RS.boolean)
    if isinstance(boolean, Literal):
        return Expected([], ask=bool(boolean.toPython()))
    rows = []
    for sol in g.objects(rs, RS.solution):
        row: dict[str, Identifier] = {}
        for b in g.objects(sol, RS.binding):
            value = g.value(b, RS.value)
            if isinstance(value, Identifier):
                row[str(g.value(b, RS.variable))] = value
        rows.append(row)
    return Expected(rows)


def _expected_graph(test: W3CTest) -> Graph:
    """A CONSTRUCT test's expected graph."""
    if test.result is None or test.result.suffix not in _RDF_FORMATS:
        raise UnsupportedFeature("a CONSTRUCT test without an RDF result")
    g = Graph()
    g.parse(test.result, format=_RDF_FORMATS[test.result.suffix], publicID=test.result.as_uri())
    return g


def _compare_graph(q: A.Query, view: dict, expected: Graph) -> str | None:
    """A CONSTRUCT's graph against the expected one, up to blank node
    renaming (rdflib's graph isomorphism, an implementation of its own)."""
    ours = Graph()
    for t in graph(q, view):
        ours.add(t)
    if isomorphic(ours, expected):
        return None
    return f"graphs differ: got {len(ours)} triples, expected {len(expected)}"


def _compare(q: A.Query, view: dict, expected: Expected, lax: bool = False) -> str | None:
    if q.form == "ASK":
        got = ask(view)
        return None if got == expected.ask else f"ASK gave {got}"
    rows = solutions(q, view)
    ours = [{v: t for v, t in r.items() if v in q.variables} for r in rows]
    a = [_canon_row(r, expected.textual) for r in ours]
    b = [_canon_row(r, expected.textual) for r in expected.bindings]
    if lax:
        problem = _lax_problem(a, b)
        if problem:
            return problem
    elif not _multiset_equal(a, b):
        return f"results differ: got {len(a)} rows, expected {len(b)}: {_sample_diff(a, b)}"
    if q.order and not _order_agrees(q, a, b):
        return "rows in the wrong order"
    return None


def _lax_problem(a: list[tuple], b: list[tuple]) -> str | None:
    """Lax cardinality (REDUCED, SPARQL 1.1 §18.5 Reduced): the same solutions,
    each as often as DISTINCT gives it up to as often as the full multiset
    does."""
    if not _multiset_equal(list(dict.fromkeys(a)), list(dict.fromkeys(b))):
        return f"results differ as sets: {_sample_diff(a, b)}"
    got, full = Counter(a), Counter(b)
    if len(a) > len(b) or any(got[r] > full[r] for r in got if r in full):
        return f"more rows than the full multiset: got {len(a)}, at most {len(b)}"
    return None


def _canon(t: Identifier, textual: bool) -> tuple:
    """A term as the harness compares it: by term equality (RDF 1.1: one form
    per term, language tags case-insensitive), blank nodes up to renaming, CSV
    results by their text. One exception: a well-formed number compares with
    one of its own datatype by value, because the expected files write
    computed numbers in no one form ("1050"^^xsd:double beside
    "2.0E-1"^^xsd:double) and SPARQL leaves the lexical form of a computed
    number to the implementation (XPath's casts excepted, which the cast
    tests check through xsd:string)."""
    if isinstance(t, BNode):
        return ("b", str(t))
    if textual:
        return ("t", str(t))
    t = canonical(t)
    if isinstance(t, Literal):
        if numeric_type(t) is not None:
            try:
                return ("n", str(t.datatype), numeric_value(t))
            except ExprError:
                pass  # an ill-typed number is its lexical form
        return ("l", str(t), str(t.datatype or ""), t.language or "")
    return ("i", str(t))


def _canon_row(r: dict, textual: bool) -> tuple:
    return tuple(sorted((v, _canon(t, textual)) for v, t in r.items()))


def _multiset_equal(a: list[tuple], b: list[tuple]) -> bool:
    if len(a) != len(b):
        return False
    if Counter(_shape(r) for r in a) != Counter(_shape(r) for r in b):
        return False
    if not any(c[1][0] == "b" for r in a for c in r):
        return Counter(a) == Counter(b)
    return _bnode_match(a, b, {}, {})


def _shape(r: tuple) -> tuple:
    return tuple((v, ("b",) if c[0] == "b" else c) for v, c in r)


def _bnode_match(a: list, b: list, fwd: dict, back: dict) -> bool:
    """Blank nodes matched up to a bijective renaming (backtracking)."""
    if not a:
        return True
    first, rest = a[0], a[1:]
    for i, cand in enumerate(b):
        f, bk = dict(fwd), dict(back)
        if _row_unify(first, cand, f, bk) and _bnode_match(rest, b[:i] + b[i + 1:], f, bk):
            fwd.update(f)
            back.update(bk)
            return True
    return False


def _row_unify(x: tuple, y: tuple, fwd: dict, back: dict) -> bool:
    if len(x) != len(y):
        return False
    for (v1, c1), (v2, c2) in zip(x, y):
        if v1 != v2:
            return False
        if c1[0] == "b" and c2[0] == "b":
            if fwd.setdefault(c1[1], c2[1]) != c2[1] or back.setdefault(c2[1], c1[1]) != c1[1]:
                return False
        elif c1 != c2:
            return False
    return True


def _order_agrees(q: A.Query, a: list[tuple], b: list[tuple]) -> bool:
    keys = [k.expr.name for k in q.order if isinstance(k.expr, A.Var) and k.expr.name in q.variables]
    if not keys:
        return True

    def proj(r: tuple) -> tuple:
        d = dict(r)
        return tuple(d.get(k) if (d.get(k) or ("",))[0] != "b" else ("b",) for k in keys)

    return [proj(r) for r in a] == [proj(r) for r in b]


def _sample_diff(a: list, b: list) -> str:
    extra = list((Counter(a) - Counter(b)).elements())[:2]
    missing = list((Counter(b) - Counter(a)).elements())[:2]
    return f"unexpected {extra}, missing {missing}"

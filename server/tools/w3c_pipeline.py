"""The W3C tests through the pipeline: each test's data written to a pod,
its jobs run by workers on the SQL (or Spark) executor, the view's state in
Postgres, compared with the reference evaluator from scratch after every
batch (``server.tools.w3c`` compares the end with the expected results).

A test that reads named graphs (or names its dataset with FROM, FROM NAMED)
has each of its files written as a document of a pod whose IRI is the
file's own: the pod is named after the test's folder, documents are named
under the suite's folder (the workers' base), so ``GRAPH <ng-01.ttl>`` names
the same graph in the query, the expected results and the pipeline. The
test's dataset — its data files merged into the default graph, its graph
files as the named graphs — is stated by FROM and FROM NAMED where the query
does not state its own (the pipeline's default graph is otherwise the union
of every document)."""

from __future__ import annotations

import random
import re
import uuid
from pathlib import Path

import sqlalchemy as sa
from rdflib import URIRef

from server.tools.w3c import W3CTest, _absolute, _load, _steps
from views import algebra as A
from views.dataset import Dataset
from views.errors import UnsupportedFeature
from views.reference import evaluate


class Pipeline:
    """One database for the whole run; each test gets its own pod, consumer
    and view (consent keeps them apart)."""

    def __init__(self, url: str | None, executor: str = "sql") -> None:
        from server.executors.spark.config import SparkConfig
        from server.maintenance.router import Router
        from storage.db import worker_engine
        from storage.migrate import upgrade

        # on SQL, plans that render run as one statement per batch, the others interpreted;
        # on Spark, every batch of a plan whose delta program renders runs it (the data is
        # tens of triples: under the default fraction no batch would, note 137)
        self.router = Router(mode=executor, spark=SparkConfig(codegen=False), render=True,
                             spark_delta_below=float("inf"))
        if url is None:
            raise ValueError("the sql executor needs a database URL")
        upgrade(url)
        self.engine = worker_engine(url)  # its jobs run as a worker's (note 154)
        self.n = 0
        self.run = uuid.uuid4().hex[:8]  # runs may share a database
        self.base = "http://w3c.invalid"

    def incremental(self, test: W3CTest, text: str, q: A.Query, quads: list[tuple],
                    rng: random.Random) -> dict:
        if test.graph_data or q.from_graphs or q.from_named or A.uses_named_graphs(q.pattern):
            if self.router.mode == "spark":  # forced, its jobs would fail (design note 102)
                from server.executors.spark.config import NotOnSpark

                raise NotOnSpark("GRAPH, FROM or FROM NAMED over documents (the Spark "
                                 "executor reads the pods' union default graph only)")
            return self._documents(test, text, q, rng)
        from storage import pods

        pod, view = self._register(test, f"w3c-{self._tag()}", _absolute(text, test.query.as_uri()))
        current: set[tuple] = set()
        ds = Dataset()
        got = self._check(view, q, ds, 0)  # the backfill over no data
        for batch, sign in _steps(quads, rng):
            ds.apply((qd, sign) for qd in batch)
            current = current | {qd[1:] for qd in batch} if sign > 0 else \
                current - {qd[1:] for qd in batch}
            with self.engine.begin() as c:
                pods.put_resource(c, pod, "data", current)
            got = self._check(view, q, ds, len(batch))
        return got

    def _documents(self, test: W3CTest, text: str, q: A.Query, rng: random.Random) -> dict:
        """The test's files as documents of a pod named after its folder."""
        from storage import pods

        folder = test.query.parent
        self.base = folder.parent.as_uri()
        given = bool(q.from_graphs or q.from_named)
        defaults = [_file(i) for i in q.from_graphs] if given else test.data
        named = [_file(i) for i in q.from_named] if given else test.graph_data
        paths = {f: _document(folder, f) for f in [*defaults, *named]}
        query = _absolute(text if given else with_dataset(text, defaults, named),
                          test.query.as_uri())
        with self.engine.begin() as c:  # the folder's pod of an earlier test steps aside
            c.execute(sa.text("UPDATE pods SET name = name || '~' || id WHERE name = :n"),
                      {"n": folder.name})
        pod, view = self._register(test, folder.name, query)
        files = list(paths)
        quads = list(dict.fromkeys((i, *t) for i, f in enumerate(files) for t in _load(f)))
        held: list[set[tuple]] = [set() for _ in files]
        got = self._check(view, q, Dataset(), 0)  # the backfill over no data
        for batch, sign in _steps(quads, rng):
            for i, *t in batch:
                (held[i].add if sign > 0 else held[i].discard)(tuple(t))
            with self.engine.begin() as c:
                for i in sorted({qd[0] for qd in batch}):
                    pods.put_resource(c, pod, paths[files[i]], held[i])
            ds = Dataset()
            ds.apply(((None, *t), 1) for f in defaults for t in held[files.index(f)])
            ds.apply(((URIRef(f.as_uri()), *t), 1) for f in named for t in held[files.index(f)])
            got = self._check(view, q, ds, len(batch))
        return got

    def _tag(self) -> str:
        self.n += 1
        return f"{self.run}-{self.n}"

    def _register(self, test: W3CTest, pod_name: str, query: str) -> tuple[int, int]:
        from server.api.consents.service import record_grant
        from server.api.views.service import register_view
        from storage import pods

        tag = self._tag()
        with self.engine.begin() as c:
            owner = pods.create_agent(c, f"urn:w3c:owner:{tag}", "owner", f"o{tag}".encode())
            consumer = pods.create_agent(c, f"urn:w3c:consumer:{tag}", "consumer",
                                         f"c{tag}".encode())
            pod = pods.create_pod(c, pod_name, owner)
            record_grant(c, pod, consumer)
            view = register_view(c, consumer, test.id, query)
        return pod, view

    def _check(self, view: int, q: A.Query, ds: Dataset, size: int) -> dict:
        from storage import catalog

        self._drain(view)
        with self.engine.connect() as c:
            got = catalog.view_results(c, view)
        scratch = evaluate(q.pattern, ds)
        if got != scratch:
            raise AssertionError(f"pipeline view differs from scratch after a batch of "
                                 f"{size}: {len(got)} vs {len(scratch)} mappings")
        return got

    def _drain(self, view: int) -> None:
        from server.maintenance import jobs

        while jobs.run_one(self.engine, "w3c", self.router, base=self.base):
            pass
        with self.engine.connect() as c:
            dead = c.execute(sa.text("SELECT last_error FROM jobs WHERE status <> 'done' "
                                     "AND view_id = :v"), {"v": view}).all()
        if dead:
            raise AssertionError(f"a job failed: {dead[0][0]}")


def _file(iri: object) -> Path:
    return Path(str(iri).removeprefix("file://"))


def _document(folder: Path, f: Path) -> str:
    """The path in the folder's pod of the document holding file ``f``."""
    try:
        return f.relative_to(folder).as_posix()
    except ValueError:
        raise UnsupportedFeature("a graph outside the test's folder") from None


# the query form, a CONSTRUCT template's braces, then WHERE or the pattern's brace
_FORM = re.compile(r"\b(SELECT|ASK|CONSTRUCT|DESCRIBE)\b", re.IGNORECASE)


def with_dataset(text: str, defaults: list[Path], named: list[Path]) -> str:
    """The query with FROM and FROM NAMED clauses for these files, put
    where its dataset clause goes (SPARQL 1.1 §13.2: after the form's
    projection or template, before WHERE).

    >>> with_dataset("PREFIX : <x:> SELECT * WHERE { ?s ?p ?o }", [Path("/d")], [Path("/g")])
    'PREFIX : <x:> SELECT * FROM <file:///d> FROM NAMED <file:///g> WHERE { ?s ?p ?o }'
    >>> with_dataset("CONSTRUCT { ?s ?p ?o } { ?s ?p ?o }", [], [Path("/g")])
    'CONSTRUCT { ?s ?p ?o } FROM NAMED <file:///g> { ?s ?p ?o }'
    """
    clause = " ".join([*(f"FROM <{f.as_uri()}>" for f in defaults),
                       *(f"FROM NAMED <{f.as_uri()}>" for f in named)])
    form = _FORM.search(text)
    if form is None or not clause:
        return text
    at = form.end()
    rest = text[at:].lstrip()
    if form.group(1).upper() == "CONSTRUCT" and rest.startswith("{"):
        at = _after_braces(text, text.index("{", at))
    where = re.compile(r"\bWHERE\b|\{", re.IGNORECASE).search(text, at)
    if where is None:
        return text
    return f"{text[:where.start()]}{clause} {text[where.start():]}"


def _after_braces(text: str, start: int) -> int:
    depth = 0
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return i + 1
    return len(text)

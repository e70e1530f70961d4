"""Patches of one resource, as pure functions from its triples to its new
triples: N3 Patch (Solid Protocol §5.3.1, ``solid:InsertDeletePatch``) and
SPARQL 1.1 Update (INSERT DATA, DELETE DATA, DELETE/INSERT WHERE, DELETE
WHERE) on the resource's graph."""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableSequence, Sequence
from dataclasses import dataclass, fields, replace
from datetime import UTC, datetime
from decimal import Decimal
from itertools import islice
from typing import Any, cast

from rdflib import RDF, XSD, Graph, Literal, Namespace, URIRef
from rdflib.graph import Dataset, QuotedGraph
from rdflib.plugins.parsers.notation3 import RDFSink, SinkParser, sfloat
from rdflib.term import BNode, Identifier, Node, Variable

from server.api.ldp import data_update, offload
from server.api.ldp.rdf import Triple, unwritable
from server.errors import BadRequest, Conflict, OverLimit, Unprocessable
from storage.terms import Position, TermTable
from views import algebra as A
from views.dataset import Dataset as Quads
from views.dataset import QuadStore
from views.errors import EngineError, UnsupportedFeature, ViewTooLarge
from views.grammar import parsed
from views.interpret import Maintainer
from views.kset import KSet
from views.parse import keep_constant_filters, template, update_bgp, update_pattern
from views.plan import plan_of
from views.results import instance, solutions
from views.terms import KINDS, TermFields, canonical, fields_of  # rdflib's lexical forms kept

Change = Callable[[set[Triple]], set[Triple]]  # a patch, read: the resource before -> after
Diff = tuple[TermTable, TermTable]  # what a patch inserts into a resource, what it deletes
Fielded = tuple[Any, Any, Any]  # a triple (pattern) of dictionary fields, and variables
IRI, LITERAL = KINDS[URIRef], KINDS[Literal]

# What a patch does to a resource, as Web Access Control reads it (Solid
# Protocol §5.3.1): a WHERE reads it, insertions append, deletions read and
# write. ``modes`` of a change that does not say is Read and Write.
READS, APPENDS, DELETES = frozenset({"read"}), frozenset({"append"}), frozenset({"read", "write"})


def modes(change: Change) -> frozenset[str]:
    """The access modes applying ``change`` to an existing resource needs."""
    return getattr(change, "modes", DELETES)


def _needs(where: bool, inserts: bool, deletes: bool) -> frozenset[str]:
    return ((READS if where else frozenset()) | (APPENDS if inserts else frozenset())
            | (DELETES if deletes else frozenset()))


@dataclass(frozen=True)
class Patched:
    """A patch that reads the resource, with the modes it needs: ``diff``
    gives, for the resource's triples, the triples it inserts (none there
    yet) and those it deletes (all there), so a write changes only those
    (``pods.patch_resource``), whatever the resource's size (design note
    205)."""

    diff: Callable[[TermTable], Diff]  # of the resource's triples, as the dictionary's fields
    modes: frozenset[str]

    def __call__(self, current: set[Triple]) -> set[Triple]:
        table = TermTable.of(current)
        inserted, deleted = self.diff(table)
        after = (set(table.rows()) - set(deleted.rows())) | set(inserted.rows())
        return TermTable.of_fields(after).decoded()


@dataclass(frozen=True)
class DataChange:
    """A patch that names its triples: present after it (``inserts``) or
    absent (``deletes``), whatever the resource held, as tables of their
    terms' dictionary fields (no rdflib term is made on the way: design note
    192). A write applies it without reading the resource
    (``pods.patch_resource``)."""

    inserts: TermTable
    deletes: TermTable

    def __call__(self, current: set[Triple]) -> set[Triple]:
        return (current - self.deletes.decoded()) | self.inserts.decoded()

    @property
    def modes(self) -> frozenset[str]:
        return _needs(False, bool(self.inserts.triples), bool(self.deletes.triples))


SOLID = Namespace("http://www.w3.org/ns/solid/terms#")


class BadPatch(BadRequest):
    """The patch document is malformed."""


class RefusedPatch(Unprocessable):
    """An N3 Patch that parses but breaks the constraints of Solid Protocol
    §5.3.1, which answers them 422: not exactly one
    ``solid:InsertDeletePatch``, a formula given twice or not a formula, a
    variable its ``solid:where`` does not bind, a blank node in its
    insertions or deletions ("The ?insertions and ?deletions formulae MUST
    NOT contain blank nodes", as the Community Solid Server reads it)."""


class Budget:
    """Pattern-match steps a patch may take on the resource before it is
    refused (422): an all-variable ``solid:where`` or WHERE over a resource of
    n triples would otherwise take n^k steps and as much memory."""

    def __init__(self, steps: int) -> None:
        self.left = steps
        self.steps = steps

    def spend(self, steps: int = 1) -> None:
        self.left -= steps
        if self.left < 0:
            raise OverLimit(f"the patch's pattern takes more than {self.steps} match steps "
                            "on this resource; make it more selective")


DEFAULT_STEPS = 100_000


@dataclass(frozen=True)
class Bounds:
    """What one patch may cost: pattern-match steps of its WHERE (``Budget``)
    and, for a SPARQL Update evaluated in a pool process, seconds of wall
    clock (``offload``; 422 beyond either)."""
    steps: int = DEFAULT_STEPS
    seconds: float = 20.0  # design note 225


def n3_patch(body: str, base: str, bounds: Bounds = Bounds()) -> Change:
    """An N3 Patch, read and checked now (before the write takes the
    resource's lock); applying it is 409 when ``solid:where`` does not match
    exactly once or a deletion is not there."""
    try:
        g = _n3_graph(body, base)
    except Exception as e:  # noqa: BLE001 - rdflib's parsers raise many types for bad input
        raise BadPatch(f"N3 parse error: {e}") from None
    patches = set(g.subjects(RDF.type, SOLID.InsertDeletePatch))
    if len(patches) != 1:
        raise RefusedPatch(f"an N3 Patch needs exactly one solid:InsertDeletePatch, "
                           f"found {len(patches)}")
    patch = patches.pop()
    where, inserts, deletes = (_formula(g, patch, p) for p in (SOLID.where, SOLID.inserts,
                                                              SOLID.deletes))
    bound = {t for pattern in where for t in pattern if _is_var(t)}
    for name, part in (("solid:inserts", inserts), ("solid:deletes", deletes)):
        free = {t for pattern in part for t in pattern if isinstance(t, Variable)} - bound
        if free:
            raise RefusedPatch(f"{name} uses {', '.join(sorted('?' + v for v in free))}, "
                               "not bound by solid:where")
        if any(isinstance(t, BNode) for p in part for t in p):
            raise RefusedPatch(f"{name} may not contain blank nodes")

    patterns = [_fielded(t, existential=True) for t in where]
    made, taken = ([_fielded(t) for t in part] for part in (inserts, deletes))

    def diff(table: TermTable) -> Diff:
        current = set(table.rows())
        data = _BoundedStore(Budget(bounds.steps), current)
        matches = list(islice(_matches(patterns, data, {}), 2))  # a 2nd is enough
        if len(matches) != 1:
            raise Conflict("solid:where matches " + ("more than once" if matches else "nothing")
                           + "; it must match exactly once")
        binding = matches[0]
        gone = {_bind(t, binding) for t in taken}
        missing = gone - current
        if missing:
            raise Conflict(f"{len(missing)} triple(s) of solid:deletes are not in the resource")
        added = {t for t in (_bind(t, binding) for t in made) if t[0][0] != LITERAL
                 and t[1][0] == IRI}  # an instance that is no RDF is left out, as in ``_instances``
        return _writable(TermTable.of_fields(added - current)), TermTable.of_fields(gone - added)

    return Patched(diff, _needs(bool(where), bool(inserts), bool(deletes)))


def _n3_graph(body: str, base: str) -> Graph:
    """The N3 document's graph (its formulas as quoted graphs), by rdflib's
    N3 parser with its numbers kept as written (``_AsWritten``): what
    ``Graph.parse(format="n3")`` does, with that parser."""
    g = Graph()
    sink = Dataset(store=g.store)
    sink.default_context = g
    sink.namespace_manager = g.namespace_manager
    parser = _AsWritten(RDFSink(sink), baseURI=base, turtle=False)
    parser.loadBuf(body)
    for prefix, namespace in parser._bindings.items():  # the errors name terms as written
        g.bind(prefix, namespace)
    return g


_NUMBERS = {int: XSD.integer, Decimal: XSD.decimal, sfloat: XSD.double}


class _AsWritten(SinkParser):  # type: ignore[misc]
    """rdflib's N3 parser with its numbers kept as written: it made ``-0``
    the literal ``"0"`` and ``0010.0100`` ``"10.0100"`` (an N3 Patch then
    inserted another term than it named, and deleting the stored ``-0``
    was 409) — RDF 1.1 Concepts §3.3: literals are term-equal by lexical
    form."""

    def nodeOrLiteral(self, argstr: str, i: int, res: MutableSequence[Any]) -> int:
        before = len(res)
        j: int = super().nodeOrLiteral(argstr, i, res)
        if j >= 0 and len(res) == before + 1 and type(res[-1]) in _NUMBERS:
            res[-1] = Literal(argstr[self.skipSpace(argstr, i):j],
                              datatype=_NUMBERS[type(res[-1])])
        return j


def _fielded(t: Triple, existential: bool = False) -> Fielded:
    """A patch's triple with its terms as the dictionary's fields (the
    resource is matched as stored: no term of it is made for rdflib), its
    variables kept — and, in ``solid:where`` (``existential``), its blank
    nodes, which stand for any term there."""
    return tuple(x if isinstance(x, Variable) or existential and isinstance(x, BNode)  # type: ignore[return-value]
                 else fields_of(x) for x in t)


def _formula(g: Graph, patch: Node, predicate: Identifier) -> list[Triple]:
    values = list(g.objects(patch, predicate))
    if len(values) > 1:
        raise RefusedPatch(f"more than one {g.namespace_manager.normalizeUri(predicate)}")
    if not values:
        return []
    if not isinstance(values[0], QuotedGraph):
        raise RefusedPatch(f"{g.namespace_manager.normalizeUri(predicate)} must be a formula "
                           "{ … }")
    return list(values[0].triples((None, None, None)))  # type: ignore[arg-type]


def _is_var(t: Identifier) -> bool:
    return isinstance(t, (Variable, BNode))  # blank nodes in where are existential


def _matches(patterns: list[Fielded], data: _BoundedStore,
             binding: dict[Identifier, TermFields]) -> Iterator[dict[Identifier, TermFields]]:
    """The bindings of ``patterns`` in ``data``, each pattern read through
    the index by its constants and bound variables (so a selective
    ``solid:where`` is cheap on a large resource; every triple a pattern
    matches spends the budget)."""
    if not patterns:
        yield binding
        return
    first, rest = patterns[0], patterns[1:]
    known = tuple(binding.get(x) if _is_var(x) else x for x in first)
    for triple in data.triples(known):
        extended = dict(binding)
        if all(_unify(p, t, extended) for p, t in zip(first, triple, strict=True)):
            yield from _matches(rest, data, extended)


def _unify(pattern: Any, term: TermFields, binding: dict[Identifier, TermFields]) -> bool:
    if not _is_var(pattern):
        return pattern == term
    if pattern in binding:
        return binding[pattern] == term
    binding[pattern] = term
    return True


def _bind(t: Fielded, binding: dict[Identifier, TermFields]) -> Fielded:
    return tuple(binding.get(x, x) if isinstance(x, Variable) else x for x in t)  # type: ignore[return-value]


ALLOWED = {"InsertData", "DeleteData", "Modify", "DeleteWhere"}
_DATA = {"InsertData": "INSERT DATA", "DeleteData": "DELETE DATA"}


def sparql_update(body: str, base: str, bounds: Bounds = Bounds()) -> Change:
    """A SPARQL Update on the resource's graph (no named graphs), read now.
    Plain INSERT DATA / DELETE DATA updates skip the SPARQL grammar
    (``data_update``); the rest are parsed by rdflib and evaluated by the
    engine (``_full_update``)."""
    plain = data_update.operations(body, base)
    if plain is None:
        return _full_update(body, base, bounds)
    at: dict[TermFields, int] = {}  # the operations' terms, each once
    last: dict[Position, int] = {}  # a triple's fate is its last operation's
    for sign, table in plain:
        ids = [at.setdefault(f, len(at)) for f in table.terms]
        last.update(dict.fromkeys([(ids[s], ids[p], ids[o]) for s, p, o in table.triples], sign))
    terms = list(at)
    inserts, deletes = (TermTable.taking(terms, [t for t, s in last.items() if s == sign])
                        for sign in (1, -1))
    return DataChange(_writable(inserts), deletes)


def _full_update(body: str, base: str, bounds: Bounds = Bounds()) -> Change:
    """The update checked now (400 before any lock) and evaluated when applied,
    both in a pool process (``offload``): rdflib's parser and the engine's
    evaluation are pure Python and would otherwise hold the API's GIL for
    seconds."""
    needs = offload.run_within(bounds.seconds, _checked, body, base)

    def diff(table: TermTable) -> Diff:
        return offload.run_within(bounds.seconds, _evaluated, body, base, bounds.steps, table)

    return Patched(diff, needs)


def _checked(body: str, base: str) -> frozenset[str]:
    """``_translated`` for its errors, each WHERE checked by the engine (on
    no data: refused by name before any lock, and not again when the update
    is evaluated), and the modes the update needs (its algebra does not
    pickle)."""
    get = dict.get  # CompValue.get answers a missing key with its name
    needs: frozenset[str] = frozenset()
    for op in _translated(body, base):
        if op.name == "Modify":  # one the engine cannot evaluate is refused now, by name
            try:
                pattern = update_pattern(op.where, op.prologue.base, _now())
                nothing, budget = Quads(), Budget(DEFAULT_STEPS)  # evaluated on no data
                _solutions(_slices_evaluated(pattern, nothing, budget), nothing, budget)
            except (EngineError, RecursionError) as e:
                raise BadPatch(f"SPARQL Update: {e}") from None
        where = op.name == "DeleteWhere" or bool(get(op, "where"))
        inserts = op.name == "InsertData" or bool(get(op, "insert"))
        deletes = op.name in ("DeleteData", "DeleteWhere") or bool(get(op, "delete"))
        needs |= _needs(where, inserts, deletes)
    return needs


def _translated(body: str, base: str) -> list[Any]:
    """The update's operations (rdflib's algebra of each), refused
    (``BadPatch``) unless it is an update of one resource's graph that makes
    no requests."""
    from rdflib.plugins.sparql.algebra import translateUpdate

    try:
        tree = parsed(body, update=True)
        keep_constant_filters(tree)
        update = translateUpdate(tree, base=base)
    except Exception as e:  # noqa: BLE001 - pyparsing and rdflib raise many types
        raise BadPatch(f"SPARQL Update parse error: {e}") from None
    operations: list[Any] = getattr(update, "algebra", [])  # a request of none: rdflib's []
    for op in operations:
        if op.name not in ALLOWED:
            raise BadPatch(f"{op.name} is not allowed on a resource (use INSERT DATA, "
                           "DELETE DATA, DELETE/INSERT WHERE or DELETE WHERE)")
        get = dict.get  # CompValue.get answers a missing key with its name
        clauses = [op, get(op, "delete") or {}, get(op, "insert") or {}]
        if any(get(c, "quads") for c in clauses) or get(op, "withClause") or get(op, "using"):
            raise BadPatch("named graphs (GRAPH, WITH, USING) are not allowed on a resource")
        data = get(op, "triples") or [] if op.name in ("InsertData", "DeleteData") else []
        if any(isinstance(x, Variable) for t in data for x in t):
            raise BadPatch(f"{_DATA[op.name]} may not contain variables")
        deleted = {"DeleteData": data, "DeleteWhere": get(op, "triples") or [],
                   "Modify": get(clauses[1], "triples") or []}.get(op.name, [])
        if any(isinstance(x, BNode) for t in deleted for x in t):
            raise BadPatch("a DELETE may not contain blank nodes (SPARQL 1.1 Update §3.1.3)")
        if _has_service(get(op, "where")):
            raise BadPatch("SERVICE is not allowed in an update: this server makes no "
                           "requests on a client's behalf")
    _labels_unshared(operations)
    return operations


def _labels_unshared(operations: Any) -> None:
    """400 when a blank node label of one INSERT DATA recurs in another of
    the request (the SPARQL 1.1 grammar's note on blank node labels, W3C
    test syntax-update-54; pyoxigraph refuses it too)."""
    seen: dict[BNode, int] = {}
    for i, op in enumerate(operations):
        data = dict.get(op, "triples") or [] if op.name == "InsertData" else []
        for b in {x for t in data for x in t if isinstance(x, BNode)}:
            if seen.setdefault(b, i) != i:
                raise BadPatch(f"the blank node _:{b} is used by two INSERT DATA operations")


def _evaluated(body: str, base: str, steps: int, table: TermTable) -> Diff:
    """The update's diff of the resource (run in a pool process: the
    resource crosses as its table of fields, its rdflib terms are made
    here, and only the diff comes back)."""
    operations = _translated(body, base)
    try:
        change = _apply(table.decoded(), operations, Budget(steps))  # decoded: canonical terms
    except (OverLimit, BadPatch):
        raise
    except (EngineError, RecursionError) as e:
        raise BadPatch(f"SPARQL Update failed: {e}") from None
    inserted, deleted = ([t for t, sign in change.items() if sign == side] for side in (1, -1))
    return _writable(TermTable.of(inserted)), TermTable.of(deleted)


def _writable(inserted: TermTable) -> TermTable:
    """``inserted``, refused (400) when it holds a term that is no RDF
    (``rdf.unwritable``): a PUT's parser refuses it, so a PATCH does too."""
    bad = unwritable(inserted)
    if bad is not None:
        _, text, datatype, lang = bad
        what = (f"language tag {lang!r} is not BCP 47" if lang else
                f"IRI {datatype or text!r} is not an absolute IRI")
        raise BadPatch(f"the patch inserts a term that is no RDF: its {what}")
    return inserted


def _apply(triples: set[Triple], operations: list[Any], budget: Budget) -> dict[Triple, int]:
    """The resource's change by the update's operations, in order (each
    triple inserted, +1, or deleted, -1), each as SPARQL 1.1 Update §3.1.3
    has it: every solution of its WHERE found first — by the engine, with a
    view's term semantics (rdflib's evaluator computed
    ``"2.5"^^xsd:double * 3`` as a decimal and failed the whole update on
    an ill-typed literal: design note 225) — then all its deletions made,
    then all its insertions. Named graphs, WITH and USING are refused
    before (``_translated``)."""
    ds = Quads()
    ds.load(triples)
    data = _Spending(ds, budget)
    change: dict[Triple, int] = {}
    now = _now()  # NOW() is one value in all of the request's operations
    for u in operations:
        gone, made = _operation(u, data, budget, now)
        for quad, sign in ds.apply([((None, *t), -1) for t in gone]
                                   + [((None, *t), 1) for t in made]).items():
            t = quad[1:]
            net = change.pop(t, 0) + sign  # type: ignore[call-overload]
            if net:
                change[t] = net  # type: ignore[index]
    return change


def _now() -> Literal:
    return Literal(datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"), datatype=XSD.dateTime)


def _operation(u: Any, data: QuadStore, budget: Budget, now: Literal
               ) -> tuple[set[Triple], set[Triple]]:
    """What one operation deletes and inserts. INSERT DATA's and a
    template's blank nodes are new nodes, per solution (§3.1.1, §3.1.3)."""
    get = dict.get  # CompValue.get answers a missing key with its name
    if u.name == "InsertData":
        return set(), _instances(template(u.triples), {frozenset(): 1}, budget)
    if u.name == "DeleteData":
        return {tuple(map(canonical, t)) for t in u.triples}, set()  # type: ignore[misc]
    if u.name == "DeleteWhere":
        pattern, deletes, inserts = update_bgp(u.triples), u.triples, list[Any]()
    else:  # Modify
        pattern = update_pattern(u.where, u.prologue.base, now)
        deletes, inserts = ((get(c, "triples") or []) if c else [] for c in (u.delete, u.insert))
    solutions = _solutions(_slices_evaluated(pattern, data, budget), data, budget)
    return (_instances(template(deletes), solutions, budget),
            _instances(template(inserts), solutions, budget))


def _solutions(pattern: A.Pattern, data: QuadStore, budget: Budget) -> KSet:
    """The pattern's solutions over the resource, evaluated fresh by the
    engine; a node of more rows than the budget's steps is refused (422)."""
    if any(isinstance(n, A.Sliced) for n in A.inside(pattern)):  # left in an EXISTS
        raise UnsupportedFeature("LIMIT/OFFSET in a sub-select inside EXISTS")
    try:
        return Maintainer(plan_of(pattern), data, max_rows=budget.steps).result
    except ViewTooLarge:
        raise OverLimit(f"the patch's WHERE makes more than {budget.steps:,} rows at one step on "
                        "this resource; make it more selective") from None


def _slices_evaluated(p: A.Pattern, data: QuadStore, budget: Budget) -> A.Pattern:
    """``p`` with each sub-select of LIMIT or OFFSET (``A.Sliced``, inner
    ones first) replaced by VALUES of its solutions: SPARQL evaluates a
    sub-select on its own (§18.2.1), so its rows are the same wherever the
    WHERE joins them. One inside an EXISTS is left, and refused
    (``_solutions``): EXISTS substitutes the outer row into it (§18.6)."""
    if isinstance(p, A.Sliced):
        inner = _slices_evaluated(p.p, data, budget)
        found = _solutions(inner, data, budget)
        budget.spend(sum(found.values()))
        rows = [{v: r[v] for v in p.vars if v in r} for r in solutions(
            A.Query(form="SELECT", pattern=inner, variables=p.vars, order=p.order), found)]
        if p.distinct:
            rows = list({tuple(sorted(r.items())): r for r in rows}.values())
        end = None if p.limit is None else p.offset + p.limit
        return A.Values(rows=tuple(tuple(sorted(r.items())) for r in rows[p.offset:end]))
    changed = {f.name: _slices_evaluated(v, data, budget) for f in fields(p)
               if isinstance(v := getattr(p, f.name), A.Pattern)}
    return replace(cast(Any, p), **changed) if changed else p


def _instances(tmpl: tuple[A.TriplePattern, ...], solutions: KSet, budget: Budget
               ) -> set[Triple]:
    """The template instantiated by each solution (``views.results.instance``:
    an instance with an unbound variable or that is no RDF is left out, §3.1.3),
    its blank nodes new ones for each solution and each copy of a repeated one."""
    fresh = any(isinstance(x, str) and x.startswith("_:") for tp in tmpl
                for x in (tp.s, tp.p, tp.o))
    out: set[Triple] = set()
    for m, k in solutions.items():
        copies = max(k, 0) if fresh else min(k, 1)
        budget.spend(copies * len(tmpl))
        row: dict[str, Identifier] = dict(m)
        for _ in range(copies):
            blank = _new_blanks()
            out.update(t for tp in tmpl if (t := instance(tp, row, blank)) is not None)
    return out


def _new_blanks() -> Callable[[str], Identifier]:
    """A new blank node for each label, the same for a label given again."""
    made: dict[str, Identifier] = {}
    return lambda label: made.setdefault(label, BNode())


class _Spending:
    """The resource's dataset as an update's WHERE reads it, each quad read
    spending the patch's budget (a WHERE of free patterns over a large
    resource is refused, 422, not evaluated for minutes)."""

    def __init__(self, ds: Quads, budget: Budget) -> None:
        self.ds, self.budget = ds, budget

    def match(self, g: object, s: Identifier | None, p: Identifier | None,
              o: Identifier | None) -> list[tuple]:
        found = list(self.ds.match(g, s, p, o))
        self.budget.spend(len(found) + 1)
        return found

    def match_many(self, keys: Sequence[tuple]) -> list[list[tuple]]:
        return [self.match(*k) for k in keys]

    def graph_names(self) -> list[Identifier]:
        return self.ds.graph_names()

    def graph_size(self, g: Identifier) -> int:
        return self.ds.graph_size(g)


def _has_service(node: object) -> bool:
    """Whether an update's algebra holds a SERVICE anywhere below ``node``."""
    if isinstance(node, dict):
        return getattr(node, "name", None) == "ServiceGraphPattern" or any(
            _has_service(v) for v in dict.values(node))
    if isinstance(node, list | tuple):
        return any(_has_service(x) for x in node)
    return False


class _BoundedStore:
    """The resource's triples, as the dictionary's fields, as N3 Patch's
    ``solid:where`` is matched against them (``_matches``), each matched
    triple spending the patch's budget. Indexed by subject, predicate and
    object with Python sets built at once (design note 205)."""

    def __init__(self, budget: Budget, triples: set[Fielded]) -> None:
        self.budget = budget
        self.all: set[Fielded] = set(triples)
        self.at: tuple[dict[Any, set[Fielded]], ...] = ({}, {}, {})
        for t in self.all:
            for where, term in zip(self.at, t, strict=True):
                where.setdefault(term, set()).add(t)

    def triples(self, pattern: tuple[Any, ...]) -> Iterator[Fielded]:
        """The triples matching ``pattern`` (None: any term)."""
        bound = [(where.get(term, set()), n) for n, (where, term) in
                 enumerate(zip(self.at, pattern, strict=True)) if term is not None]
        found = min(bound, key=lambda b: len(b[0]))[0] if bound else self.all
        for t in list(found):
            if all(t[n] == pattern[n] for _, n in bound):
                self.budget.spend()
                yield t

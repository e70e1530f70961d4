"""The delta program of a view as an immutable value (counting paper §4).

A plan is a DAG of frozen nodes, one per maintained sub-pattern. Every node
has an ``id`` derived from its content — its kind, its fields and its
children's ids — so the same sub-pattern gets the same id in every process,
every run and every version whose rules produce it; a node's output is a
function of its content and the data, so state stored under a node id is
never attached to a different computation. Identical sub-patterns share one
node. The plan's ``fingerprint`` covers the root and ``SEMANTICS``, the
version of the node rules and term semantics: a view whose stored
fingerprint differs from the one the running code builds is rebuilt.

Maintenance state lives with whoever runs the plan (``views.interpret`` in
memory, the SQL and Spark executors), keyed by node id; nodes hold none.

>>> from views.parse import parse
>>> p = plan_of(parse("SELECT ?s { ?s <http://e/p> ?o OPTIONAL { ?o <http://e/q> ?z } }").pattern)
>>> [type(n).__name__ for n in p.nodes]
['Scan', 'Scan', 'Join', 'Diff', 'Union', 'Project']
>>> p.fingerprint == plan_of(parse("SELECT ?s { ?s <http://e/p> ?o "
...     "OPTIONAL { ?o <http://e/q> ?z } }").pattern).fingerprint
True
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field

from rdflib.term import Identifier

from views import algebra as A
from views.errors import UnsupportedFeature
from views.normalize import normalize

# The version of the node rules and of the term semantics they use. Bump it
# when a change makes stored state computed by earlier code wrong (a rule's
# output or the identity of terms changes): every view is then rebuilt.
# 3: only the outputs some rule reads are stored (design note 147); 4: REGEX and
# REPLACE as XPath says, xsd:float single precision (design note 210); 5:
# dateTimes of any year and precision (design note 211); 6: no whitespace in a
# number's lexical form (design note 212); 7: durations of any size and
# precision, ASCII digits in dates and durations (design note 213); 8: a
# computed float written with its own shortest digits (design note 214); 9: a
# dateTime, date or duration cast to a string in its canonical form (note 216);
# 10: STRLANG takes well-formed BCP 47 tags only (note 218); 11: a float's
# value rounded once from its decimal form (note 219); 12: a SUM of floats
# rounded once to a float (note 220); 13: GRAPH ?g evaluates OPTIONAL, MINUS
# and EXISTS graph by graph where a solution binds no triple pattern (note 222);
# 14: a grouped SELECT expression naming an earlier one reads its value (note 223);
# 15: a decimal cast to a string keeps every digit (note 224); 16: REGEX's flag i
# folds the pattern's characters before a class is negated, not its escapes (note 226)
SEMANTICS = 16


# ------------------------------------------------------------------ nodes


@dataclass(frozen=True, kw_only=True, eq=False)
class Node:
    """A node of the delta program; equal nodes are nodes with equal ids."""

    id: str = field(init=False, repr=False)

    def __post_init__(self) -> None:
        text = type(self).__name__ + "(" + ",".join(
            f"{f.name}={_canon(getattr(self, f.name))}"
            for f in dataclasses.fields(self) if f.name != "id") + ")"
        object.__setattr__(self, "id", hashlib.sha256(text.encode()).hexdigest()[:32])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Node) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)

    @property
    def children(self) -> tuple[Node, ...]:
        return ()

    def describe(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True, kw_only=True, eq=False)
class Scan(Node):
    """A BGP (counting paper §4.3, Theorem 4.3). Its output is not stored
    unless it is the root: reads evaluate it through the indexed data."""

    triples: tuple[A.TriplePattern, ...]

    def describe(self) -> str:
        n = len(self.triples)
        return f"BGP of {n} triple pattern{'' if n == 1 else 's'}: ΔB by Theorem 4.3"


@dataclass(frozen=True, kw_only=True, eq=False)
class Values(Node):
    """VALUES: constant rows."""

    rows: tuple[tuple[tuple[str, Identifier], ...], ...]

    def describe(self) -> str:
        return "VALUES: constant"


@dataclass(frozen=True, kw_only=True, eq=False)
class GraphNames(Node):
    """The non-empty named graphs (GRAPH, normalised)."""

    term: A.Slot

    def describe(self) -> str:
        return "named graphs: existence changes of ΔG's graphs"


@dataclass(frozen=True, kw_only=True, eq=False)
class Join(Node):
    """Join (Theorem 4.5), or the matched half of OPTIONAL with its filter on
    μ1 ∪ μ2."""

    left: Node
    right: Node
    expr: A.Expr | None = None

    @property
    def children(self) -> tuple[Node, ...]:
        return (self.left, self.right)

    def describe(self) -> str:
        return "Join: Theorem 4.5" + (" with the OPTIONAL's filter" if self.expr else "")


@dataclass(frozen=True, kw_only=True, eq=False)
class Diff(Node):
    """μ1 kept with its annotation while no μ2 in supp(right) blocks it
    (Theorem 4.6): MINUS (``minus``: compatible and sharing a variable other
    than ``graph_var``), or OPTIONAL's unmatched half (compatible and
    satisfying ``expr``)."""

    left: Node
    right: Node
    expr: A.Expr | None = None
    minus: bool = False
    graph_var: str | None = None

    @property
    def children(self) -> tuple[Node, ...]:
        return (self.left, self.right)

    def describe(self) -> str:
        kind = "Minus" if self.minus else "Diff (OPTIONAL's unmatched side)"
        return f"{kind}: Theorem 4.6 over changed right-hand support"


@dataclass(frozen=True, kw_only=True, eq=False)
class Union(Node):
    left: Node
    right: Node

    @property
    def children(self) -> tuple[Node, ...]:
        return (self.left, self.right)

    def describe(self) -> str:
        return "Union: ΔP1 + ΔP2"


@dataclass(frozen=True, kw_only=True, eq=False)
class Filter(Node):
    child: Node
    expr: A.Expr

    @property
    def children(self) -> tuple[Node, ...]:
        return (self.child,)

    def describe(self) -> str:
        return "Filter" + _map_rule(self.expr)


@dataclass(frozen=True, kw_only=True, eq=False)
class Extend(Node):
    child: Node
    var: str
    expr: A.Expr

    @property
    def children(self) -> tuple[Node, ...]:
        return (self.child,)

    def describe(self) -> str:
        return f"Extend ?{self.var}" + _map_rule(self.expr)


def _map_rule(e: A.Expr) -> str:
    return (": EXISTS re-decided for mappings ΔG touches" if A.has_exists(e)
            else ": applied to ΔP1")


@dataclass(frozen=True, kw_only=True, eq=False)
class Project(Node):
    child: Node
    vars: tuple[str, ...]

    @property
    def children(self) -> tuple[Node, ...]:
        return (self.child,)

    def describe(self) -> str:
        return f"Project {' '.join('?' + v for v in self.vars)}: π(ΔP1)"


@dataclass(frozen=True, kw_only=True, eq=False)
class Distinct(Node):
    child: Node

    @property
    def children(self) -> tuple[Node, ...]:
        return (self.child,)

    def describe(self) -> str:
        return "Distinct: support changes of P1"


@dataclass(frozen=True, kw_only=True, eq=False)
class Group(Node):
    """GROUP BY and aggregates: the groups Δ touches are recomputed from
    their members (so MIN/MAX survive deleting the extreme)."""

    child: Node
    keys: tuple[A.Expr, ...]
    aggregates: tuple[A.Aggregate, ...]

    @property
    def children(self) -> tuple[Node, ...]:
        return (self.child,)

    @property
    def tallied(self) -> bool:
        """Whether a batch can maintain the group from tallies kept per
        group instead of reading its members: every aggregate is a sum over
        the members (COUNT of a variable or *, SUM or AVG of a variable,
        none DISTINCT) or an extreme (MIN, MAX, SAMPLE of a variable), which
        changes only when a member beyond it comes or the one holding it
        goes. The SQL executor keeps them (design note 181)."""
        return all(isinstance(a.expr, A.Var) and a.fn in ("MIN", "MAX", "SAMPLE")
                   or not a.distinct and (a.fn == "COUNT" or (a.fn in ("SUM", "AVG")
                                                              and isinstance(a.expr, A.Var)))
                   for a in self.aggregates)

    def describe(self) -> str:
        names = ", ".join(a.fn for a in self.aggregates) or "no aggregate"
        how = "touched groups recomputed from their members"
        if self.tallied:
            how += ("; as one statement on SQL, from tallies kept per group (counts, sums, "
                    "extremes), which the batch's members change")
        return f"Group ({names}): {how}"


@dataclass(frozen=True, kw_only=True, eq=False)
class Closure(Node):
    """An arbitrary-length path (SPARQL 1.1 §18.4 ALP, one or more steps):
    the pairs its ``child`` edges connect, each once. Its output binds the
    ``subject`` and ``object`` variables (a constant end: one source or one
    target) and ``graph`` (edges of different graphs never connect).
    Insertions by semi-naive evaluation, deletions by Backward/Forward
    (``views.closure``)."""

    child: Node
    src: str
    dst: str
    subject: A.Slot
    object: A.Slot
    graph: str | None = None

    @property
    def children(self) -> tuple[Node, ...]:
        return (self.child,)

    def describe(self) -> str:
        return ("Closure (path+): insertions semi-naive, deletions Backward/Forward "
                "over the reachable pairs")


def _canon(x: object) -> str:
    """A deterministic text for a node field: the same in every process
    (``hash`` is not), and one per value (injective): terms in their
    N-Triples form after a ``t``, names quoted. Untagged, a plain literal's
    form was a quoted name: ``?y :q "x"`` and ``?y :q ?x`` (a variable is
    its name) were one node, their state and shape shared (design note 227).

    >>> from rdflib import Literal
    >>> _canon(Literal("x")) != _canon("x")
    True
    """
    match x:
        case Node():
            return "#" + x.id
        case Identifier():
            return "t" + x.n3()
        case str():  # a variable name, or a name such as a function's
            return json.dumps(x)
        case None | bool() | int():
            return repr(x)
        case tuple():
            return "(" + ",".join(_canon(v) for v in x) + ")"
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return type(x).__name__ + "(" + ",".join(
            f"{f.name}={_canon(getattr(x, f.name))}" for f in dataclasses.fields(x)) + ")"
    raise TypeError(f"cannot fingerprint {type(x).__name__}")


# ------------------------------------------------------------------- plan


@dataclass(frozen=True)
class Plan:
    """A view's delta program: its nodes in post-order (children first, each
    node once) and the fingerprint that identifies the computation."""

    root: Node
    nodes: tuple[Node, ...]
    fingerprint: str

    def explain(self) -> str:
        """The maintenance plan in words, one node a line (indented under
        its parent), each with what is kept of its output (``stored``)."""
        lines: list[str] = []

        def walk(n: Node, depth: int) -> None:
            lines.append("  " * depth + f"{n.describe()} [{self._keeps(n)}]")
            for c in n.children:
                walk(c, depth + 1)

        walk(self.root, 0)
        return "\n".join(lines)

    def _keeps(self, n: Node) -> str:
        if n is self.root:
            return "stored: the view's results"
        if self.stored(n):
            return "stored"
        if isinstance(n, Scan):
            return "read through the data"
        return "not stored: no rule reads it as it was"

    def stored(self, n: Node) -> bool:
        """Whether ``n``'s output is stored: the root's (the view's results),
        and that of every node but a BGP (read through the indexed data
        instead, design note 1) whose output before a batch some rule reads
        (``reads_before``). The others' changes only flow to their parents
        (design note 147)."""
        return n.id in self._kept

    @functools.cached_property
    def _kept(self) -> frozenset[str]:
        read = {m.id for n in self.nodes for m in reads_before(n)}
        return frozenset(n.id for n in self.nodes
                         if n is self.root or (n.id in read and not isinstance(n, Scan)))

    @functools.cached_property
    def grouped(self) -> bool:
        """Whether a node groups its input (GROUP BY, or aggregates over the
        one group): its rule reads every member of each group a batch
        touches, which the stored state need not count (a BGP's are read
        through the data)."""
        return any(isinstance(n, Group) for n in self.nodes)

    def parents(self) -> dict[str, int]:
        """How many nodes read each node's output (by id)."""
        count: dict[str, int] = {}
        for n in self.nodes:
            for c in n.children:
                count[c.id] = count.get(c.id, 0) + 1
        return count


def reads_before(n: Node) -> tuple[Node, ...]:
    """The nodes whose output before a batch ``n``'s rule reads (its
    children's, its own): a join's both sides (ΔP1 ⋈ P2, P1 ⋈ ΔP2), a
    difference's both sides and its own (Theorem 4.6), a DISTINCT's and a
    group's input (a support, a group's members), a map with EXISTS its
    input (the mappings whose EXISTS ΔG may flip), a closure its edges and
    its own. A union, a projection and a map without EXISTS read their
    children's deltas only."""
    match n:
        case Join():
            return (n.left, n.right)
        case Diff():
            return (n.left, n.right, n)
        case Filter() | Extend():
            return (n.child,) if A.has_exists(n.expr) else ()
        case Distinct() | Group():
            return (n.child,)
        case Closure():
            return (n.child, n)
    return ()


def plan_of(pattern: A.Pattern) -> Plan:
    """The delta program of ``pattern`` (normalised here); raises
    ``UnsupportedFeature`` for what cannot be maintained."""
    root = build(normalize(pattern))
    digest = hashlib.sha256(f"podviews-plan/{SEMANTICS}/{root.id}".encode()).hexdigest()
    return Plan(root=root, nodes=tuple(postorder(root)), fingerprint=digest[:32])


def build(p: A.Pattern) -> Node:
    """The node of a normalised pattern (counting paper §4.2–4.5)."""
    match p:
        case A.BGP():
            return Scan(triples=p.triples)
        case A.Values():
            return Values(rows=p.rows)
        case A.GraphNames():
            return GraphNames(term=p.term)
        case A.Join():
            return Join(left=build(p.left), right=build(p.right))
        case A.LeftJoin():
            if A.has_exists(p.expr):
                raise UnsupportedFeature("EXISTS inside an OPTIONAL's filter")
            left, right = build(p.left), build(p.right)
            # SPARQL 1.1 §18.5: LeftJoin = Filter(expr, Join) ∪ Diff(expr)
            return Union(left=Join(left=left, right=right, expr=p.expr),
                         right=Diff(left=left, right=right, expr=p.expr))
        case A.Minus():
            return Diff(left=build(p.left), right=build(p.right), minus=True,
                        graph_var=p.graph_var)
        case A.Union_():
            return Union(left=build(p.left), right=build(p.right))
        case A.Filter():
            return Filter(child=build(p.p), expr=p.expr)
        case A.Extend():
            return Extend(child=build(p.p), var=p.var, expr=p.expr)
        case A.Project():
            # the order is not the projection's: SELECT *'s comes from a set in rdflib,
            # which differs between processes (and so did the plan's fingerprint)
            return Project(child=build(p.p), vars=tuple(sorted(p.vars)))
        case A.Distinct():
            return Distinct(child=build(p.p))
        case A.Group():
            if any(A.has_exists(e) for e in p.keys) or any(A.has_exists(a.expr)
                                                          for a in p.aggregates):
                raise UnsupportedFeature("EXISTS inside GROUP BY or an aggregate")
            return Group(child=build(p.p), keys=p.keys, aggregates=p.aggregates)
        case A.Closure():
            return Closure(child=build(p.p), src=p.src, dst=p.dst, subject=p.subject,
                           object=p.object, graph=p.graph)
    raise UnsupportedFeature(f"operator {type(p).__name__}")


def postorder(root: Node) -> Iterator[Node]:
    """Children before parents, each node once."""
    seen: set[str] = set()

    def visit(n: Node) -> Iterator[Node]:
        if n.id in seen:
            return
        seen.add(n.id)
        for c in n.children:
            yield from visit(c)
        yield n

    return visit(root)

"""Our own SPARQL algebra: frozen, keyword-only dataclasses (SPARQL 1.1 §18.2).

Variables are plain ``str`` names; RDF terms are rdflib terms. A variable whose
name starts with ``_:`` stands for a blank node of a BGP (counting paper §3.4:
blank nodes are fresh variables, projected away).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from rdflib.term import Identifier

Term = Identifier
Slot = str | Term  # a variable name or a constant term


def is_var(x: object) -> bool:
    """True for a variable slot.

    >>> from rdflib import Literal
    >>> is_var("x"), is_var(Literal("x"))
    (True, False)
    """
    return isinstance(x, str) and not isinstance(x, Identifier)


# ---------------------------------------------------------------- expressions


@dataclass(frozen=True, kw_only=True)
class Var:
    name: str


@dataclass(frozen=True, kw_only=True)
class Const:
    term: Term


@dataclass(frozen=True, kw_only=True)
class Call:
    """A function or operator application; ``fn`` names it (``"+"``, ``"STRLEN"``,
    an IRI string for casts)."""

    fn: str
    args: tuple[Expr, ...]


@dataclass(frozen=True, kw_only=True)
class Exists:
    pattern: Pattern
    negated: bool


Expr = Var | Const | Call | Exists


# ------------------------------------------------------------------- patterns


@dataclass(frozen=True, kw_only=True)
class TriplePattern:
    s: Slot
    p: Slot
    o: Slot
    g: Slot | None = None  # None: the default graph; else the active named graph


@dataclass(frozen=True, kw_only=True)
class BGP:
    triples: tuple[TriplePattern, ...]


@dataclass(frozen=True, kw_only=True)
class Join:
    left: Pattern
    right: Pattern


@dataclass(frozen=True, kw_only=True)
class LeftJoin:
    left: Pattern
    right: Pattern
    expr: Expr | None


@dataclass(frozen=True, kw_only=True)
class Union_:
    left: Pattern
    right: Pattern


@dataclass(frozen=True, kw_only=True)
class Minus:
    left: Pattern
    right: Pattern
    graph_var: str | None = None  # pushed-down GRAPH variable: not a shared variable


@dataclass(frozen=True, kw_only=True)
class GraphNames:
    """The named graphs of the dataset: one solution {term -> g} per non-empty
    named graph g (or the empty solution when ``term`` is a graph IRI that is
    one). Produced by normalising GRAPH."""

    term: Slot


@dataclass(frozen=True, kw_only=True)
class Filter:
    expr: Expr
    p: Pattern


@dataclass(frozen=True, kw_only=True)
class Extend:
    p: Pattern
    var: str
    expr: Expr


@dataclass(frozen=True, kw_only=True)
class Values:
    rows: tuple[tuple[tuple[str, Term], ...], ...]


@dataclass(frozen=True, kw_only=True)
class Project:
    p: Pattern
    vars: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class Distinct:
    p: Pattern


@dataclass(frozen=True, kw_only=True)
class Graph:
    term: Slot
    p: Pattern


@dataclass(frozen=True, kw_only=True)
class Aggregate:
    """One aggregate of a group: ``fn`` is COUNT, SUM, AVG, MIN, MAX, SAMPLE or
    GROUP_CONCAT; ``expr`` None means ``*``."""

    fn: str
    expr: Expr | None
    distinct: bool
    var: str
    separator: str = " "


@dataclass(frozen=True, kw_only=True)
class Group:
    """GROUP BY ``keys`` then compute ``aggregates`` (SPARQL 1.1 §18.5): one
    solution per group binding the aggregates' variables."""

    p: Pattern
    keys: tuple[Expr, ...]
    aggregates: tuple[Aggregate, ...]


# ------------------------------------------------------- property paths (§9)


@dataclass(frozen=True, kw_only=True)
class Link:
    """A property path that is one IRI."""

    iri: Term


@dataclass(frozen=True, kw_only=True)
class Inv:
    """``^path``."""

    path: PathExpr


@dataclass(frozen=True, kw_only=True)
class Seq:
    """``left/right``."""

    left: PathExpr
    right: PathExpr


@dataclass(frozen=True, kw_only=True)
class Alt:
    """``left|right``."""

    left: PathExpr
    right: PathExpr


@dataclass(frozen=True, kw_only=True)
class NegSet:
    """``!(fwd1|…|^inv1|…)``: one triple whose predicate is none of ``fwd``,
    or one reversed triple whose predicate is none of ``inv``."""

    fwd: tuple[Term, ...]
    inv: tuple[Term, ...]


@dataclass(frozen=True, kw_only=True)
class Mod:
    """``path?``, ``path*`` or ``path+`` (``mod``)."""

    path: PathExpr
    mod: str


PathExpr = Link | Inv | Seq | Alt | NegSet | Mod


@dataclass(frozen=True, kw_only=True)
class PathPattern:
    """A triple pattern whose predicate is a property path (SPARQL 1.1 §18.4),
    as parsed; normalisation (``views.paths``) rewrites it into the other
    patterns and ``Closure``."""

    s: Slot
    path: PathExpr
    o: Slot
    g: Slot | None = None  # as TriplePattern.g


@dataclass(frozen=True, kw_only=True)
class Closure:
    """The pairs connected by one or more steps of the edge relation ``p``
    (its solutions bind ``src`` and ``dst``), each pair once (SPARQL 1.1
    §18.4 ALP, set semantics). ``subject``/``object``: the variables the
    pairs bind, or constants that fix that end. ``graph``: a variable of
    ``p``'s solutions that partitions the edges (GRAPH ?g pushed down):
    paths never cross from one graph to another."""

    p: Pattern
    src: str
    dst: str
    subject: Slot
    object: Slot
    graph: str | None = None


@dataclass(frozen=True, kw_only=True)
class Sliced:
    """A sub-select with LIMIT or OFFSET: its pattern's solutions ordered,
    projected (``vars``), made distinct and sliced. Counting cannot maintain
    it, so only an update's WHERE holds one, evaluated once before the rest
    (design note 225)."""
    p: Pattern
    vars: tuple[str, ...]
    order: tuple[OrderKey, ...]
    distinct: bool
    limit: int | None
    offset: int


Pattern = (BGP | Join | LeftJoin | Union_ | Minus | Filter | Extend | Values | Project | Distinct
           | Graph | Group | GraphNames | PathPattern | Closure | Sliced)


# ---------------------------------------------------------------------- query


@dataclass(frozen=True, kw_only=True)
class OrderKey:
    expr: Expr
    descending: bool


@dataclass(frozen=True, kw_only=True)
class Query:
    """A SELECT, ASK or CONSTRUCT query: the maintained ``pattern`` and the
    solution modifiers applied when results are read; a CONSTRUCT's
    ``template`` is instantiated by the solutions when they are read
    (``views.results.graph``)."""

    form: str  # "SELECT", "ASK" or "CONSTRUCT"
    pattern: Pattern
    variables: tuple[str, ...]
    order: tuple[OrderKey, ...] = ()
    limit: int | None = None
    offset: int = 0
    from_graphs: tuple[Term, ...] = ()
    from_named: tuple[Term, ...] = ()
    template: tuple[TriplePattern, ...] = ()  # CONSTRUCT; a blank node is "_:label"


def children(p: Pattern) -> tuple[Pattern, ...]:
    """The sub-patterns of a pattern node."""
    match p:
        case Join() | LeftJoin() | Union_() | Minus():
            return (p.left, p.right)
        case Filter() | Extend() | Project() | Distinct() | Graph() | Group() | Closure() | Sliced():
            return (p.p,)
        case _:
            return ()


def inside(node: object) -> Iterator[object]:
    """``node`` and every node of the algebra below it (a pattern,
    expression or query), EXISTS included: a walk over every field of the
    algebra's dataclasses, so no pattern or expression kind is missed."""
    if isinstance(node, tuple):
        for x in node:
            yield from inside(x)
    elif dataclasses.is_dataclass(node) and not isinstance(node, type):
        yield node
        for f in dataclasses.fields(node):
            yield from inside(getattr(node, f.name))


def uses_named_graphs(node: object) -> bool:
    """Does ``node`` (a pattern, expression or query) read named graphs — a
    GRAPH pattern anywhere, EXISTS included (SPARQL 1.1 §13.3)?"""
    return any(isinstance(n, GraphNames | Graph)
               or isinstance(n, TriplePattern | PathPattern) and n.g is not None
               for n in inside(node))


def expr_children(e: Expr) -> tuple[Expr, ...]:
    match e:
        case Call():
            return e.args
        case _:
            return ()


def walk_expr(e: Expr):  # type: ignore[no-untyped-def]
    """All sub-expressions of ``e``, ``e`` first."""
    yield e
    for c in expr_children(e):
        yield from walk_expr(c)


def has_exists(e: Expr | None) -> bool:
    return e is not None and any(isinstance(x, Exists) for x in walk_expr(e))


def expr_vars(e: Expr) -> set[str]:
    return {x.name for x in walk_expr(e) if isinstance(x, Var)}


def triple_vars(tps: Iterable[TriplePattern]) -> set[str]:
    """The variables of these triple patterns (graph position included)."""
    return {s for t in tps for s in (t.g, t.s, t.p, t.o)
            if s is not None and is_var(s)}  # type: ignore[misc]


def triple_patterns(node: object) -> list[TriplePattern]:
    """Every triple pattern inside ``node`` (a pattern, expression or query),
    EXISTS included: a walk over every field of the algebra's dataclasses,
    so no pattern or expression kind is missed."""
    if isinstance(node, TriplePattern):
        return [node]
    if isinstance(node, PathPattern):
        return path_triples(node.path, node.s, node.o)
    if isinstance(node, tuple):
        return [tp for x in node for tp in triple_patterns(x)]
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        return [tp for f in dataclasses.fields(node)
                for tp in triple_patterns(getattr(node, f.name))]
    return []




def path_triples(path: PathExpr, s: Slot, o: Slot) -> list[TriplePattern]:
    """Triple patterns standing for what a path can match: one per IRI it
    names, and one with a variable predicate where it can match any triple (a
    negated set) or none (a zero-length path matches every term of the
    graph). Their predicates are exact; their subjects and objects only say
    which ends are fixed."""
    match path:
        case Link():
            return [TriplePattern(s=s, p=path.iri, o=o)]
        case Inv():
            return path_triples(path.path, o, s)
        case Seq() | Alt():
            return path_triples(path.left, s, o) + path_triples(path.right, s, o)
        case NegSet():
            return [TriplePattern(s=s, p="_:negated", o=o)]
        case Mod():
            zero = [] if path.mod == "+" else [TriplePattern(s=s, p="_:zero", o=o)]
            return path_triples(path.path, s, o) + zero
    raise TypeError(path)

"""pyoxigraph as an independent oracle: its solutions and ours compared as
multisets, numbers by value (lexical forms of computed numbers differ
between engines)."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pyoxigraph as ox
from rdflib import URIRef
from rdflib.term import BNode, Identifier, Literal

from views.results import solutions
from views.terms import ExprError, canonical, numeric_type, numeric_value


def canon(t: object) -> tuple:
    """A term of either engine, compared by value for numbers."""
    if isinstance(t, (ox.NamedNode, URIRef)):
        return ("i", str(t.value if isinstance(t, ox.NamedNode) else t))
    lit = from_ox(t) if isinstance(t, ox.Literal) else t
    assert isinstance(lit, Literal)
    if numeric_type(lit) is not None:
        try:
            return ("n", str(numeric_type(lit)), float(numeric_value(lit)))
        except ExprError:  # ill-typed ("x"^^xsd:integer): compared as written
            pass
    dt = "" if lit.datatype in (None, URIRef("http://www.w3.org/2001/XMLSchema#string")) \
        else str(lit.datatype)
    return ("l", str(lit), dt, lit.language or "")


@dataclass(frozen=True)
class OxTimes:
    """pyoxigraph answering a query from scratch, timed honestly (ms)."""

    eval_ms: float  # evaluating it: iterating the solutions, no Python term built
    json_ms: float  # answering it: its SPARQL JSON results, serialised by pyoxigraph


def ox_times(store: ox.Store, query: str) -> OxTimes:
    """pyoxigraph's own time for ``query``: what the benches compare with
    (converting its solutions to Python terms took most of the time they
    used to measure — issue 21)."""
    t = time.perf_counter()
    for _ in ox_solutions(store, query):
        pass
    evaluated = time.perf_counter()
    ox_solutions(store, query).serialize(format=ox.QueryResultsFormat.JSON)
    done = time.perf_counter()
    return OxTimes((evaluated - t) * 1000, (done - evaluated) * 1000)


def ox_solutions(store: ox.Store, query: str) -> ox.QuerySolutions:
    """pyoxigraph's solutions of a SELECT query."""
    found = store.query(query)
    assert isinstance(found, ox.QuerySolutions), "not a SELECT query"
    return found


def oxigraph_rows(store: ox.Store, query: str, variables: tuple[str, ...]) -> Counter:
    rows: Counter = Counter()
    for sol in ox_solutions(store, query):
        rows[tuple(sorted((v, canon(sol[v])) for v in variables if sol[v] is not None))] += 1
    return rows


def our_rows(q: Any, view: dict, variables: tuple[str, ...]) -> Counter:  # type: ignore[type-arg]
    """The solutions of compiled query ``q`` over the K-set ``view``."""
    return Counter(tuple(sorted((v, canon(t)) for v, t in r.items() if v in variables))
                   for r in solutions(q, view))


def to_ox(t: Identifier) -> ox.NamedNode | ox.BlankNode | ox.Literal:
    """Our term as pyoxigraph's."""
    if isinstance(t, URIRef):
        return ox.NamedNode(str(t))
    if isinstance(t, BNode):
        return ox.BlankNode(str(t))
    assert isinstance(t, Literal), f"not an RDF term: {t!r}"
    if t.language:
        return ox.Literal(str(t), language=t.language)
    return ox.Literal(str(t), datatype=ox.NamedNode(str(t.datatype)) if t.datatype else None)


def from_ox(t: ox.NamedNode | ox.BlankNode | ox.Literal) -> Identifier:
    """pyoxigraph's term as ours, in its one form (``to_ox``'s inverse)."""
    if isinstance(t, ox.NamedNode):
        return URIRef(t.value)
    if isinstance(t, ox.BlankNode):
        return BNode(t.value)
    return canonical(Literal(t.value, lang=t.language,
                             datatype=None if t.language else URIRef(t.datatype.value)))


def ox_quad(q: tuple) -> ox.Quad:
    """A triple ``(s, p, o)`` (default graph) or quad ``(g, s, p, o)`` (g None:
    the default graph) as pyoxigraph's quad."""
    g, s, p, o = q if len(q) == 4 else (None, *q)
    subject, predicate, obj = to_ox(s), to_ox(p), to_ox(o)
    assert not isinstance(subject, ox.Literal) and isinstance(predicate, ox.NamedNode)
    graph = ox.DefaultGraph() if g is None else ox.NamedNode(str(g))
    return ox.Quad(subject, predicate, obj, graph)

"""Reading a view: K-set -> the solution sequence of the query (SPARQL 1.1
§18.5 ToList, OrderBy, Slice), applied at read time, not maintained."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from functools import cmp_to_key, partial

from rdflib.term import BNode, Identifier, URIRef

from views import algebra as A
from views.compare import order_key
from views.expr import try_evaluate
from views.kset import KSet


def solutions(q: A.Query, view: KSet) -> list[dict[str, Identifier]]:
    """The ordered, sliced solutions of ``q`` given its maintained K-set; each
    mapping is repeated by its multiplicity."""
    rows: list[dict[str, Identifier]] = []
    for m, k in sorted(view.items(), key=lambda mk: _stable(mk[0])):
        rows.extend([dict(m)] * max(k, 0))
    if q.order:
        rows.sort(key=cmp_to_key(lambda a, b: _compare(q.order, a, b)))
    end = None if q.limit is None else q.offset + q.limit
    return rows[q.offset:end]


def _stable(m: frozenset) -> tuple:  # type: ignore[type-arg]
    return tuple(sorted((v, order_key(t)) for v, t in m))


def _compare(keys: tuple[A.OrderKey, ...], a: dict, b: dict) -> int:
    for key in keys:
        ka = order_key(try_evaluate(key.expr, a))
        kb = order_key(try_evaluate(key.expr, b))
        if ka != kb:
            c = -1 if ka < kb else 1
            return -c if key.descending else c
    return 0


def ask(view: KSet) -> bool:
    return any(k > 0 for k in view.values())


Triple = tuple[Identifier, Identifier, Identifier]


def graph(q: A.Query, view: KSet) -> dict[Triple, int]:
    """A CONSTRUCT's graph (SPARQL 1.1 §16.2): the template instantiated by
    each solution (ordered and sliced), each triple with its support — the
    solutions that make it. A triple with an unbound variable or that is not
    RDF (a literal subject, a predicate that is no IRI) is left out. A blank
    node of the template is a fresh one per solution, named from the
    solution (and its copy, for a solution repeated), so a maintained graph
    names it the same at every read.

    >>> from rdflib import URIRef
    >>> p = URIRef("http://e/p")
    >>> q = A.Query(form="CONSTRUCT", pattern=A.BGP(triples=()), variables=("x",),
    ...             template=(A.TriplePattern(s="x", p=p, o="y"),))
    >>> graph(q, {frozenset({("x", p), ("y", p)}): 2, frozenset({("x", p)}): 1})
    {(rdflib.term.URIRef('http://e/p'), rdflib.term.URIRef('http://e/p'), rdflib.term.URIRef('http://e/p')): 2}
    """
    out: dict[Triple, int] = {}
    copies: dict[tuple, int] = {}
    for row in solutions(q, view):
        key = tuple(sorted((v, t.n3()) for v, t in row.items()))
        copy = copies[key] = copies.get(key, -1) + 1
        for tp in q.template:
            t = instance(tp, row, partial(_named_blank, key=key, copy=copy))
            if t is not None:
                out[t] = out.get(t, 0) + 1
    return out


def instance(tp: A.TriplePattern, row: Mapping[str, Identifier],
             blank: Callable[[str], Identifier]) -> Triple | None:
    """A template's triple instantiated by ``row`` (its blank nodes made by
    ``blank`` from their labels), or None when a variable is unbound or the
    instance is not RDF — a literal subject, a predicate that is no IRI
    (SPARQL 1.1 §16.2, and Update §3.1.3 for an update's templates)."""
    s, p, o = (x if isinstance(x, Identifier)  # a constant (variables are plain strings)
               else blank(x) if x.startswith("_:") else row.get(x) for x in (tp.s, tp.p, tp.o))
    if isinstance(s, URIRef | BNode) and isinstance(p, URIRef) and o is not None:
        return s, p, o
    return None


def _named_blank(label: str, key: tuple, copy: int) -> BNode:
    """A CONSTRUCT's blank node, named from its solution and copy: the same
    at every read of a maintained graph."""
    digest = hashlib.sha1(repr((label, key, copy)).encode()).hexdigest()[:20]
    return BNode(f"c{digest}")


"""Reading a view: K-set -> the solution sequence of the query (SPARQL 1.1
§18.5 ToList, OrderBy, Slice), applied at read time, not maintained."""

from __future__ import annotations

import hashlib
from functools import cmp_to_key

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
            s, p, o = (_instance(x, row, key, copy) for x in (tp.s, tp.p, tp.o))
            if isinstance(s, URIRef | BNode) and isinstance(p, URIRef) and o is not None:
                out[(s, p, o)] = out.get((s, p, o), 0) + 1
    return out


def _instance(x: A.Slot, row: dict[str, Identifier], key: tuple,
              copy: int) -> Identifier | None:
    if isinstance(x, Identifier):  # a constant (variables are plain strings)
        return x
    if x.startswith("_:"):
        digest = hashlib.sha1(repr((x, key, copy)).encode()).hexdigest()[:20]
        return BNode(f"c{digest}")
    return row.get(x)


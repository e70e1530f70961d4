"""Reading a view: K-set -> the solution sequence of the query (SPARQL 1.1
§18.5 ToList, OrderBy, Slice), applied at read time, not maintained."""

from __future__ import annotations

from functools import cmp_to_key

from rdflib.term import Identifier

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

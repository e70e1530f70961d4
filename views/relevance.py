"""Which pod changes can matter to a view: a triple whose predicate no
triple pattern of the query can match (in any sub-pattern, EXISTS or
aggregate included) never changes its result, so a write of only such
triples need not wake the view. Variables in the predicate position match
anything, and so does GRAPH: whether a document is a named graph at all
depends on every triple it holds (SPARQL 1.1 §13.3)."""

from __future__ import annotations

from views import algebra as A


def predicates(query: A.Query) -> frozenset[str] | None:
    """The predicate IRIs the view's triple patterns can match, or None when
    some pattern's predicate is a variable or the query reads named graphs
    (every change may matter)."""
    if A.uses_named_graphs(query.pattern):
        return None
    found: set[str] = set()
    for tp in A.triple_patterns(query):
        if A.is_var(tp.p):
            return None
        found.add(str(tp.p))
    return frozenset(found)


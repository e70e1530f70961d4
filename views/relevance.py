"""Which pod changes can matter to a view: a triple whose predicate no
triple pattern of the query can match (in any sub-pattern, EXISTS or
aggregate included) never changes its result, so a write of only such
triples need not wake the view. Graph patterns over named graphs are not
exposed to views yet; variables in the predicate position match anything."""

from __future__ import annotations

import dataclasses

from views import algebra as A


def predicates(query: A.Query) -> frozenset[str] | None:
    """The predicate IRIs the view's triple patterns can match, or None when
    some pattern's predicate is a variable (every change may matter)."""
    found: set[str] = set()
    for tp in _triple_patterns(query):
        if A.is_var(tp.p):
            return None
        found.add(str(tp.p))
    return frozenset(found)


def _triple_patterns(node: object):  # type: ignore[no-untyped-def]
    """Every triple pattern inside ``node``, walking all fields of the
    algebra's dataclasses (so no pattern or expression kind is missed)."""
    if isinstance(node, A.TriplePattern):
        yield node
    elif dataclasses.is_dataclass(node) and not isinstance(node, type):
        for f in dataclasses.fields(node):
            yield from _triple_patterns(getattr(node, f.name))
    elif isinstance(node, tuple):
        for x in node:
            yield from _triple_patterns(x)

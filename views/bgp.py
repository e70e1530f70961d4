"""Matching triple patterns against quad sources (SPARQL 1.1 §18.3 BGP).

A source is any callable ``(g, s, p, o) -> iterable of (quad, sign)`` with None
for an unbound position; the default graph is ``g = None``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from rdflib.term import Identifier, URIRef

from views import algebra as A
from views.dataset import ANY_NAMED, QuadStore

Source = Callable[[object, object, object, object], Iterable[tuple[tuple, int]]]


def _value(slot: A.Slot | None, bound: dict[str, Identifier]) -> Identifier | None:
    if slot is None or not A.is_var(slot):
        return slot  # type: ignore[return-value]
    return bound.get(slot)  # type: ignore[arg-type]


def extend(tp: A.TriplePattern, quad: tuple, bound: dict[str, Identifier]) -> dict | None:
    """``bound`` extended so that ``tp`` matches ``quad``, or None."""
    out = bound
    for slot, term in zip((tp.g, tp.s, tp.p, tp.o), quad):
        if slot is None or not A.is_var(slot):
            continue
        have = out.get(slot)  # type: ignore[arg-type]
        if have is None:
            if out is bound:
                out = dict(bound)
            out[slot] = term  # type: ignore[index]
        elif have != term:
            return None
    return out


def match_quad(tp: A.TriplePattern, quad: tuple) -> dict | None:
    """The bindings under which ``tp`` matches ``quad`` (constants checked too),
    or None."""
    if (tp.g is None) != (quad[0] is None):
        return None
    for slot, term in zip((tp.g, tp.s, tp.p, tp.o), quad):
        if slot is not None and not A.is_var(slot) and slot != term:
            return None
    return extend(tp, quad, {})


def probe(tp: A.TriplePattern, bound: dict[str, Identifier]) -> tuple:
    """The (g, s, p, o) lookup key of ``tp`` under ``bound``."""
    if tp.g is None:
        g: object = None
    else:
        g = _value(tp.g, bound)
        if g is None:
            g = ANY_NAMED
        elif not isinstance(g, URIRef):
            g = _NO_GRAPH
    return (g, _value(tp.s, bound), _value(tp.p, bound), _value(tp.o, bound))


_NO_GRAPH = URIRef("urn:podviews:no-such-graph")


def dataset_source(ds: QuadStore) -> Source:
    def source(g: object, s: object, p: object, o: object) -> Iterator[tuple[tuple, int]]:
        for q in ds.match(g, s, p, o):  # type: ignore[arg-type]
            yield q, 1
    return source


def join_patterns(tps: list[A.TriplePattern], sources: list[Source],
                  start: dict[str, Identifier], k: int = 1) -> Iterator[tuple[dict, int]]:
    """Index nested-loop join of ``tps[i]`` over ``sources[i]`` from ``start``;
    the most bound pattern goes first."""
    if not tps:
        yield start, k
        return
    i = min(range(len(tps)), key=lambda j: _freedom(tps[j], start))
    tp, src = tps[i], sources[i]
    rest_t, rest_s = tps[:i] + tps[i + 1:], sources[:i] + sources[i + 1:]
    for quad, sign in src(*probe(tp, start)):
        nxt = extend(tp, quad, start)
        if nxt is not None:
            yield from join_patterns(rest_t, rest_s, nxt, k * sign)


def _freedom(tp: A.TriplePattern, bound: dict[str, Identifier]) -> int:
    free = sum(1 for x in (tp.s, tp.p, tp.o) if A.is_var(x) and x not in bound)
    return free * 2 + (0 if tp.p is not None and not A.is_var(tp.p) else 1)

"""Matching triple patterns against quad sources (SPARQL 1.1 §18.3 BGP).

A source is a ``QuadStore``: lookups ``(g, s, p, o)`` with None for an unbound
position; the default graph is ``g = None``.
"""

from __future__ import annotations

from rdflib.term import Identifier, URIRef

from views import algebra as A
from views.dataset import ANY_NAMED, QuadStore


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


Start = tuple  # (bindings, k): a partial solution the join extends


def join_patterns(tps: list[A.TriplePattern], sources: list[QuadStore],
                  starts: list[Start]) -> list[list[tuple[dict, int]]]:
    """For each start, its index nested-loop join with ``tps[i]`` over
    ``sources[i]``, set at a time: each step probes a source once for the whole
    frontier (``match_many``), the most bound pattern first."""
    out: list[list[tuple[dict, int]]] = [[] for _ in starts]
    _join(tps, sources, [(i, b, k) for i, (b, k) in enumerate(starts)], out)
    return out


def _join(tps: list[A.TriplePattern], sources: list[QuadStore],
          frontier: list[tuple[int, dict, int]], out: list[list[tuple[dict, int]]]) -> None:
    if not tps:
        for i, b, k in frontier:
            out[i].append((b, k))
        return
    by_schema: dict[frozenset, list[tuple[int, dict, int]]] = {}
    for row in frontier:
        by_schema.setdefault(frozenset(row[1]), []).append(row)
    for schema, rows in by_schema.items():
        j = min(range(len(tps)), key=lambda x: _freedom(tps[x], schema))
        tp = tps[j]
        found = sources[j].match_many([probe(tp, b) for _, b, _ in rows])
        nxt = [(i, e, k) for (i, b, k), quads in zip(rows, found) for q in quads
               if (e := extend(tp, q, b)) is not None]
        if nxt:
            _join(tps[:j] + tps[j + 1:], sources[:j] + sources[j + 1:], nxt, out)


def _freedom(tp: A.TriplePattern, bound: frozenset) -> int:
    free = sum(1 for x in (tp.s, tp.p, tp.o) if A.is_var(x) and x not in bound)
    return free * 2 + (0 if tp.p is not None and not A.is_var(tp.p) else 1)

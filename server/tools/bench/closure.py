"""``podviews bench paths``: the maintained state of an arbitrary-length path
(``views.closure``, the algorithm of the ``Closure`` node) under single-edge
changes, over generated scale-free graphs of at least 100,000 edges:

- ``?x foaf:knows+ ?y`` over a social graph: communities whose sizes follow a
  power law, each grown by preferential attachment with edges in both
  directions (so strongly connected, with cycles), plus a few one-way
  bridges between communities;
- ``?c rdfs:subClassOf* ?d`` over a class hierarchy grown by preferential
  attachment (hubs), one superclass each, a second one for 5% of them.

Each change is measured against the same state (it is computed, checked and
not applied), by semi-naive insertion, Backward/Forward and DRed deletion,
and against pyoxigraph evaluating the query from scratch on the changed
graph (COUNT, so no result crosses into Python). Deletions are sampled in
three kinds: an edge inside a large community (alternative paths exist), a
bridge between communities or a tree edge of the hierarchy (its deletion
cuts what it connected), and any edge.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import pyoxigraph as ox

from views.closure import Reach, backward_forward, dred, insert

Pair = tuple[int, int]

KNOWS = "http://xmlns.com/foaf/0.1/knows"
SUBCLASS = "http://www.w3.org/2000/01/rdf-schema#subClassOf"
EX = "http://bench.example/n"


@dataclass
class PathsRow:
    query: str
    change: str
    samples: int
    bf_median_ms: float
    bf_p99_ms: float
    bf_no_detour_median_ms: float  # Algorithm 1 alone, without the detour check
    dred_median_ms: float
    dred_p99_ms: float
    oxigraph_median_ms: float
    oxigraph_p99_ms: float
    speedup_vs_oxigraph: float  # oxigraph median / ours (B/F for deletions) median
    pairs_changed_median: float
    equal: bool


def social(edges: int, rng: random.Random) -> tuple[list[Pair], list[Pair], list[Pair]]:
    """(edges, edges inside large communities, bridges)."""
    out: list[Pair] = []
    large: list[Pair] = []
    communities: list[range] = []
    n = 0
    while len(out) < edges - edges // 500:
        size = min(150, int(8 * rng.paretovariate(1.6)))
        members = range(n, n + size)
        n += size
        communities.append(members)
        inner = _attach(list(members), 2, rng)
        inner += [(b, a) for a, b in inner if rng.random() < 0.5]  # cycles both ways
        out += inner
        if size >= 100:
            large += inner
    bridges = []
    for _ in range(edges - len(out)):
        a, b = rng.sample(communities, 2)
        bridges.append((rng.choice(a), rng.choice(b)))
    return out + bridges, large, bridges


def hierarchy(classes: int, rng: random.Random) -> tuple[list[Pair], list[Pair]]:
    """(subclass edges, tree edges: a class's only superclass)."""
    parent_of: list[Pair] = []
    tree: list[Pair] = []
    weights = [0]  # preferential: a class is picked by its subclasses + 1
    for c in range(1, classes):
        sup = weights[rng.randrange(len(weights))]
        parent_of.append((c, sup))
        if rng.random() < 0.05 and c > 2:
            other = weights[rng.randrange(len(weights))]
            if other != sup:
                parent_of.append((c, other))
            else:
                tree.append((c, sup))
        else:
            tree.append((c, sup))
        weights += [sup, c]
    return parent_of, tree


def _attach(members: list[int], m: int, rng: random.Random) -> list[Pair]:
    """Preferential attachment (Barabási–Albert) inside ``members``, each
    new member linking to ``m`` earlier ones, the edge's direction random."""
    edges: list[Pair] = []
    pool = members[:1]
    for i, v in enumerate(members[1:], 1):
        targets = {pool[rng.randrange(len(pool))] for _ in range(min(m, i))}
        for t in targets:
            edges.append((v, t) if rng.random() < 0.5 else (t, v))
            pool += [v, t]
    return edges


def _ms(f: Callable[[], object]) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = f()
    return (time.perf_counter() - t0) * 1000, out


def _p99(xs: list[float]) -> float:
    return sorted(xs)[min(len(xs) - 1, int(len(xs) * 0.99))]


class _Oxigraph:
    def __init__(self, edges: list[Pair], predicate: str, query: str) -> None:
        self.p, self.query = ox.NamedNode(predicate), query
        self.store = ox.Store()
        self.store.bulk_extend(self._quad(e) for e in edges)

    def _quad(self, e: Pair) -> ox.Quad:
        return ox.Quad(ox.NamedNode(f"{EX}{e[0]}"), self.p, ox.NamedNode(f"{EX}{e[1]}"),
                       ox.DefaultGraph())

    def count(self) -> int:
        found = self.store.query(self.query)
        assert isinstance(found, ox.QuerySolutions)
        return int(next(iter(found))["n"].value)  # type: ignore[union-attr]

    def changed(self, e: Pair, sign: int) -> tuple[float, int]:
        """Milliseconds of the query from scratch with ``e`` inserted or
        deleted (then restored); the count it answers."""
        q = self._quad(e)
        (self.store.add if sign > 0 else self.store.remove)(q)
        try:
            return _ms(self.count)  # type: ignore[return-value]
        finally:
            (self.store.remove if sign > 0 else self.store.add)(q)


def _row(query: str, change: str, ours: list[float], plain: list[float], dred_ms: list[float],
         oxi: list[float], changed: list[int], equal: bool) -> PathsRow:
    ours_med = statistics.median(ours)
    ox_med = statistics.median(oxi) if oxi else float("nan")
    return PathsRow(
        query=query, change=change, samples=len(ours),
        bf_median_ms=round(ours_med, 3), bf_p99_ms=round(_p99(ours), 3),
        bf_no_detour_median_ms=round(statistics.median(plain), 3) if plain else float("nan"),
        dred_median_ms=round(statistics.median(dred_ms), 3) if dred_ms else float("nan"),
        dred_p99_ms=round(_p99(dred_ms), 3) if dred_ms else float("nan"),
        oxigraph_median_ms=round(ox_med, 1), oxigraph_p99_ms=round(_p99(oxi), 1) if oxi
        else float("nan"),
        speedup_vs_oxigraph=round(ox_med / ours_med, 1) if ours_med else float("inf"),
        pairs_changed_median=statistics.median(changed), equal=equal)


def _measure(name: str, edges: list[Pair], kinds: dict[str, list[Pair]], inserts: list[Pair],
             predicate: str, samples: int, ox_samples: int, zero: bool,
             rng: random.Random) -> list[PathsRow]:
    r = Reach()
    r.update(set(edges), set())
    total = sum(len(v) for v in r.t_out.values())
    nodes = len(set(r.e_out) | set(r.e_in))
    query = (f"SELECT (COUNT(*) AS ?n) {{ ?x <{predicate}>{'*' if zero else '+'} ?y }}")
    oxi = _Oxigraph(edges, predicate, query)
    base = total + (nodes if zero else 0)
    equal = oxi.count() == base
    rows = []
    picks = [e for e in rng.sample(inserts, min(samples, len(inserts))) if e[1] not in r.out(e[0])]
    ours, changed = [], []
    for e in picks:
        ms, added = _ms(lambda e=e: insert(r, set(), set(), {e}, r.is_source))  # type: ignore[misc]
        ours.append(ms)
        changed.append(len(added))  # type: ignore[arg-type]
    oxi_ms = []
    for e, n in zip(picks[:ox_samples], changed):
        ms, count = oxi.changed(e, 1)
        oxi_ms.append(ms)
        equal &= count == base + n + (0 if not zero or _known(r, e) else 1)
    rows.append(_row(name, f"insert ({nodes:,} nodes, {len(edges):,} edges, {total:,} pairs)",
                     ours, [], [], oxi_ms, changed, equal))
    measured = {}
    for kind, pool in kinds.items():
        picks = rng.sample(pool, min(samples, len(pool)))
        bf, plain, dr, changed = [], [], [], []
        ok = True
        for e in picks:
            ms_bf, gone = _ms(lambda e=e: backward_forward(r, {e}, r.is_source))  # type: ignore[misc]
            ms_plain, gone_plain = _ms(lambda e=e: backward_forward(  # type: ignore[misc]
                r, {e}, r.is_source, detours=False))
            ms_dr, gone_dred = _ms(lambda e=e: dred(r, {e}, r.is_source))  # type: ignore[misc]
            ok &= gone == gone_dred == gone_plain
            bf.append(ms_bf)
            plain.append(ms_plain)
            dr.append(ms_dr)
            changed.append(len(gone))  # type: ignore[arg-type]
        measured[kind] = (picks, bf, plain, dr, changed, ok)
    # pyoxigraph's time from scratch hardly depends on which edge changed:
    # measured on the first deletions of each kind, reported with every kind
    oxi_ms = []
    for picks, _, _, _, changed, _ in measured.values():
        for e, n in list(zip(picks, changed))[:max(1, ox_samples // len(kinds))]:
            ms, count = oxi.changed(e, -1)
            oxi_ms.append(ms)
            equal &= count == base - n - (_orphaned(r, e) if zero else 0)
    for kind, (_, bf, plain, dr, changed, ok) in measured.items():
        rows.append(_row(name, f"delete: {kind}", bf, plain, dr, oxi_ms, changed, ok and equal))
    return rows


def _cuts(edges: list[Pair], large: list[Pair]) -> list[Pair]:
    """Edges of large communities whose deletion disconnects some pair: the
    only edge into a member, or the only edge out of one."""
    ins: dict[int, int] = {}
    outs: dict[int, int] = {}
    for a, b in edges:
        outs[a] = outs.get(a, 0) + 1
        ins[b] = ins.get(b, 0) + 1
    return [(a, b) for a, b in large if ins[b] == 1 or outs[a] == 1]


def _known(r: Reach, e: Pair) -> bool:
    """Both ends of ``e`` already terms of the graph (a new term adds a
    zero-length pair)."""
    return all(x in r.e_out or x in r.e_in for x in e)


def _orphaned(r: Reach, e: Pair) -> int:
    """Terms that leave the graph with ``e`` (their zero-length pair goes)."""
    a, b = e
    gone = 0
    if len(r.e_out.get(a, ())) + len(r.e_in.get(a, ())) == 1:
        gone += 1
    if a != b and len(r.e_out.get(b, ())) + len(r.e_in.get(b, ())) == 1:
        gone += 1
    return gone


def run(edges: int = 100_000, samples: int = 200, ox_samples: int = 3,
        seed: int = 0) -> list[PathsRow]:
    rng = random.Random(seed)
    knows, large, bridges = social(edges, rng)
    members = sorted({x for e in large for x in e})
    inserts = [(rng.choice(members), rng.choice(members)) for _ in range(samples * 2)]  # two
    # large communities, mostly: a new acquaintance joining their reachable sets
    rows = _measure("?x foaf:knows+ ?y", knows, {
        "inside a large community": large, "cutting a large community": _cuts(knows, large),
        "a bridge": bridges, "any edge": knows},
        inserts, KNOWS, samples, ox_samples, False, rng)
    sub, tree = hierarchy(edges, rng)
    classes = edges
    inserts = [(rng.randrange(1, classes), rng.randrange(classes)) for _ in range(samples * 2)]
    inserts = [(a, b) for a, b in inserts if b < a]  # stays acyclic: superclasses are older
    rows += _measure("?c rdfs:subClassOf* ?d", sub, {
        "a tree edge": tree, "any edge": sub}, inserts, SUBCLASS, samples, ox_samples, True,
        rng)
    return rows

"""The reference evaluator: a small, obviously-correct from-scratch evaluation
of a pattern to a K-set (counting paper §3.2, SPARQL 1.1 §18.5). It is the
oracle the incremental engine is tested against, so it favours plain nested
loops over speed, and it shares no code with the engine's maintenance rules
(it reads only the term and expression semantics, ``views.expr`` and
``views.aggregates.compute``, and the data through ``QuadStore.match``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from rdflib.term import Identifier, URIRef

from views import algebra as A
from views.aggregates import compute
from views.dataset import ANY_NAMED, QuadStore
from views.expr import truth, try_evaluate
from views.kset import KSet, add_into, compatible, minus_blocks, mu
from views.reference_paths import PathEval


def evaluate(p: A.Pattern, ds: QuadStore, bind: Mapping[str, Identifier] | None = None) -> KSet:
    """The K-set of ``p`` over the dataset ``ds``. ``bind`` pre-binds variables:
    the substitution of EXISTS (SPARQL 1.1 §18.6); every result is compatible
    with it."""
    return _Evaluator(ds).run(p, dict(bind or {}))


class _Evaluator:
    def __init__(self, ds: QuadStore) -> None:
        self.ds = ds
        self.active: Identifier | None = None

    def exists(self, pattern: A.Pattern, m: Mapping[str, Identifier]) -> bool:
        return bool(self.run(pattern, dict(m)))

    def run(self, p: A.Pattern, bind: dict[str, Identifier]) -> KSet:
        match p:
            case A.BGP():
                return self._bgp(p, bind)
            case A.Graph():
                return self._graph(p, bind)
            case A.GraphNames():
                return self._graph_names(p, bind)
            case A.Join():
                return join(self.run(p.left, bind), self.run(p.right, bind))
            case A.Union_():
                return add_into(self.run(p.left, bind), self.run(p.right, bind).items())
            case A.Filter():
                return {m: k for m, k in self.run(p.p, bind).items()
                        if truth(p.expr, {**bind, **dict(m)}, self.exists)}
            case A.Extend():
                return self._extend(p, bind)
            case A.Values():
                return add_into({}, [(mu(dict(r)), 1) for r in p.rows if compatible(dict(r), bind)])
            case A.LeftJoin():
                return self._left_join(p, bind)
            case A.Minus():
                return self._minus(p, bind)
            case A.Project():
                inner = self.run(p.p, {k: v for k, v in bind.items() if k in p.vars})
                out: KSet = {}
                for m, k in inner.items():
                    add_into(out, [(mu({v: t for v, t in m if v in p.vars}), k)])
                return out
            case A.Distinct():
                return {m: 1 for m, k in self.run(p.p, bind).items() if k > 0}
            case A.Group():
                return self._group(p, bind)
            case A.PathPattern():
                return self._path(p, bind)
        raise TypeError(p)

    def _path(self, p: A.PathPattern, bind: dict[str, Identifier]) -> KSet:
        """SPARQL 1.1 §18.4, in the active graph (``views.reference_paths``)."""
        g = p.g if p.g is not None else self.active
        if g is not None and A.is_var(g):
            raise TypeError("a path pattern with a GRAPH variable: evaluate the parsed query")

        def triples(s: Identifier | None, pr: Identifier | None, o: Identifier | None
                    ) -> Iterator[tuple[Identifier, Identifier, Identifier]]:
            return ((q[1], q[2], q[3]) for q in self.ds.match(g, s, pr, o))

        found = PathEval(triples).eval(p.s, p.path, p.o)
        return {m: k for m, k in found.items() if compatible(dict(m), bind)}

    def _graph_names(self, p: A.GraphNames, bind: dict) -> KSet:
        if not A.is_var(p.term):
            return {mu({}): 1} if self.ds.graph_size(p.term) else {}  # type: ignore[arg-type]
        return {mu({p.term: g}): 1 for g in self.ds.graph_names()  # type: ignore[dict-item]
                if compatible({p.term: g}, bind)}  # type: ignore[dict-item]

    def _graph(self, p: A.Graph, bind: dict) -> KSet:
        # SPARQL 1.1 §18.5: eval(D(G), Graph(var, P)) = ∪ over named g of
        # Join(eval(D(g), P), Ω(?var → g))
        term = p.term
        if A.is_var(term):
            names = [bind[term]] if term in bind else self.ds.graph_names()  # type: ignore[index]
        else:
            names = [term]
        out: KSet = {}
        saved = self.active
        try:
            for g in names:
                if not self.ds.graph_size(g):
                    continue
                self.active = g
                inner = self.run(p.p, bind)
                if A.is_var(term):
                    inner = join(inner, {mu({term: g}): 1})  # type: ignore[dict-item]
                add_into(out, inner.items())
        finally:
            self.active = saved
        return out

    def _bgp(self, p: A.BGP, bind: dict[str, Identifier]) -> KSet:
        """Every way to match the triple patterns one after another (§18.3)."""
        partial: list[dict[str, Identifier]] = [
            {k: v for k, v in bind.items() if k in A.triple_vars(p.triples)}]
        for tp in p.triples:
            g = tp.g if tp.g is not None else self.active
            partial = [ext for sol in partial for quad in self.ds.match(*_lookup(g, tp, sol))
                       if (ext := _extend(g, tp, quad, sol)) is not None]
        out: KSet = {}
        for sol in partial:
            add_into(out, [(mu(sol), 1)])
        return out

    def _extend(self, p: A.Extend, bind: dict) -> KSet:
        out: KSet = {}
        for m, k in self.run(p.p, bind).items():
            d = dict(m)
            if p.var in d:
                add_into(out, [(m, k)])
                continue
            v = try_evaluate(p.expr, {**bind, **d}, self.exists)
            if v is not None:
                d[p.var] = v
            add_into(out, [(mu(d), k)])
        return out

    def _left_join(self, p: A.LeftJoin, bind: dict) -> KSet:
        # SPARQL 1.1 §18.5 LeftJoin = Filter(expr, Join) ∪ Diff(expr)
        left, right = self.run(p.left, bind), self.run(p.right, bind)
        out: KSet = {}
        for m1, k1 in left.items():
            d1, matched = dict(m1), False
            for m2, k2 in right.items():
                d2 = dict(m2)
                if not compatible(d1, d2):
                    continue
                merged = {**d1, **d2}
                if p.expr is None or truth(p.expr, {**bind, **merged}, self.exists):
                    matched = True
                    add_into(out, [(mu(merged), k1 * k2)])
            if not matched:
                add_into(out, [(m1, k1)])
        return out

    def _minus(self, p: A.Minus, bind: dict) -> KSet:
        left, right = self.run(p.left, bind), self.run(p.right, bind)
        rights = [dict(m) for m in right]
        return {m: k for m, k in left.items()
                if not any(minus_blocks(dict(m), r, p.graph_var) for r in rights)}

    def _group(self, p: A.Group, bind: dict[str, Identifier]) -> KSet:
        """SPARQL 1.1 §18.5 Group and Aggregation: one solution per group,
        binding its key variables and the aggregates' values."""
        groups: dict[tuple, list[tuple[dict, int]]] = {}
        for m, k in self.run(p.p, {}).items():
            d = dict(m)
            groups.setdefault(tuple(try_evaluate(e, d) for e in p.keys), []).append((d, k))
        if not groups and not p.keys:
            groups[()] = []
        out: KSet = {}
        for key, rows in groups.items():
            row = {e.name: v for e, v in zip(p.keys, key) if isinstance(e, A.Var) and v is not None}
            for agg in p.aggregates:
                value = compute(agg, rows, self.exists)
                if value is not None:
                    row[agg.var] = value
            if compatible(row, bind):
                add_into(out, [(mu(row), 1)])
        return out


def join(a: KSet, b: KSet) -> KSet:
    """K-set Join (paper §3.2): products of compatible pairs, summed."""
    out: KSet = {}
    for m1, k1 in a.items():
        d1 = dict(m1)
        for m2, k2 in b.items():
            d2 = dict(m2)
            if compatible(d1, d2):
                add_into(out, [(mu({**d1, **d2}), k1 * k2)])
    return out


def _lookup(g: object, tp: A.TriplePattern, sol: Mapping[str, Identifier]) -> tuple:
    """The (g, s, p, o) lookup of ``tp`` under ``sol`` in graph slot ``g``."""
    def value(x: object) -> object:
        return sol.get(x) if isinstance(x, str) and A.is_var(x) else x  # type: ignore[arg-type]

    graph = value(g)
    if g is not None and graph is None:
        graph = ANY_NAMED
    elif graph is not None and graph is not ANY_NAMED and not isinstance(graph, URIRef):
        graph = URIRef("urn:podviews:reference:no-graph")  # a literal names no graph
    return (graph, value(tp.s), value(tp.p), value(tp.o))


def _extend(g: object, tp: A.TriplePattern, quad: tuple,
            sol: dict[str, Identifier]) -> dict[str, Identifier] | None:
    """``sol`` extended so that ``tp`` (in graph slot ``g``) matches ``quad``."""
    out = dict(sol)
    for slot, term in zip((g, tp.s, tp.p, tp.o), quad):
        if isinstance(slot, str) and A.is_var(slot):
            if out.setdefault(slot, term) != term:
                return None
        elif slot is not None and slot != term:
            return None
    return out

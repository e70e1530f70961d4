"""The reference evaluator: a small, obviously-correct from-scratch evaluation
of a pattern to a K-set (counting paper §3.2, SPARQL 1.1 §18.5). It is the
oracle the incremental engine is tested against, so it favours plain nested
loops over speed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from rdflib.term import Identifier

from views import algebra as A
from views.aggregates import compute
from views.bgp import join_patterns
from views.dataset import QuadStore
from views.expr import truth, try_evaluate
from views.kset import KSet, add_into, compatible, mu


def evaluate(p: A.Pattern, ds: QuadStore, bind: Mapping[str, Identifier] | None = None) -> KSet:
    """The K-set of ``p`` over the dataset ``ds``. ``bind`` pre-binds variables:
    the substitution of EXISTS (SPARQL 1.1 §18.6); every result is compatible
    with it."""
    return _Evaluator(ds).run(p, dict(bind or {}))


def exists_fn(ds: QuadStore):  # type: ignore[no-untyped-def]
    """The EXISTS callback for ``views.expr`` over ``ds``."""
    return _Evaluator(ds).exists


class _Evaluator:
    def __init__(self, ds: QuadStore) -> None:
        self.ds = ds
        self.active: Identifier | None = None
        self.exists = lambda pattern, m: bool(self.run(pattern, dict(m)))

    def run(self, p: A.Pattern, bind: dict) -> KSet:
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
                return project(self.run(p.p, {k: v for k, v in bind.items() if k in p.vars}),
                               p.vars)
            case A.Distinct():
                return {m: 1 for m, k in self.run(p.p, bind).items() if k > 0}
            case A.Group():
                return self._group(p, bind)
        raise TypeError(p)

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

    def _bgp(self, p: A.BGP, bind: dict) -> KSet:
        tps = [tp if tp.g is not None or self.active is None else replace(tp, g=self.active)
               for tp in p.triples]
        names = A.triple_vars(tps)
        start = {k: v for k, v in bind.items() if k in names}
        out: KSet = {}
        for m, k in join_patterns(tps, [self.ds] * len(tps), [(start, 1)])[0]:
            add_into(out, [(mu(m), k)])
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

    def _group(self, p: A.Group, bind: dict) -> KSet:
        groups: dict[tuple, list[tuple[dict, int]]] = {}
        for m, k in self.run(p.p, {}).items():
            d = dict(m)
            groups.setdefault(group_key(p, d), []).append((d, k))
        if not groups and not p.keys:
            groups[()] = []
        out: KSet = {}
        for key, rows in groups.items():
            row = group_row(p, key, rows, self.exists)
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


def project(r: KSet, names: tuple[str, ...]) -> KSet:
    """K-set Project (paper §3.2): annotations of equal projections summed."""
    keep = set(names)
    out: KSet = {}
    for m, k in r.items():
        add_into(out, [(frozenset(x for x in m if x[0] in keep), k)])
    return out


def minus_blocks(left: dict, right: dict, graph_var: str | None = None) -> bool:
    """μ2 removes μ1 in MINUS: compatible and sharing a variable (§18.5); a
    pushed-down GRAPH variable does not count as shared."""
    return bool(left.keys() & right.keys() - {graph_var}) and compatible(left, right)


def group_key(p: A.Group, d: dict) -> tuple:  # type: ignore[type-arg]
    return tuple(try_evaluate(e, d) for e in p.keys)


def group_row(p: A.Group, key: tuple, rows: list[tuple[dict, int]], exists) -> dict:  # type: ignore[no-untyped-def]
    """The one solution of a group: its key variables and aggregate values."""
    row: dict = {}
    for e, v in zip(p.keys, key):
        if isinstance(e, A.Var) and v is not None:
            row[e.name] = v
    for agg in p.aggregates:
        v = compute(agg, rows, exists)
        if v is not None:
            row[agg.var] = v
    return row



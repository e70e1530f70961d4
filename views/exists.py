"""EXISTS { P } decided for a batch of mappings (SPARQL 1.1 §18.6): the
answer for μ is whether P evaluated under μ's bindings has a solution.

Where P is a BGP, it is read as a ``VirtualBGP`` probed with all the
mappings' bindings at once (one lookup per pattern for the whole batch, where
the data is a database). Any other P is evaluated under each mapping's
bindings (``views.prebind``) with the engine's own rules, run fresh; the
answers are kept for the batch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rdflib.term import Identifier

from views import algebra as A
from views.dataset import QuadStore
from views.kset import Mu, mu


class BatchExists:
    """The EXISTS callback of ``views.expr`` for the mappings ``ms`` of one
    batch over ``ds`` (any other mapping is answered too, one at a time)."""

    def __init__(self, ds: QuadStore, e: A.Expr, ms: Iterable[Mu]) -> None:
        from views.interpret import VirtualBGP

        self.ds = ds
        self.bgps: dict[int, VirtualBGP] = {}  # by id(): the expression's own patterns
        self.known: dict[tuple[int, Mu], bool] = {}
        probes = [dict(m) for m in ms]
        for x in A.walk_expr(e):
            if isinstance(x, A.Exists) and isinstance(x.pattern, A.BGP) and \
                    id(x.pattern) not in self.bgps:
                bgp = self.bgps[id(x.pattern)] = VirtualBGP(x.pattern.triples, ds)
                self.known.update(((id(x.pattern), bgp.start(p)), bool(rows))
                                  for p, rows in zip(probes, bgp.compatible_many(probes)))

    def __call__(self, pattern: A.Pattern, m: Mapping[str, Identifier]) -> bool:
        bgp = self.bgps.get(id(pattern))
        key = (id(pattern), bgp.start(m) if bgp is not None else mu(m))
        if key not in self.known:
            self.known[key] = self._evaluate(pattern, m)
        return self.known[key]

    def _evaluate(self, pattern: A.Pattern, m: Mapping[str, Identifier]) -> bool:
        from views.interpret import evaluate
        from views.plan import plan_of
        from views.prebind import prebind

        return bool(evaluate(plan_of(prebind(pattern, m)), self.ds))


def exists_patterns_of(e: A.Expr) -> list[A.TriplePattern] | None:
    """The triple patterns of the EXISTS in ``e``: ΔG can change a mapping's
    EXISTS value only by matching one of them under it. None when a
    sub-select scopes variables away (then every mapping is re-decided)."""
    tps: list[A.TriplePattern] = []
    for x in A.walk_expr(e):
        if isinstance(x, A.Exists):
            if _has_scope(x.pattern):
                return None
            tps.extend(A.triple_patterns(x.pattern))
    return tps


def _has_scope(p: A.Pattern) -> bool:
    return isinstance(p, (A.Project, A.Group)) or any(_has_scope(c) for c in A.children(p))

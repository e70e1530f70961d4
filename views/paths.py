"""Property paths normalised (SPARQL 1.1 §9, §18.4): every ``PathPattern``
becomes patterns the engine already maintains, plus ``Closure`` for ``+``.

- ``p`` is a triple pattern; ``^p`` swaps the ends; ``p1/p2`` joins through a
  fresh hidden variable and ``p1|p2`` is a union, both keeping duplicates
  (bag semantics, as the spec's translation to BGPs and UNION does).
- ``!(p1|…|^q1|…)`` is a triple pattern with a fresh predicate variable and
  a ``NOT IN`` filter on it (reversed for the ``^`` members), projected to
  the ends and made a set (§18.4 defines NPS by ∃ p ∉ S: two predicates
  between the same ends give one solution); a union when both kinds are
  present (the translation's alternative).
- ``p+`` is a ``Closure`` over the edge relation of ``p``; ``p*`` and ``p?``
  are the zero-length pairs united with ``p+`` (resp. ``p``), projected to
  the ends and made a set (§18.4: ALP and ZeroOrOnePath are sets).
- Zero-length pairs (§18.4 ALP, eval of a zero-length path): with both ends
  variables, every subject and object of the active graph, a set that
  changes with the data (support-counted by ``Distinct``); with a constant
  end, that constant, in the graph or not.

Fresh variables start with ``_:`` so they are projected away as blank nodes
are; they are numbered in walk order, so a query always normalises to the
same plan (node ids are content-derived).

>>> from views.parse import parse
>>> p = expand_paths(parse("SELECT * { ?s <http://e/p>/<http://e/q> ?o }").pattern)
>>> type(p.p).__name__, p.p.vars
('Project', ('s', 'o'))
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator

from views import algebra as A


def expand_paths(p: A.Pattern) -> A.Pattern:
    """``p`` with every property path rewritten (EXISTS included)."""
    fresh = (f"_:%path{i}" for i in itertools.count(1))  # % is in no blank node label
    return _rewrite(p, fresh)  # type: ignore[return-value]


def _rewrite(node: object, fresh: Iterator[str]) -> object:
    if isinstance(node, A.PathPattern):
        return _Expander(fresh, node.g).pattern(node.s, node.path, node.o)
    if isinstance(node, tuple):
        return tuple(_rewrite(x, fresh) for x in node)
    if dataclasses.is_dataclass(node) and not isinstance(node, type) and not isinstance(
            node, A.TriplePattern):
        changes = {f.name: _rewrite(getattr(node, f.name), fresh)
                   for f in dataclasses.fields(node)}
        return dataclasses.replace(node, **changes)  # type: ignore[type-var]
    return node


class _Expander:
    """The rewriting of one path pattern in graph ``g`` (None: default)."""

    def __init__(self, fresh: Iterator[str], g: A.Slot | None) -> None:
        self.fresh, self.g = fresh, g

    def pattern(self, s: A.Slot, path: A.PathExpr, o: A.Slot) -> A.Pattern:
        """The solutions of ``s path o`` over the ends' variables (and the
        graph variable) only: fresh variables projected away."""
        inner = self.expr(s, path, o)
        keep = self.ends(s, o)
        if set(_visible(inner)) <= set(keep):
            return inner
        return A.Project(p=inner, vars=keep)

    def ends(self, *slots: A.Slot) -> tuple[str, ...]:
        out = [x for x in (*slots, self.g) if x is not None and A.is_var(x)]
        return tuple(dict.fromkeys(out))  # type: ignore[arg-type]

    def triple(self, s: A.Slot, p: A.Slot, o: A.Slot) -> A.BGP:
        return A.BGP(triples=(A.TriplePattern(s=s, p=p, o=o, g=self.g),))

    def expr(self, s: A.Slot, path: A.PathExpr, o: A.Slot) -> A.Pattern:
        match path:
            case A.Link():
                return self.triple(s, path.iri, o)
            case A.Inv():
                return self.expr(o, path.path, s)
            case A.Seq():
                mid = next(self.fresh)
                return A.Join(left=self.expr(s, path.left, mid),
                              right=self.expr(mid, path.right, o))
            case A.Alt():
                return A.Union_(left=self.expr(s, path.left, o), right=self.expr(s, path.right, o))
            case A.NegSet():
                return self.negated(s, path, o)
            case A.Mod() if path.mod == "+" and not _nullable(path.path):
                return self.closure(s, path.path, o)
            case A.Mod():  # p* and p?; p+ of a p matching zero steps is p*
                more = self.closure(s, path.path, o) if path.mod != "?" else \
                    self.pattern(s, path.path, o)
                keep = self.ends(s, o)
                return A.Distinct(p=A.Project(p=A.Union_(left=self.zero(s, o), right=more),
                                              vars=keep))
        raise TypeError(path)

    def negated(self, s: A.Slot, path: A.NegSet, o: A.Slot) -> A.Pattern:
        """§18.4: each direction's NPS is a set — a pair of ends once however
        many predicates outside the set link them (∃ p ∉ S) — and the two
        directions of ``!(p|^q)`` are an alternative, a union."""
        parts: list[A.Pattern] = []
        for names, a, b in ((path.fwd, s, o), (path.inv, o, s)):
            if names or not (path.fwd or path.inv):
                v = next(self.fresh)
                linked = A.Filter(expr=A.Call(fn="NOT IN", args=(
                    A.Var(name=v), *(A.Const(term=t) for t in names))), p=self.triple(a, v, b))
                parts.append(A.Distinct(p=A.Project(p=linked, vars=self.ends(s, o))))
        if len(parts) == 1:
            return parts[0]
        return A.Union_(left=parts[0], right=parts[1])

    def closure(self, s: A.Slot, path: A.PathExpr, o: A.Slot) -> A.Pattern:
        """``s path+ o``: one ``Closure`` node (from a constant subject, one
        source; to a constant object, one target); an end repeated, or both
        ends constant, is a filter over a fresh object variable."""
        a, b = next(self.fresh), next(self.fresh)
        edges = A.Project(p=self.expr(a, path, b), vars=self.ends(a, b))
        graph = self.g if self.g is not None and A.is_var(self.g) else None
        if A.is_var(o) and o != s or A.is_var(s) and not A.is_var(o):
            return A.Closure(p=edges, src=a, dst=b, subject=s, object=o,
                             graph=graph)  # type: ignore[arg-type]
        end = next(self.fresh)
        node = A.Closure(p=edges, src=a, dst=b, subject=s, object=end, graph=graph)
        other = A.Var(name=o) if A.is_var(o) else A.Const(term=o)  # type: ignore[arg-type]
        same = A.Filter(expr=A.Call(fn="SAMETERM", args=(A.Var(name=end), other)), p=node)
        return A.Project(p=same, vars=self.ends(s, o))

    def zero(self, s: A.Slot, o: A.Slot) -> A.Pattern:
        """The zero-length pairs (§18.4 ALP): each term of the graph with
        itself, or a constant end with itself."""
        if A.is_var(s) and A.is_var(o):
            x = s
            nodes = A.Union_(left=self.triple(x, next(self.fresh), next(self.fresh)),
                             right=self.triple(next(self.fresh), next(self.fresh), x))
            out: A.Pattern = A.Project(p=nodes, vars=self.ends(x))
            if o != s:
                out = A.Extend(p=out, var=o, expr=A.Var(name=x))  # type: ignore[arg-type]
            return out
        if A.is_var(s) or A.is_var(o):
            var, term = (s, o) if A.is_var(s) else (o, s)
            row = A.Values(rows=(((var, term),),))  # type: ignore[arg-type]
        else:
            row = A.Values(rows=((),) if s == o else ())
        if self.g is not None and A.is_var(self.g):
            return A.Join(left=A.GraphNames(term=self.g), right=row)
        return row


def _nullable(path: A.PathExpr) -> bool:
    """Whether ``path`` matches the zero-length path (every term to itself,
    a constant end included)."""
    match path:
        case A.Mod():
            return path.mod != "+" or _nullable(path.path)
        case A.Inv():
            return _nullable(path.path)
        case A.Seq():
            return _nullable(path.left) and _nullable(path.right)
        case A.Alt():
            return _nullable(path.left) or _nullable(path.right)
    return False


def _visible(p: A.Pattern) -> set[str]:
    from views.normalize import pattern_vars

    return pattern_vars(p)

"""Property paths for the reference evaluator, straight from SPARQL 1.1
§18.4 (eval of each path form, and the ALP procedure for ``*`` and ``+``),
by naive search over the graph's triples. It shares nothing with the
engine's normalisation (``views.paths``) or its maintained closure
(``views.closure``): it is the oracle they are tested against.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from rdflib.term import Identifier

from views import algebra as A
from views.kset import KSet, add_into, mu

Triples = Callable[[Identifier | None, Identifier | None, Identifier | None],
                   Iterable[tuple[Identifier, Identifier, Identifier]]]


class PathEval:
    """``eval(s, path, o)`` over one graph, read through ``triples(s, p, o)``
    (None: any)."""

    def __init__(self, triples: Triples) -> None:
        self.triples = triples
        self.n = 0

    def eval(self, s: A.Slot, path: A.PathExpr, o: A.Slot) -> KSet:
        """The solutions (over the variables among ``s`` and ``o``)."""
        match path:
            case A.Link():
                return self._link(s, path.iri, o)
            case A.Inv():
                return self.eval(o, path.path, s)
            case A.Seq():
                self.n += 1
                v = f"_:%ref{self.n}"
                out: KSet = {}
                for m1, k1 in self.eval(s, path.left, v).items():
                    d1 = dict(m1)
                    mid = d1.pop(v)
                    for m2, k2 in self.eval(mid, path.right, _sub(o, d1)).items():
                        add_into(out, [(mu({**d1, **dict(m2)}), k1 * k2)])
                return out
            case A.Alt():
                return add_into(self.eval(s, path.left, o), self.eval(s, path.right, o).items())
            case A.NegSet():
                return self._negated(s, path, o)
            case A.Mod():
                return self._mod(s, path, o)
        raise TypeError(path)

    def _link(self, s: A.Slot, p: Identifier, o: A.Slot) -> KSet:
        return self._matches(s, p, o, ())

    def _negated(self, s: A.Slot, path: A.NegSet, o: A.Slot) -> KSet:
        """§18.4 NPS: the ends of a triple whose predicate is not excluded
        (forward), or of a reversed one (inverse members) — each direction a
        set, { μ | ∃ triple(μ(x), p, μ(y)), p ∉ S }, the two united."""
        out: KSet = {}
        for excluded, a, b in ((path.fwd, s, o), (path.inv, o, s)):
            if excluded:
                add_into(out, ((m, 1) for m in self._matches(a, None, b, excluded)))
        return out

    def _matches(self, s: A.Slot, p: Identifier | None, o: A.Slot,
                 excluded: tuple[Identifier, ...]) -> KSet:
        """One solution per triple ``s p o`` (``p`` None: any predicate
        outside ``excluded``)."""
        out: KSet = {}
        for ts, tp, to in self.triples(_const(s), p, _const(o)):
            row = _bind({}, s, ts) if tp not in excluded else None
            row = _bind(row, o, to) if row is not None else None
            if row is not None:
                add_into(out, [(mu(row), 1)])
        return out

    def _mod(self, s: A.Slot, path: A.Mod, o: A.Slot) -> KSet:
        """ZeroOrOnePath, ZeroOrMorePath, OneOrMorePath: sets (§18.4); a
        variable subject with a constant object is evaluated from the object
        over the inverse path."""
        if A.is_var(s) and not A.is_var(o):
            return self._mod(o, A.Mod(path=A.Inv(path=path.path), mod=path.mod), s)
        if path.mod == "?":
            pairs = {(x, x) for x in self._starts(s)}
            pairs |= {(x, y) for x in self._starts(s) for y in self._step(x, path.path)}
        else:
            pairs = {(x, y) for x in self._starts(s) for y in self._alp(x, path)}
        out: KSet = {}
        for x, y in pairs:
            row = _bind({}, s, x)
            row = _bind(row, o, y) if row is not None else None
            if row is not None:
                out[mu(row)] = 1
        return out

    def _starts(self, s: A.Slot) -> list[Identifier]:
        """A constant subject, or every term of the graph (subjects and
        objects): the spec's evaluation for a variable subject."""
        if not A.is_var(s):
            return [s]  # type: ignore[list-item]
        return list(dict.fromkeys(x for t in self.triples(None, None, None) for x in (t[0], t[2])))

    def _step(self, x: Identifier, path: A.PathExpr) -> set[Identifier]:
        self.n += 1
        v = f"_:%ref{self.n}"
        return {dict(m)[v] for m in self.eval(x, path, v)}

    def _alp(self, x: Identifier, path: A.Mod) -> set[Identifier]:
        """ALP(x, path) for ``*`` (x included) or the union of ALP(n) over
        one step n for ``+`` (§18.4), with an explicit stack."""
        visited: set[Identifier] = set()
        todo = [x] if path.mod == "*" else list(self._step(x, path.path))
        while todo:
            n = todo.pop()
            if n in visited:
                continue
            visited.add(n)
            todo.extend(self._step(n, path.path))
        return visited


def _const(x: A.Slot) -> Identifier | None:
    return None if A.is_var(x) else x  # type: ignore[return-value]


def _sub(x: A.Slot, row: dict[str, Identifier]) -> A.Slot:
    return row.get(x, x) if A.is_var(x) else x  # type: ignore[call-overload,no-any-return]


def _bind(row: dict[str, Identifier], slot: A.Slot, term: Identifier
          ) -> dict[str, Identifier] | None:
    if not A.is_var(slot):
        return row if slot == term else None
    if row.get(slot, term) != term:  # type: ignore[call-overload]
        return None
    return {**row, slot: term}  # type: ignore[dict-item]

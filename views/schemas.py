"""Schema inference: the possible variable sets of a pattern's solutions
(counting paper §4.5.3). K-sets are split into one K-relation per schema."""

from __future__ import annotations

from views import algebra as A
from views.limits import QueryTooLarge

Schemas = frozenset  # frozenset[frozenset[str]]
# Schemas multiply (OPTIONAL, BIND, a group's aggregates: 2^n for n of them);
# every count is checked before the sets are built: a 16-aggregate mutant
# once took 144 s to compile, stalling its request (session 14)
MAX_SCHEMAS = 4_096


def _within(count: int) -> None:
    if count > MAX_SCHEMAS:
        raise QueryTooLarge(f"its solutions may bind more than {MAX_SCHEMAS:,} different sets "
                            "of variables (OPTIONALs, BINDs and aggregates multiply them); "
                            f"the limit is {MAX_SCHEMAS:,}")


def schemas(p: A.Pattern) -> Schemas:
    """Every variable set a solution of ``p`` may have.

    >>> from views.parse import parse
    >>> q = parse("SELECT * { ?s <http://e/p> ?o OPTIONAL { ?o <http://e/q> ?z } }")
    >>> sorted(sorted(s) for s in schemas(q.pattern))
    [['o', 's'], ['o', 's', 'z']]
    """
    match p:
        case A.BGP():
            return frozenset({frozenset(v for t in p.triples for v in (t.g, t.s, t.p, t.o)
                                        if v is not None and A.is_var(v))})
        case A.Join():
            left, right = schemas(p.left), schemas(p.right)
            _within(len(left) * len(right))
            return frozenset(a | b for a in left for b in right)
        case A.LeftJoin():
            left, right = schemas(p.left), schemas(p.right)
            _within(len(left) * (len(right) + 1))
            return left | frozenset(a | b for a in left for b in right)
        case A.Union_():
            left, right = schemas(p.left), schemas(p.right)
            _within(len(left) + len(right))
            return left | right
        case A.Minus() | A.Filter() | A.Distinct():
            return schemas(p.left if isinstance(p, A.Minus) else p.p)
        case A.Extend():
            # the variable is unbound where the expression errs
            inner = schemas(p.p)
            _within(2 * len(inner))
            return inner | frozenset(s | {p.var} for s in inner)
        case A.Values():
            return frozenset(frozenset(v for v, _ in row) for row in p.rows) or frozenset(
                {frozenset()})
        case A.Project():
            return frozenset(s & set(p.vars) for s in schemas(p.p))
        case A.Group():
            keys = {e.name for e in p.keys if isinstance(e, A.Var)}
            aggs = {a.var for a in p.aggregates}
            _within(2 ** min(len(keys) + len(aggs), 64))
            return frozenset(frozenset(k) | frozenset(a) for k in subsets(keys)
                             for a in subsets(aggs))
        case A.GraphNames():
            return frozenset({frozenset({p.term} if A.is_var(p.term) else set())})  # type: ignore[arg-type]
        case A.Closure():
            return frozenset({frozenset(x for x in (p.subject, p.object, p.graph)
                                        if x is not None and A.is_var(x))})  # type: ignore[misc]
        case A.Graph():
            inner = schemas(p.p)
            return inner if not A.is_var(p.term) else frozenset(
                s | {p.term} for s in inner)  # type: ignore[operator]
    raise TypeError(p)


def subsets(names: set[str] | frozenset[str]) -> list[frozenset[str]]:
    """Every subset of ``names`` (the schemas of a group's optional keys)."""
    out: list[frozenset[str]] = [frozenset()]
    for n in sorted(names):
        out += [s | {n} for s in out]
    return out

"""Schema inference: the possible variable sets of a pattern's solutions
(counting paper §4.5.3). K-sets are split into one K-relation per schema."""

from __future__ import annotations

from views import algebra as A
from views.limits import QueryTooLarge

Schemas = frozenset  # frozenset[frozenset[str]]
# Schemas multiply (OPTIONAL, BIND, a group's aggregates: 2^n for n of them
# that may each be unbound); every count is checked before the sets are
# built: a 16-aggregate mutant once took 144 s to compile, stalling its
# request (session 14). An expression or aggregate whose variable is bound
# in every solution, or in none, adds no schema (design note 131). The
# bound caps the K-relation tables the interpreter may make for a node.
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
            # the variable is unbound where the expression errs: in the
            # schemas where it may err, both; where it cannot, bound; where
            # it always does, unbound
            inner = schemas(p.p)
            _within(2 * len(inner))
            return frozenset(out for s in inner for out in _extended(s, p.var, p.expr))
        case A.Values():
            return frozenset(frozenset(v for v, _ in row) for row in p.rows) or frozenset(
                {frozenset()})
        case A.Project():
            return frozenset(s & set(p.vars) for s in schemas(p.p))
        case A.Group():
            inner = schemas(p.p)
            certain = frozenset.intersection(*inner) if inner else frozenset()
            bindable = frozenset().union(*inner)
            # each variable bound in every group's solution (True), in none
            # (False), or depending on the values (None)
            bound: dict[str, bool | None] = {
                e.name: True if e.name in certain else None if e.name in bindable else False
                for e in p.keys if isinstance(e, A.Var)}
            bound |= {a.var: _aggregate(a, bool(p.keys), certain, bindable)
                      for a in p.aggregates}
            maybe = {v for v, b in bound.items() if b is None}
            _within(2 ** min(len(maybe), 64))
            always = frozenset(v for v, b in bound.items() if b)
            return frozenset(always | m for m in subsets(maybe))
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


def _extended(s: frozenset[str], var: str, expr: A.Expr) -> list[frozenset[str]]:
    """The schemas of a solution of schema ``s`` extended with ``var``."""
    errs = _errs(expr, s)
    return [s] if errs is True else [s | {var}] if errs is False else [s, s | {var}]


def _errs(e: A.Expr, s: frozenset[str]) -> bool | None:
    """Whether ``e`` errs on a solution of schema ``s``: always (True),
    never (False) or it depends on the values (None). Only what is certain
    from the schema alone: a constant, a variable, BOUND, EXISTS and a
    COALESCE with an argument that cannot err."""
    match e:
        case A.Const() | A.Exists():
            return False
        case A.Var():
            return e.name not in s
        case A.Call(fn="BOUND"):
            return not (len(e.args) == 1 and isinstance(e.args[0], A.Var))
        case A.Call(fn="COALESCE"):
            found = [_errs(a, s) for a in e.args]
            return False if False in found else True if all(found) else None
    return None


def _aggregate(a: A.Aggregate, grouped: bool, certain: frozenset[str],
               bindable: frozenset[str]) -> bool | None:
    """Whether the aggregate's variable is bound in every group's solution
    (True), in none (False), or it depends on the values (None): COUNT
    always is; SAMPLE, MIN and MAX of a variable are when every member
    binds it and no group is empty (there are GROUP BY keys), never when
    no member can."""
    if a.fn == "COUNT":
        return True
    if a.fn in ("SAMPLE", "MIN", "MAX") and isinstance(a.expr, A.Var):
        if a.expr.name not in bindable:
            return False
        if grouped and a.expr.name in certain:
            return True
    return None


def subsets(names: set[str] | frozenset[str]) -> list[frozenset[str]]:
    """Every subset of ``names`` (the schemas of a group's optional keys)."""
    out: list[frozenset[str]] = [frozenset()]
    for n in sorted(names):
        out += [s | {n} for s in out]
    return out

"""Evaluation of SPARQL expressions over one solution mapping (SPARQL 1.1 §17).

``exists`` is a callback the caller supplies: it decides EXISTS { P } for the
current mapping on the current data (substitution semantics, §18.6).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from rdflib.term import Identifier

from views import algebra as A
from views.compare import equals
from views.errors import UnsupportedFeature
from views.functions import FUNCTIONS
from views.terms import ExprError, boolean, canonical, ebv

ExistsFn = Callable[[A.Pattern, Mapping[str, Identifier]], bool]


def _no_exists(p: A.Pattern, mu: Mapping[str, Identifier]) -> bool:
    raise UnsupportedFeature("EXISTS in this position")


def evaluate(e: A.Expr, mu: Mapping[str, Identifier], exists: ExistsFn = _no_exists) -> Identifier:
    """The value of ``e`` under ``mu``; raises ExprError on a SPARQL error.

    >>> from rdflib import Literal
    >>> from views.parse import parse
    >>> q = parse("SELECT (?a + 1.5 AS ?x) WHERE {}")
    >>> evaluate(q.pattern.p.expr, {"a": Literal(1)})
    rdflib.term.Literal('2.5', datatype=rdflib.term.URIRef('http://www.w3.org/2001/XMLSchema#decimal'))
    """
    match e:
        case A.Var():
            v = mu.get(e.name)
            if v is None:
                raise ExprError(f"unbound ?{e.name}")
            return v
        case A.Const():
            return e.term
        case A.Exists():
            return boolean(exists(e.pattern, mu) != e.negated)
        case A.Call():
            special = _SPECIAL.get(e.fn)
            if special is not None:
                return special(e.args, mu, exists)
            f = FUNCTIONS.get(e.fn)
            if f is None:
                raise ExprError(f"unknown function {e.fn}")
            args = [evaluate(a, mu, exists) for a in e.args]
            try:
                return canonical(f(*args))  # one form per term (decision 8)
            except TypeError:
                raise ExprError(f"wrong arguments to {e.fn}") from None
            except (ValueError, ArithmeticError, IndexError) as error:
                # a value the function's library refuses (rdflib's language tags,
                # Python's dates) is a SPARQL error, never the view's failure
                raise ExprError(f"{e.fn}: {error}") from None
    raise TypeError(e)


def truth(e: A.Expr, mu: Mapping[str, Identifier], exists: ExistsFn = _no_exists) -> bool:
    """FILTER semantics: the EBV of ``e``, errors counting as false."""
    try:
        return ebv(evaluate(e, mu, exists))
    except ExprError:
        return False


def try_evaluate(e: A.Expr, mu: Mapping[str, Identifier],
                 exists: ExistsFn = _no_exists) -> Identifier | None:
    """BIND semantics: the value, or None (unbound) on error."""
    try:
        return evaluate(e, mu, exists)
    except ExprError:
        return None


def _junction(args, mu, exists, decisive: bool):  # type: ignore[no-untyped-def]
    """&& (decisive False) and || (decisive True), SPARQL 1.1 §17.2: one
    decisive operand wins over errors; otherwise an error is an error."""
    errors = False
    for a in args:
        try:
            if ebv(evaluate(a, mu, exists)) == decisive:
                return boolean(decisive)
        except ExprError:
            errors = True
    if errors:
        raise ExprError("logical connective over an error")
    return boolean(not decisive)


def _if(args, mu, exists):  # type: ignore[no-untyped-def]
    cond = ebv(evaluate(args[0], mu, exists))
    return evaluate(args[1] if cond else args[2], mu, exists)


def _coalesce(args, mu, exists):  # type: ignore[no-untyped-def]
    for a in args:
        try:
            return evaluate(a, mu, exists)
        except ExprError:
            continue
    raise ExprError("COALESCE: all arguments failed")


def _bound(args, mu, exists):  # type: ignore[no-untyped-def]
    if not isinstance(args[0], A.Var):
        raise ExprError("BOUND needs a variable")
    return boolean(args[0].name in mu)


def _in(args, mu, exists, negated: bool = False):  # type: ignore[no-untyped-def]
    # SPARQL 1.1 §17.4.1.9: errors count only when no member is equal
    left = evaluate(args[0], mu, exists)
    errors = False
    for a in args[1:]:
        try:
            if equals(left, evaluate(a, mu, exists)):
                return boolean(not negated)
        except ExprError:
            errors = True
    if errors:
        raise ExprError("IN with an error")
    return boolean(negated)


_SPECIAL = {
    "&&": lambda args, mu, exists: _junction(args, mu, exists, decisive=False),
    "||": lambda args, mu, exists: _junction(args, mu, exists, decisive=True),
    "IF": _if, "COALESCE": _coalesce, "BOUND": _bound, "IN": _in,
    "NOT IN": lambda args, mu, exists: _in(args, mu, exists, negated=True),
}

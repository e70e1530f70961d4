"""Set functions of SPARQL 1.1 §18.5 over one group.

A group is a K-set of input mappings; annotations are multiplicities. Results
do not depend on the order rows arrived in (SAMPLE and GROUP_CONCAT use the
ORDER BY term order), so incremental and from-scratch agree exactly.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping
from fractions import Fraction

from rdflib import XSD
from rdflib.term import BNode, Identifier, Literal

from views import algebra as A
from views.compare import order_key
from views.expr import ExistsFn, _no_exists, evaluate, try_evaluate
from views.functions import arithmetic, numeric_of
from views.terms import ExprError, Number, double, make_numeric, nearest_single, promote

Rows = Iterable[tuple[dict, int]]


def compute(agg: A.Aggregate, rows: Rows, exists: ExistsFn = _no_exists) -> Identifier | None:
    """The aggregate's value over ``rows``, or None when it is an error.

    >>> from rdflib import Literal
    >>> from views.parse import parse
    >>> q = parse("SELECT (MAX(?x) AS ?m) WHERE { ?s ?p ?x }")
    >>> agg = q.pattern.p.p.aggregates[0]
    >>> compute(agg, [({"x": Literal(3)}, 1), ({"x": Literal(7)}, 2)])
    rdflib.term.Literal('7', datatype=rdflib.term.URIRef('http://www.w3.org/2001/XMLSchema#integer'))
    """
    if agg.expr is None:  # COUNT(*)
        n = len([1 for _, k in rows]) if agg.distinct else sum(k for _, k in rows)
        return Literal(str(n), datatype=XSD.integer)
    values: list[Identifier | None] = []
    for m, k in rows:
        try:
            v: Identifier | None = evaluate(agg.expr, m, exists)
        except ExprError:
            v = None
        values.extend([v] * k)
    if agg.distinct:
        values = list(dict.fromkeys(values))
    try:
        return _FUNCS[agg.fn](values, agg)
    except ExprError:
        return None


def _count(values: list, agg: A.Aggregate) -> Identifier:
    return Literal(str(sum(1 for v in values if v is not None)), datatype=XSD.integer)


def _sum(values: list, agg: A.Aggregate) -> Identifier:
    """Integers and decimals add exactly (XPath op:numeric-add, in any
    order); once a float or a double is among the values, the sum is the
    double nearest to the exact sum of the values — one rounding, not one
    per addition, so that it does not depend on the order the members come
    in (which a maintained group and a recomputed one do not share: design
    note 153)."""
    if any(v is None for v in values):
        raise ExprError("SUM over an error")
    numbers = [numeric_of(v) for v in values]
    kind = functools.reduce(promote, (k for _, k in numbers), XSD.integer)
    if kind == XSD.double:
        return make_numeric(nearest_double([n for n, _ in numbers]), kind)
    if kind == XSD.float:  # rounded once to a float (design note 220), not through a double
        return make_numeric(nearest_single_sum([n for n, _ in numbers]), kind)
    total: Identifier = Literal("0", datatype=XSD.integer)
    for v in values:
        total = arithmetic("+", total, v)
    return total


def nearest_double(numbers: list[Number]) -> float:
    """The double nearest to the exact sum of ``numbers`` (NaN with a NaN
    or with both infinities, an infinity with one of them; +0.0 for an
    exact zero; infinite past the largest double)."""
    total = _exact_sum(numbers)
    return total if isinstance(total, float) else 0.0 + double(total)


def nearest_single_sum(numbers: list[Number]) -> float:
    """``nearest_double``'s float: the float nearest to the exact sum,
    rounded once (``pv_single_sum`` in SQL, migration 0041)."""
    total = _exact_sum(numbers)
    return total if isinstance(total, float) else 0.0 + nearest_single(total)


def _exact_sum(numbers: list[Number]) -> float | Fraction:
    """The exact sum of ``numbers``, or NaN or an infinity they force."""
    if any(isinstance(n, float) and math.isnan(n) for n in numbers) or \
            (math.inf in numbers and -math.inf in numbers):
        return math.nan
    if math.inf in numbers or -math.inf in numbers:
        return math.inf if math.inf in numbers else -math.inf
    return sum((Fraction(n) for n in numbers), Fraction(0))


def _avg(values: list, agg: A.Aggregate) -> Identifier:
    if not values:
        return Literal("0", datatype=XSD.integer)
    return arithmetic("/", _sum(values, agg), Literal(str(len(values)), datatype=XSD.integer))


def _extreme(values: list, agg: A.Aggregate) -> Identifier:
    present = [v for v in values if v is not None]
    if not present:
        raise ExprError("MIN/MAX of nothing")
    pick = min if agg.fn == "MIN" else max
    return pick(present, key=order_key)


def _sample(values: list, agg: A.Aggregate) -> Identifier:
    present = [v for v in values if v is not None]
    if not present:
        raise ExprError("SAMPLE of nothing")
    return min(present, key=order_key)


def _group_concat(values: list, agg: A.Aggregate) -> Identifier:
    parts = []
    for v in values:
        if v is None or isinstance(v, BNode):
            raise ExprError("GROUP_CONCAT over an error")
        parts.append(v)
    return Literal(agg.separator.join(str(p) for p in sorted(parts, key=order_key)))


_FUNCS = {"COUNT": _count, "SUM": _sum, "AVG": _avg, "MIN": _extreme, "MAX": _extreme,
          "SAMPLE": _sample, "GROUP_CONCAT": _group_concat}


Key = tuple[Identifier | None, ...]


def group_key(keys: tuple[A.Expr, ...], m: Mapping[str, Identifier]) -> Key:
    """The group of a mapping: its GROUP BY key values (None where a key errs)."""
    return tuple(try_evaluate(e, m) for e in keys)


def group_row(keys: tuple[A.Expr, ...], aggregates: tuple[A.Aggregate, ...], key: Key,
              rows: Rows) -> dict[str, Identifier]:
    """The one solution of a group (SPARQL 1.1 §18.5 Aggregation): its key
    variables and its aggregates' values (an erring aggregate is unbound)."""
    members = list(rows)
    row: dict[str, Identifier] = {}
    for e, v in zip(keys, key):
        if isinstance(e, A.Var) and v is not None:
            row[e.name] = v
    for agg in aggregates:
        value = compute(agg, members)
        if value is not None:
            row[agg.var] = value
    return row

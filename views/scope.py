"""The static rules of SPARQL 1.1 a query must keep to be a query at all,
which rdflib's parser does not check: a BIND may not bind a variable in
scope before it (§18.2.1), a SELECT expression may not bind one in scope
(§18.2.4.1), and a grouped query projects only its group keys, aggregates
and what it bound from them (§11.4, §18.2.4.1; ``SELECT *`` not at all).
Checked on rdflib's parse tree, where a group's parts are still in their
written order; the W3C negative syntax tests are the oracle
(tests/engine/test_w3c_syntax.py).

>>> from rdflib.plugins.sparql.parser import parseQuery
>>> check(parseQuery("SELECT * { ?s ?p ?o BIND(1 AS ?o) }"))
Traceback (most recent call last):
...
views.errors.SparqlSyntaxError: BIND binds ?o, already in scope (SPARQL 1.1 §18.2.1) (line 1, column 1)
"""

from __future__ import annotations

from typing import Any

from pyparsing import ParseResults
from rdflib.plugins.sparql.parserutils import CompValue
from rdflib.term import Variable

from views.errors import SparqlSyntaxError


def check(tree: Any) -> None:
    """Raise ``SparqlSyntaxError`` where the parsed query breaks a rule."""
    scopes: Scopes = {}  # a node's in-scope variables, each node's once
    for node in _nodes(tree):
        if node.name == "GroupGraphPatternSub":
            _check_binds(node, scopes)
        elif node.name in ("SelectQuery", "SubSelect"):
            _check_projection(node, scopes)


Scopes = dict[int, frozenset[Variable]]  # by id(node): a group is a part of each group above
# it, so without them the check walked a query's tree once per level of nesting (1.5 s
# for a 50 kB query 60 groups deep, beside its 1.1 s parse)


def _check_binds(group: CompValue, scopes: Scopes) -> None:
    seen: set[Variable] = set()
    for part in group.part or []:
        if part.name == "Bind" and part.var in seen:
            _refuse(f"BIND binds ?{part.var}, already in scope (SPARQL 1.1 §18.2.1)")
        seen |= _in_scope(part, scopes)


def _check_projection(q: CompValue, scopes: Scopes) -> None:
    items = q.projection or []
    grouped = q.groupby is not None or any(_has_aggregate(i.expr) for i in items if i.expr)
    bound: set[Variable] = set() if grouped else set(_in_scope(q.where, scopes))
    keys: set[Variable] = set()
    for c in (q.groupby.condition if q.groupby is not None else []):
        if isinstance(c, CompValue) and c.name == "GroupAs":
            keys.add(c.var)
        elif isinstance(leaf(c), Variable):
            keys.add(leaf(c))
    if grouped and not items:
        _refuse("SELECT * in a grouped query (SPARQL 1.1 §18.2.4.1)")
    for item in items:
        if item.evar is not None:
            if item.evar in bound or item.evar in keys:
                _refuse(f"AS binds ?{item.evar}, already in scope (SPARQL 1.1 §18.2.4.1)")
            loose = _outside_aggregates(item.expr) - keys - bound if grouped else set()
            bound.add(item.evar)
        else:
            loose = {item.var} - keys - bound if grouped else set()
        if loose:
            _refuse(f"?{min(loose)} is projected but neither grouped by nor aggregated "
                    "(SPARQL 1.1 §11.4)")


def _in_scope(node: Any, scopes: Scopes) -> frozenset[Variable]:
    """The variables ``node`` puts in scope (§18.2.1): not those of a FILTER
    or MINUS, of a sub-select only those it projects."""
    if isinstance(node, Variable):
        return frozenset({node})
    if not isinstance(node, CompValue | list | tuple | ParseResults):
        return frozenset()
    if id(node) not in scopes:
        scopes[id(node)] = _scope_of(node, scopes)
    return scopes[id(node)]


def _scope_of(node: Any, scopes: Scopes) -> frozenset[Variable]:
    if isinstance(node, CompValue):
        match node.name:
            case "Filter" | "MinusGraphPattern":
                return frozenset()
            case "Bind":
                return frozenset({node.var})
            case "SubSelect":
                items = node.projection or []
                return frozenset(i.evar or i.var for i in items) if items \
                    else _in_scope(node.where, scopes)
        node = node.values()
    return frozenset().union(*(_in_scope(v, scopes) for v in node))


def _outside_aggregates(e: Any) -> set[Variable]:
    if isinstance(e, Variable):
        return {e}
    if isinstance(e, CompValue):
        if e.name.startswith("Aggregate_"):
            return set()
        return set().union(*(_outside_aggregates(v) for v in e.values()))
    if isinstance(e, list | tuple | ParseResults):
        return set().union(*(_outside_aggregates(v) for v in e))
    return set()


def _has_aggregate(e: Any) -> bool:
    return any(n.name.startswith("Aggregate_") for n in _nodes(e))


def _nodes(node: Any) -> list[CompValue]:
    """Every CompValue under ``node``, ``node`` included."""
    out: list[CompValue] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, CompValue):
            out.append(n)
            stack.extend(n.values())
        elif isinstance(n, list | tuple | ParseResults):
            stack.extend(n)
    return out


def leaf(e: Any) -> Any:
    """What rdflib simplifies a one-operand expression chain to."""
    while isinstance(e, CompValue) and e.name.endswith("Expression") and e.other is None:
        e = e.expr
    return e


def _refuse(message: str) -> None:
    raise SparqlSyntaxError(message, 1, 1)

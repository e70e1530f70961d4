"""SPARQL filter expressions rendered to SQL over term ids (SPARQL 1.1 §17),
for the subset whose value semantics SQL states exactly; ``None`` for the
rest, whose node then runs in the interpreter.

A rendered expression is a SQL boolean where NULL stands for a SPARQL
error: SQL's three-valued AND, OR and NOT are SPARQL's ``&&``, ``||`` and
``!`` over errors (§17.2: an error and false is false, an error or true is
true), and a filter keeps the rows where it ``IS TRUE``.

- ``=``/``!=`` where one operand is never a literal: term identity, which is
  id equality (decision 8: one id per RDF term).
- ``sameTerm``: id equality. ``bound``: the column is not NULL.
- ``isNumeric`` of a variable: its dictionary row is a well-formed number.
- ``<``, ``>``, ``<=``, ``>=`` between a variable and an integer or decimal
  constant: exactly (``numeric``) when the variable holds an integer or a
  decimal; when it holds a double, against the constant's nearest double,
  a float against its nearest float (XPath promotion), both held as
  doubles; an error (NULL) for anything else, an ill-typed literal or NaN.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal

from rdflib import XSD
from rdflib.term import Identifier, Literal

from views import algebra as A
from views.terms import INTEGER_TYPES, ExprError, nearest_single, numeric_type, numeric_value
from views.terms import double as as_double

Column = Callable[[str], str | None]  # a variable's id column, None when never bound
TermId = Callable[[Identifier], str]  # a constant's id as SQL

_EXACT = sorted(str(t) for t in INTEGER_TYPES | {XSD.decimal})
_FLOATS = [str(XSD.float), str(XSD.double)]
_FLIP = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}


def condition(e: A.Expr, col: Column, term: TermId, iris: frozenset[str],
              spark: bool = False) -> str | None:
    """``e`` as a SQL boolean (NULL: error), or None when not rendered.
    ``iris``: variables never bound to a literal; ``spark``: in Spark SQL,
    a numeric comparison reads Postgres's answers (``spark_tables``)."""
    match e:
        case A.Call(fn="&&" | "||", args=args):
            parts = [condition(a, col, term, iris, spark) for a in args]
            if any(p is None for p in parts):
                return None
            return "(" + (" AND " if e.fn == "&&" else " OR ").join(parts) + ")"  # type: ignore[arg-type]
        case A.Call(fn="!", args=(a,)):
            inner = condition(a, col, term, iris, spark)
            return None if inner is None else f"(NOT {inner})"
        case A.Call(fn="BOUND", args=(A.Var(name=v),)):
            c = col(v)
            return "FALSE" if c is None else f"({c} IS NOT NULL)"
        case A.Call(fn="SAMETERM", args=(a, b)):
            return _identity("=", a, b, col, term)
        case A.Call(fn="=" | "!=", args=(a, b)) if _never_literal(a, iris) or \
                _never_literal(b, iris):
            return _identity("=" if e.fn == "=" else "<>", a, b, col, term)
        case A.Call(fn="ISNUMERIC", args=(A.Var(name=v),)) if not spark:
            c = col(v)  # unbound: no row, an error
            return "CAST(NULL AS boolean)" if c is None else \
                f"(SELECT {is_number('t')} FROM terms t WHERE t.id = {c})"
        case A.Call(fn="<" | ">" | "<=" | ">=", args=(a, b)):
            render = _spark_numeric if spark else _numeric
            if isinstance(a, A.Var) and (x := _number(b)) is not None:
                return render(e.fn, a.name, x, col)
            if isinstance(b, A.Var) and (y := _number(a)) is not None:
                return render(_FLIP[e.fn], b.name, y, col)
    return None


def _number(e: A.Expr) -> Decimal | int | None:
    """The value of an integer or decimal constant (signed); None for any
    other expression, or an ill-typed constant."""
    match e:
        case A.Const(term=t) if numeric_type(t) in (XSD.integer, XSD.decimal):
            try:
                v = numeric_value(t)
            except ExprError:
                return None
            if isinstance(v, float):
                return None
            return v
        case A.Call(fn="neg" | "pos", args=(a,)):
            inner = _number(a)
            return None if inner is None else -inner if e.fn == "neg" else inner
    return None


def _never_literal(e: A.Expr, iris: frozenset[str]) -> bool:
    return (isinstance(e, A.Var) and e.name in iris) or \
        (isinstance(e, A.Const) and not isinstance(e.term, Literal))


def _operand(e: A.Expr, col: Column, term: TermId) -> str | None:
    match e:
        case A.Var(name=v):
            return col(v) or "CAST(NULL AS bigint)"  # unbound: an error
        case A.Const(term=t):
            return term(t)
    return None


def _identity(op: str, a: A.Expr, b: A.Expr, col: Column, term: TermId) -> str | None:
    x, y = _operand(a, col, term), _operand(b, col, term)
    return None if x is None or y is None else f"({x} {op} {y})"


def _numeric(op: str, var: str, v: Decimal | int, col: Column) -> str:
    """``?var op v`` for an integer or decimal value (§17.3, XPath's
    op:numeric-less-than and friends)."""
    c = col(var)
    if c is None:
        return "CAST(NULL AS boolean)"
    return f"(SELECT {holds(op, v)} FROM terms t WHERE t.id = {c})"


def holds(op: str, v: Decimal | int) -> str:
    """Whether the term ``t`` (a row of ``terms``) satisfies ``op v``, as a
    Postgres boolean: exactly (``numeric``) for an integer or a decimal,
    against ``v`` promoted to the term's type for a float or a double (XPath
    promotion); NULL, an error, for any other term, an ill-typed literal or
    NaN."""
    exact = format(Decimal(v), "f")
    # promoted to the term's type: 'inf' past the largest, which Postgres reads
    double, single = (f"'{x!r}'::float8" for x in (as_double(v), nearest_single(v)))
    return (f"CASE WHEN {exact_number('t')} THEN t.lexical::numeric {op} {exact}::numeric "
            f"WHEN t.datatype = '{XSD.double}' THEN {double_of('t', nan=False)} {op} {double} "
            f"WHEN t.datatype = '{XSD.float}' THEN {double_of('t', nan=False)} {op} {single} END")


def exact_number(t: str) -> str:
    """Whether the term ``t`` (a row of ``terms``, or NULLs) is a well-formed
    integer (of xsd:integer or a type derived from it, in its range) or
    decimal, as a Postgres boolean: its ``num`` is set, or it is too large
    for a double (``storage.terms.dictionary_row``)."""
    exacts = ", ".join(f"'{d}'" for d in _EXACT)
    huge = " OR ".join(f"{t}.datatype IN ({', '.join(repr(str(d)) for d in types)}) "
                       f"AND {t}.lexical ~ '{pattern}'" for types, pattern in _HUGE)
    return f"({t}.datatype IN ({exacts}) AND ({t}.num IS NOT NULL OR {huge}))"


def is_number(t: str) -> str:
    """Whether the term ``t`` is a well-formed number (``isNumeric``), as
    a Postgres boolean never NULL."""
    floats = ", ".join(f"'{d}'" for d in _FLOATS)
    return (f"coalesce({exact_number(t)} OR ({t}.datatype IN ({floats}) "
            f"AND {double_of(t)} IS NOT NULL), FALSE)")


def double_of(t: str, nan: bool = True) -> str:
    """The value of the float or double ``t`` as a Postgres double (NULL
    when ill-typed; NaN too unless ``nan``)."""
    return (f"(CASE WHEN {t}.num IS NOT NULL THEN {t}.num "
            f"WHEN {t}.lexical ~ '^[+]?{_OVER}$' THEN 'Infinity'::float8 "
            f"WHEN {t}.lexical ~ '^-{_OVER}$' THEN '-Infinity'::float8 "
            + (f"WHEN {t}.lexical = 'NaN' THEN 'NaN'::float8 " if nan else "")
            + "END)")


NUMERIC_TYPES = [*_EXACT, *_FLOATS]  # the terms a numeric comparison can hold for
_OPS = {"<": "lt", ">": "gt", "<=": "le", ">=": "ge"}
_SPARK_TABLE = re.compile(r"`pv_num_(lt|gt|le|ge)_([0-9a-f]+)`")


def _spark_numeric(op: str, var: str, v: Decimal | int, col: Column) -> str:
    """``?var op v`` in Spark SQL, which has neither Postgres's ``numeric``
    nor its regular expressions: a lookup in a table of the numeric
    literals' answers (``spark_tables``), computed by Postgres with
    ``holds`` before the program runs; absent, an error (NULL). The lookup
    is two uncorrelated IN subqueries: a scalar subquery reading ``c``
    was correlated, and Spark resolves no column of a query two levels
    out (a filter of OPTIONAL's right side reading a left variable sits
    in an EXISTS: the job failed, ``UNRESOLVED_COLUMN``; design note 228)."""
    c = col(var)
    if c is None:
        return "CAST(NULL AS boolean)"
    name = f"`pv_num_{_OPS[op]}_{format(Decimal(v), 'f').encode().hex()}`"
    return (f"(CASE WHEN {c} IN (SELECT id FROM {name} WHERE holds) THEN TRUE "
            f"WHEN {c} IN (SELECT id FROM {name} WHERE NOT holds) THEN FALSE END)")


def spark_tables(sql: str) -> dict[str, str]:
    """The tables of numeric answers a Spark SQL program names, each with
    the Postgres query of its rows (``id``, ``holds``): the dictionary's
    numeric literals for which the comparison is not an error."""
    ops = {code: op for op, code in _OPS.items()}
    types = ", ".join(f"'{d}'" for d in NUMERIC_TYPES)
    out = {}
    for m in _SPARK_TABLE.finditer(sql):
        value = Decimal(bytes.fromhex(m.group(2)).decode())
        out[m.group(0).strip("`")] = (
            f"SELECT id, holds FROM (SELECT t.id, {holds(ops[m.group(1)], value)} AS holds "
            f"FROM terms t WHERE t.datatype IN ({types})) x WHERE holds IS NOT NULL")
    return out


# XSD 1.1 lexical spaces (views.terms._LEXICAL), as Postgres regular expressions
_INTEGER = r"^[+-]?[0-9]+$"
_DECIMAL = r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)$"
_OVER = r"(INF|([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?)"  # INF, or past a double
_UNSIGNED = "^[+]?0*[1-9][0-9]{200}[0-9]{108,}$"  # too many digits for a double
# the well-formed literals whose value a double cannot hold, by type (no ``num``)
_HUGE = (((XSD.integer,), _INTEGER), ((XSD.decimal,), _DECIMAL),
         ((XSD.nonNegativeInteger, XSD.positiveInteger), _UNSIGNED),
         ((XSD.nonPositiveInteger, XSD.negativeInteger), _UNSIGNED.replace("[+]?", "-")))

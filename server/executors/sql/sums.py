"""SUM and AVG over a group's members in SQL (SPARQL 1.1 §18.5.1.3–4,
as ``views.aggregates``): the XPath sum of the members' values, each counted
as often as its multiplicity — xsd:integer while every value is an integer,
xsd:decimal once a decimal is among them, xsd:float, then xsd:double (type
promotion) — and an error, which leaves the aggregate unbound, when a
member's value is not a number (an IRI, a string, an ill-typed literal,
unbound). AVG is that sum divided by the number of values (XPath's
op:numeric-divide: an integer sum divides as a decimal).

Integers and decimals add exactly (Postgres ``numeric``; the interpreter's
decimals too, ``views.terms.EXACT``). Once a float or a double is among
them, the sum is the double (of floats, the float) nearest to the exact
sum of the values, rounded once (``views.aggregates.nearest_double``,
``nearest_single_sum``; ``pv_double_sum``, ``pv_single_sum``, migrations
0027 and 0041): a sum of doubles
rounded at every addition depends on the order they are added in, which a
group maintained here and one recomputed by the interpreter do not share
(design note 153). A member's classification and value are read from its
dictionary row (``terms``: ``num``, ``lexical``, ``datatype``); the
result's term is written as ``views.terms.make_numeric`` writes it
(migration 0027's ``pv_decimal_lexical``, ``pv_double_lexical``) and looked
up by that form (``storage.terms.number_id``)."""

from __future__ import annotations

from rdflib import XSD

from server.executors.sql.exprs import double_of, exact_number

# a member's numeric family: 0 integer, 1 decimal, 2 float, 3 double (NULL: not a number)
FAMILIES = (XSD.integer, XSD.decimal, XSD.float, XSD.double)
# the float and double values counted apart (their sum is not a number's), by tally name
SPECIAL = (("nan", "NaN"), ("pinf", "Infinity"), ("ninf", "-Infinity"))


def sums_members(members: str, columns: list[str]) -> str:
    """A FROM item: the group's ``members`` (one row per member, ``ko`` and
    ``kd`` its old multiplicity and its change) with, for the value of
    each summed column ``j``, its exact value ``xj`` (a well-formed
    integer or decimal), its double ``dj`` (a well-formed float or
    double), its family ``fj`` from those (each term's dictionary row read
    once, by its id: a subquery, never a join, as ``render._ranked_members``
    reads sort keys — planned for the estimated members, a join hashed the
    whole dictionary for one member, design note 183) and that double's
    exact value scaled by 2^1074 ``bj`` (NULL when infinite or NaN)."""
    extra, joins, outer = [], [], []
    for j, c in enumerate(columns):
        t = f"s{j}"
        joins.append(f"LEFT JOIN LATERAL (SELECT * FROM terms AS q WHERE q.id = m.{c} "
                     f"OFFSET 0) AS {t} ON TRUE")
        extra += [f"{t}.datatype AS t{j}",
                  f"CASE WHEN {exact_number(t)} THEN {t}.lexical::numeric END AS x{j}",
                  (f"CASE WHEN {t}.datatype IN ('{XSD.float}', '{XSD.double}') "
                  f"THEN {double_of(t)} END AS d{j}")]
        outer += [(f"CASE WHEN x{j} IS NOT NULL THEN CASE WHEN t{j} = '{XSD.decimal}' THEN 1 "
                  f"ELSE 0 END WHEN d{j} IS NOT NULL THEN CASE WHEN t{j} = '{XSD.float}' "
                  f"THEN 2 ELSE 3 END END AS f{j}"),
                  (f"CASE WHEN d{j} NOT IN ('Infinity', '-Infinity', 'NaN') "
                  f"THEN pv_double_scaled(d{j}) END AS b{j}")]
    return (f"(SELECT v.*, {', '.join(outer)} FROM (SELECT m.*, {', '.join(extra)} "
            f"FROM {members} AS m {' '.join(joins)}) AS v) AS u")


def term(fn: str, side: str, j: int, r: int) -> list[str]:
    """The term of the SUM or AVG ``fn`` of column ``j`` on ``side`` from
    its tallies (``tally.grouped``'s columns): its datatype (``{side}t{r}``) and lexical form
    (``{side}l{r}``), both NULL when it is an error. The sum (and the
    average) of no value is the integer 0; an average of integers and
    decimals is a decimal, divided as Python's decimals are (28
    significant digits, ties to even: ``pv_decimal_div``), of floats or
    doubles a double division (``pv_double_div``)."""
    error = f"{side}e{j} > 0"
    family = f"coalesce({side}f{j}, 0)"
    exact = f"coalesce({side}x{j}, 0)"
    parts = f"{side}nan{j}, {side}pinf{j}, {side}ninf{j}, {side}x{j}, {side}b{j}"
    double, single = f"pv_double_sum({parts})", f"pv_single_sum({parts})"  # each rounded once
    families = list(FAMILIES)
    empty, whole = "FALSE", f"{family} = 0"  # a sum of integers is an integer
    if fn == "AVG":  # a float's sum is a float before it is divided
        n = f"{side}c{j}"
        exact, double, single = (f"pv_decimal_div({exact}, {n})", f"pv_double_div({double}, {n})",
                                 f"pv_double_div({single}, {n})")
        families[0], empty, whole = XSD.decimal, f"{n} = 0", "FALSE"
    datatype = " ".join(f"WHEN {i} THEN '{t}'" for i, t in enumerate(families))
    return [(f"CASE WHEN {error} THEN NULL WHEN {empty} THEN '{XSD.integer}' "
             f"ELSE CASE {family} {datatype} END END AS {side}t{r}"),
            (f"CASE WHEN {error} THEN NULL WHEN {empty} THEN '0' "
             f"WHEN {family} = 2 THEN pv_float_lexical({single}) "
             f"WHEN {family} = 3 THEN pv_double_lexical({double}) "
             f"WHEN {whole} THEN {exact}::text ELSE pv_decimal_lexical({exact}) END AS {side}l{r}")]

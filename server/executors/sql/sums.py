"""SUM and AVG over a group's members in SQL (SPARQL 1.1 §18.5.1.3–4,
as ``views.aggregates``): the XPath sum of the members' values, each counted
as often as its multiplicity — xsd:integer while every value is an integer,
xsd:decimal once a decimal is among them, xsd:float, then xsd:double (type
promotion) — and an error, which leaves the aggregate unbound, when a
member's value is not a number (an IRI, a string, an ill-typed literal,
unbound). AVG is that sum divided by the number of values (XPath's
op:numeric-divide: an integer sum divides as a decimal).

Integers and decimals add exactly (Postgres ``numeric``; the interpreter's
decimals too, ``views.terms.EXACT``); floats and doubles as doubles, in the
order Postgres meets them (the interpreter's order is its members' order:
values that are not dyadic may differ in their last bit between the two;
design note 153). A member's classification and value are read from its
dictionary row (``terms``: ``num``, ``lexical``, ``datatype``); the
result's term is written as ``views.terms.make_numeric`` writes it
(migration 0027's ``pv_decimal_lexical``, ``pv_double_lexical``) and looked
up by that form (``storage.terms.number_id``)."""

from __future__ import annotations

from rdflib import XSD

from server.executors.sql.exprs import double_of, exact_number

# a member's numeric family: 0 integer, 1 decimal, 2 float, 3 double (NULL: not a number)
FAMILIES = (XSD.integer, XSD.decimal, XSD.float, XSD.double)
HUGE = "1e300"  # a double at least this large is added as numeric (Postgres refuses overflow)


def sums_members(members: str, columns: list[str]) -> str:
    """A FROM item: the group's ``members`` (one row per member, ``ko`` and
    ``kd`` its old multiplicity and its change) with, for the value of
    each summed column ``j``, its family ``fj``, exact value ``xj`` and
    double ``dj``."""
    extra, joins = [], []
    for j, c in enumerate(columns):
        t = f"s{j}"
        joins.append(f"LEFT JOIN terms AS {t} ON {t}.id = m.{c}")
        family = (f"(CASE WHEN {exact_number(t)} THEN CASE WHEN {t}.datatype = '{XSD.decimal}' "
                  f"THEN 1 ELSE 0 END WHEN {t}.datatype = '{XSD.float}' AND {double_of(t)} "
                  f"IS NOT NULL THEN 2 WHEN {t}.datatype = '{XSD.double}' AND {double_of(t)} "
                  "IS NOT NULL THEN 3 END)")
        extra.append(f"{family} AS f{j}")
        extra.append(f"CASE WHEN {exact_number(t)} THEN {t}.lexical::numeric END AS x{j}")
        # an integer or decimal past a double's range is infinite as a double (as in Python)
        extra.append(f"CASE WHEN {exact_number(t)} THEN coalesce({t}.num, CASE WHEN "
                     f"{t}.lexical ~ '^\\s*-' THEN '-Infinity'::float8 ELSE 'Infinity'::float8 END) "
                     f"ELSE {double_of(t)} END AS d{j}")
    return (f"(SELECT m.*, {', '.join(extra)} FROM {members} AS m {' '.join(joins)}) AS u")


def tallies(side: str, j: int, k: str) -> list[str]:
    """The aggregates over a group's rows (``sums_members``) a SUM or an
    AVG of column ``j`` needs on one ``side`` (``o_``: before the batch,
    ``n_``: after), the member's multiplicity there ``k``: its values (a
    member counted as often as its multiplicity), its erring members, its
    highest family, its exact sum (integers and decimals), its double sum
    of the values below ``HUGE`` and the exact sum of the finite ones above."""
    present = f"({k}) > 0"
    huge = f"abs(d{j}) >= {HUGE} AND d{j} NOT IN ('Infinity', '-Infinity', 'NaN')"
    return [f"sum(CASE WHEN {present} THEN {k} ELSE 0 END) AS {side}c{j}",
            f"sum(CASE WHEN {present} AND f{j} IS NULL THEN 1 ELSE 0 END) AS {side}e{j}",
            f"max(CASE WHEN {present} THEN f{j} END) AS {side}f{j}",
            f"sum(CASE WHEN {present} AND f{j} <= 1 THEN x{j} * ({k}) END) AS {side}x{j}",
            (f"sum(CASE WHEN {present} AND f{j} IS NOT NULL AND NOT ({huge}) "
             f"THEN d{j} * ({k}) END) AS {side}d{j}"),
            (f"sum(CASE WHEN {present} AND {huge} THEN d{j}::text::numeric * ({k}) END) "
             f"AS {side}h{j}")]


def term(fn: str, side: str, j: int, r: int) -> list[str]:
    """The term of the SUM or AVG ``fn`` of column ``j`` on ``side`` from
    its tallies: its datatype (``{side}t{r}``) and lexical form
    (``{side}l{r}``), both NULL when it is an error. The sum (and the
    average) of no value is the integer 0; an average of integers and
    decimals is a decimal, divided as Python's decimals are (28
    significant digits, ties to even: ``pv_decimal_div``), of floats or
    doubles a double division (``pv_double_div``)."""
    error = f"{side}e{j} > 0"
    family = f"coalesce({side}f{j}, 0)"
    exact, double = f"coalesce({side}x{j}, 0)", f"pv_double_sum({side}d{j}, {side}h{j})"
    families = list(FAMILIES)
    empty, whole = "FALSE", f"{family} = 0"  # a sum of integers is an integer
    if fn == "AVG":
        n = f"{side}c{j}"
        exact, double = f"pv_decimal_div({exact}, {n})", f"pv_double_div({double}, {n})"
        families[0], empty, whole = XSD.decimal, f"{n} = 0", "FALSE"
    datatype = " ".join(f"WHEN {i} THEN '{t}'" for i, t in enumerate(families))
    return [(f"CASE WHEN {error} THEN NULL WHEN {empty} THEN '{XSD.integer}' "
             f"ELSE CASE {family} {datatype} END END AS {side}t{r}"),
            (f"CASE WHEN {error} THEN NULL WHEN {empty} THEN '0' "
             f"WHEN {family} >= 2 THEN pv_double_lexical({double}) "
             f"WHEN {whole} THEN {exact}::text ELSE pv_decimal_lexical({exact}) END AS {side}l{r}")]

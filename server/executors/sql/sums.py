"""SUM over a group's members in SQL (SPARQL 1.1 §18.5.1.3, as
``views.aggregates``): the XPath sum of the members' values, each counted
as often as its multiplicity — xsd:integer while every value is an integer,
xsd:decimal once a decimal is among them, xsd:float, then xsd:double (type
promotion) — and an error, which leaves the aggregate unbound, when a
member's value is not a number (an IRI, a string, an ill-typed literal,
unbound).

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


def sum_tallies(side: str, j: int, k: str) -> list[str]:
    """The aggregates over a group's rows (``sums_members``) a SUM of
    column ``j`` needs on one ``side`` (``o_``: before the batch, ``n_``:
    after), the member's multiplicity there ``k``: its erring members, its
    highest family, its exact sum (integers and decimals), its double sum
    of the values below ``HUGE`` and the exact sum of the finite ones above."""
    present = f"({k}) > 0"
    huge = f"abs(d{j}) >= {HUGE} AND d{j} NOT IN ('Infinity', '-Infinity', 'NaN')"
    return [f"sum(CASE WHEN {present} AND f{j} IS NULL THEN 1 ELSE 0 END) AS {side}e{j}",
            f"max(CASE WHEN {present} THEN f{j} END) AS {side}f{j}",
            f"sum(CASE WHEN {present} AND f{j} <= 1 THEN x{j} * ({k}) END) AS {side}x{j}",
            (f"sum(CASE WHEN {present} AND f{j} IS NOT NULL AND NOT ({huge}) "
             f"THEN d{j} * ({k}) END) AS {side}d{j}"),
            (f"sum(CASE WHEN {present} AND {huge} THEN d{j}::text::numeric * ({k}) END) "
             f"AS {side}h{j}")]


def sum_term(side: str, j: int) -> list[str]:
    """The SUM's term on ``side`` from its tallies: its datatype
    (``{side}t{j}``) and lexical form (``{side}l{j}``), both NULL when it
    is an error; the sum of no member is the integer 0."""
    error = f"{side}e{j} > 0"
    family = f"coalesce({side}f{j}, 0)"
    datatype = " ".join(f"WHEN {i} THEN '{t}'" for i, t in enumerate(FAMILIES))
    return [f"CASE WHEN {error} THEN NULL ELSE CASE {family} {datatype} END END AS {side}t{j}",
            (f"CASE WHEN {error} THEN NULL "
             f"WHEN {family} >= 2 THEN pv_double_lexical(pv_double_sum({side}d{j}, {side}h{j})) "
             f"WHEN {family} = 1 THEN pv_decimal_lexical({side}x{j}) "
             f"ELSE coalesce({side}x{j}, 0)::text END AS {side}l{j}")]

"""The differential term fuzzer (issue 15): Hypothesis strategies for data rich
in the terms real pods hold and queries over them, and the comparison with
pyoxigraph evaluating from scratch.

pyoxigraph is the oracle, not our reference evaluator (which shares our term
semantics). Where it deviates from the specifications, the W3C wins and the
deviation is excluded narrowly, by class, here:

- D1. pyoxigraph stores a well-formed literal of a numeric, boolean, date or
  duration type as its value: ``"01"^^xsd:integer`` and ``"1"^^xsd:integer``
  become one term ``"1"``, ``"5"^^xsd:int`` becomes ``"5"^^xsd:integer``,
  ``"…+00:00"`` becomes ``"…Z"`` — against RDF 1.1 term equality (two lexical
  forms are two terms; the W3C's open-eq tests say so). So a case's terms
  never hold two forms pyoxigraph would merge unless they are one RDF term
  (``"a"``/``"a"^^xsd:string``, ``@fr``/``@FR``: both engines merge those),
  terms are compared in pyoxigraph's form, and a case whose terms are not
  all in that form uses no function that shows a lexical form or a derived
  datatype (STR, DATATYPE, TZ — the timezone as written, ``"+00:00"`` where
  pyoxigraph has ``"Z"`` — the xsd:string cast, GROUP_CONCAT).
- D2. pyoxigraph does not order booleans (``true < false`` is an error; XPath
  op:boolean-less-than and SPARQL 1.1 §17.3 define it): ``<``, ``>``,
  ``<=``, ``>=`` are generated with a guard that makes both engines answer
  false when the left operand is a boolean.
- D3. Decimal division keeps 18 fractional digits in pyoxigraph, 28 in ours
  (XPath leaves the precision to the implementation, at least 18 digits):
  ``/`` is generated with a double divisor only, AVG over doubles.
- D6. pyoxigraph extends ``+ - * /`` to XPath's duration and date arithmetic;
  SPARQL 1.1 §17.3 maps them to numbers only (an error otherwise): they are
  generated on numbers only, anything else an error in both engines.
- D7. pyoxigraph orders a term and itself as equal whatever it is (``<a> <
  <a>`` false, ``<a> <= <a>`` and ``NaN <= NaN`` true), where SPARQL 1.1
  §17.3 has no operator for IRIs or unknown datatypes (an error) and XPath
  says NaN <= NaN is false: ``<``, ``>``, ``<=``, ``>=`` of a term and itself
  are guarded to false in both engines.
- D8. pyoxigraph takes the effective boolean value of an ill-typed number or
  boolean (``"abc"^^xsd:integer``) for an error; SPARQL 1.1 §17.2.2 says
  false: a value used as a condition is guarded so both engines err then.
- D9. pyoxigraph takes a language-tagged string and any other literal for
  different, ill-typed and unknown datatypes included; SPARQL 1.1 §17.4.1.7
  (RDFterm-equal) makes two literals of which one has no known value a type
  error: ``=``, ``!=`` and ``IN`` between a tagged and an untagged literal
  are guarded to false in both engines.
- D10. pyoxigraph runs Rust's regular expressions, not XPath's (F&O 3.1
  §5.6.1): its ``\\w`` takes ``_`` and leaves ``$``, its ``.`` takes a
  return, ``$1x`` names a group ``1x``, ``\\$`` stays two characters:
  REGEX and REPLACE draw only patterns and replacements on which both
  agree over the catalogue's strings (``_PATTERNS``), and the flag ``i``
  with no escape (XPath leaves ``\\p{Lu}`` upper case under it, Rust
  does not: ``_FLAGGED``); XPath's own cases
  are in tests/engine/test_xpath_functions.py.
- D5. pyoxigraph's integers are 64 bits (XSD lets an implementation limit
  them): the catalogue's numbers stay small, so no sum overflows.
- D4. A computed number's lexical form is the implementation's (SPARQL says
  nothing; the W3C expected results use several): STR and friends take only
  the data's own terms, never a computed one.

Orders the specifications leave to the implementation are not compared: the
order of literals ``<`` does not relate (a string and a number), MIN/MAX
over such groups, SAMPLE, and GROUP_CONCAT's order. ORDER BY is checked
against pyoxigraph's ``<`` instead (``check_order``).
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import pyoxigraph as ox
from hypothesis import strategies as st
from rdflib import XSD, BNode, Literal, URIRef
from rdflib.term import Identifier

from server.tools.oracle import from_ox, ox_quad, to_ox
from views.terms import canonical

logging.getLogger("rdflib.term").setLevel(logging.ERROR)  # ill-typed literals are the point

X = "http://www.w3.org/2001/XMLSchema#"
EX = "http://ex/"
PREFIXES = f"PREFIX : <{EX}> PREFIX xsd: <{X}>\n"


def lit(lexical: str, datatype: str | None = None, lang: str | None = None) -> Literal:
    dt = None if datatype is None else URIRef(datatype if ":" in datatype else X + datatype)
    return Literal(lexical, lang=lang, datatype=dt)


# Doubles and floats are dyadic, so sums are exact in any order (pyoxigraph adds in
# its own order, rounding each time): xsd:float's single precision, where 0.1 is not
# xsd:double's, is test_term_regressions.test_a_float_is_single_precision's.
CATALOGUE: tuple[Literal, ...] = (
    # integers, with non-canonical forms and a derived type
    lit("1", "integer"), lit("01", "integer"), lit("+1", "integer"), lit("0", "integer"),
    lit("-0", "integer"), lit("2", "integer"), lit("-3", "integer"), lit("010", "integer"),
    lit("10", "integer"), lit("7", "int"), lit("+7", "int"), lit("7", "integer"),
    # decimals
    lit("1.5", "decimal"), lit("1.50", "decimal"), lit("1.0", "decimal"), lit("1", "decimal"),
    lit("-0.5", "decimal"), lit("0.25", "decimal"), lit(".5", "decimal"), lit("2.0", "decimal"),
    # doubles and floats
    lit("1e0", "double"), lit("1.0E0", "double"), lit("1", "double"), lit("1.5e0", "double"),
    lit("15E-1", "double"), lit("-2.5E0", "double"), lit("0.5", "double"), lit("NaN", "double"),
    lit("INF", "double"), lit("-INF", "double"), lit("+INF", "double"), lit("1e1", "double"),
    lit("2.5", "float"), lit("1", "float"), lit("NaN", "float"), lit("-INF", "float"),
    # strings: simple, xsd:string, language-tagged in mixed case
    lit("abc"), lit("abc", "string"), lit("b"), lit(""), lit("1"), lit("A"), lit("é"), lit("a𝄞B"),
    lit("chat", lang="fr"), lit("chat", lang="FR"), lit("chat", lang="en"),
    lit("abc", lang="en-GB"), lit("abc", lang="en-gb"), lit("b", lang="en"),
    # booleans
    lit("true", "boolean"), lit("false", "boolean"), lit("1", "boolean"), lit("0", "boolean"),
    # dates and dateTimes with and without timezones (±14 h apart and closer)
    lit("2002-01-01T00:00:00", "dateTime"), lit("2002-01-01T00:00:00Z", "dateTime"),
    lit("2002-01-01T00:00:00+00:00", "dateTime"), lit("2002-01-01T10:00:00Z", "dateTime"),
    lit("2002-01-02T00:00:00Z", "dateTime"), lit("2002-01-01T12:00:00+02:00", "dateTime"),
    lit("2002-01-01T15:00:00-05:00", "dateTime"), lit("2001-12-31T09:59:59", "dateTime"),
    lit("2002-01-01T00:00:00.5Z", "dateTime"), lit("2002-01-01", "date"),
    # past Python's datetime: sub-microsecond seconds, years 0, -1 and 10000
    lit("2002-01-01T00:00:00.0000001Z", "dateTime"), lit("2002-01-01T00:00:00.9999999Z", "dateTime"),
    lit("0000-01-01T00:00:00Z", "dateTime"), lit("-0001-06-01T00:00:00", "dateTime"),
    lit("10000-01-01T00:00:00Z", "dateTime"), lit("-0001-12-31", "date"),
    lit("2002-01-01Z", "date"), lit("2002-01-03+14:00", "date"), lit("2001-12-31", "date"),
    # durations
    lit("P1D", "dayTimeDuration"), lit("PT24H", "dayTimeDuration"),
    lit("PT1H30M", "dayTimeDuration"), lit("-PT1H", "dayTimeDuration"),
    lit("P1M", "yearMonthDuration"), lit("P1Y2M", "yearMonthDuration"),
    lit("P14M", "yearMonthDuration"), lit("P1D", "duration"), lit("P1M", "duration"),
    lit("P40D", "duration"),
    # past Python's datetime: a tenth of a microsecond, 10,000 years, XSD 1.1's "1." seconds
    lit("PT0.0000001S", "dayTimeDuration"), lit("PT0S", "dayTimeDuration"),
    lit("P10000Y", "duration"), lit("PT1.S", "dayTimeDuration"), lit("PT1S", "duration"),
    # ill-typed literals and an unknown datatype
    lit("abc", "integer"), lit("1.5", "integer"), lit("tru", "boolean"), lit("x", "double"),
    lit("2002-13-01", "date"), lit("\u0662\u0660\u0660\u0662-01-01", "date"), lit("1_0", "integer"), lit("2 ", "integer"), lit(" 1.5", "double"), lit("x", EX + "dt"), lit("y", EX + "dt"),
)
IRIS = tuple(URIRef(EX + n) for n in ("a", "b", "c", "d"))
BNODES = (BNode("b1"), BNode("b2"))
PREDICATES = tuple(URIRef(EX + n) for n in ("p", "q"))


# --------------------------------------------------------- pyoxigraph forms


_VALUES = ox.Store()


@cache
def ox_form(t: Identifier) -> str:
    """The N-Triples form pyoxigraph gives the term (D1: its value's form)."""
    if not isinstance(t, Literal):
        return str(to_ox(t))
    found = list(_VALUES.query(f"SELECT ?x {{ VALUES ?x {{ {to_ox(t)} }} }}"))
    return str(found[0]["x"])


def faithful(t: Identifier) -> bool:
    """pyoxigraph keeps the term as it is (D1 does not touch it)."""
    return ox_form(t) == str(to_ox(canonical(t)))


def compatible(terms: Sequence[Identifier]) -> list[Identifier]:
    """``terms`` without those pyoxigraph would merge with an earlier, other
    RDF term (D1)."""
    kept: dict[str, Identifier] = {}
    out = []
    for t in terms:
        form = ox_form(t)
        if form in kept and canonical(kept[form]) != canonical(t):
            continue
        kept.setdefault(form, t)
        out.append(t)
    return out


# ------------------------------------------------------------------- cases


@dataclass(frozen=True)
class Case:
    pool: tuple[Identifier, ...]  # the literals and nodes of the data and the query
    triples: tuple[tuple[Identifier, Identifier, Identifier], ...]
    batches: tuple[tuple[tuple[int, int], ...], ...]  # (triple index, ±1)
    query: str
    order_vars: tuple[tuple[str, bool], ...] = ()  # ORDER BY variables, descending
    by_value: tuple[str, ...] = ()  # variables whose equal values may differ in form
    limit: int | None = None
    offset: int = 0
    template: str = ""  # the query before ``render``

    def unsliced(self) -> str:
        """The query without its LIMIT/OFFSET."""
        return self.query.split("\nLIMIT")[0].split("\nOFFSET")[0]


@st.composite
def pools(draw: st.DrawFn) -> tuple[Identifier, ...]:
    literals = draw(st.lists(st.sampled_from(CATALOGUE), min_size=2, max_size=9, unique=True))
    return tuple(compatible(literals))


@st.composite
def cases(draw: st.DrawFn) -> Case:
    pool = draw(pools())
    objects = (*pool, IRIS[0], IRIS[1], BNODES[0])
    triple = st.tuples(st.sampled_from(IRIS + BNODES), st.sampled_from(PREDICATES),
                       st.sampled_from(objects))
    triples = tuple(draw(st.lists(triple, min_size=1, max_size=10, unique=True)))
    n = len(triples)
    first = tuple((i, 1) for i in draw(st.permutations(range(n)))[:draw(st.integers(1, n))])
    op = st.tuples(st.integers(0, n - 1), st.sampled_from((1, -1)))
    rest = draw(st.lists(st.lists(op, min_size=1, max_size=4).map(tuple), max_size=3))
    q = dict(draw(QUERIES))
    q["template"] = q["query"]
    q["query"] = render(q["query"], pool, all(faithful(t) for t in pool), draw(st.booleans()))
    return Case(pool=pool, triples=triples, batches=(first, *rest), **q)


def render(template: str, pool: Sequence[Identifier], lexical_ok: bool,
           bare: bool = False) -> str:
    """A query template with the case's terms for its constants, ``bare``
    in the short form SPARQL has for a number or boolean whose lexical form
    is its token (``-0``, ``+1.50``, ``1.0E0``, ``true``: the same terms,
    read by another part of both parsers); the functions that show a
    lexical form only where they may (D1)."""
    for i in range(MAX_CONSTANTS):
        t = pool[i % len(pool)]
        template = template.replace(f"⟨c{i}⟩", spelled(t) if bare else t.n3())
    for fn in _LEXICAL:
        template = template.replace(f"⟨{fn}⟩", fn if lexical_ok else "")
    return template


def spelled(t: Identifier) -> str:
    """``t`` as a bare token where SPARQL 1.1 §19.8 [146]–[154], [134] has
    one for its lexical form and datatype, else in full."""
    token = TOKENS.get(t.datatype) if isinstance(t, Literal) else None
    return str(t) if token is not None and token.fullmatch(str(t)) else t.n3()


TOKENS = {XSD.integer: re.compile(r"[+-]?[0-9]+"), XSD.decimal: re.compile(r"[+-]?[0-9]*\.[0-9]+"),
          XSD.double: re.compile(r"[+-]?([0-9]+\.[0-9]*|\.?[0-9]+)[eE][+-]?[0-9]+"),
          XSD.boolean: re.compile("true|false")}  # a datatype's bare tokens


MAX_CONSTANTS = 9
_LEXICAL = ("STR", "DATATYPE", "TZ", "xsd:string")


class Exprs:
    """Expression strategies over the variables ``?o`` and ``?w`` (objects of
    ``:p`` and ``:q``) and the case's terms as constants."""

    def __init__(self) -> None:
        self.consts = [f"⟨c{i}⟩" for i in range(MAX_CONSTANTS)]  # see ``render``

    @cache  # noqa: B019 - one Exprs for the module
    def atom(self) -> st.SearchStrategy[str]:
        return st.one_of(st.sampled_from(["?o", "?w"]), st.sampled_from(self.consts))

    @cache  # noqa: B019 - one Exprs for the module
    def value(self, depth: int = 2) -> st.SearchStrategy[str]:
        atom = self.atom()
        if depth == 0:
            return atom
        sub = self.value(depth - 1)
        cases = [
            atom, atom, self.compare(atom), self.test(atom),
            st.tuples(sub, st.sampled_from(["+", "-", "*"]), sub).map(lambda t: _arithmetic(*t)),
            sub.map(lambda e: _arithmetic(e, "/", "2.0e0")),  # D3
            sub.map(lambda e: f"IF(isNumeric({e}), - {e}, 1/0)"),  # D6; ``-0`` would be one token
            st.tuples(st.sampled_from(_ONE_ARG), sub).map(lambda t: f"{t[0]}({t[1]})"),
            st.tuples(st.sampled_from(_CASTS), sub).map(lambda t: f"xsd:{t[0]}({t[1]})"),
            st.tuples(self.compare(atom), sub, sub).map(lambda t: f"IF({t[0]}, {t[1]}, {t[2]})"),
            st.tuples(sub, sub).map(lambda t: f"COALESCE({t[0]}, {t[1]})"),
            st.tuples(atom, st.sampled_from(_STRING_TWO), st.sampled_from(['"a"', '"b"', '""']))
            .map(lambda t: f"{t[1]}({t[0]}, {t[2]})"),
            st.tuples(atom, self.position(sub), st.one_of(st.none(), self.position(sub)))
            .map(lambda t: f"SUBSTR({t[0]}, {t[1]})" if t[2] is None
                 else f"SUBSTR({t[0]}, {t[1]}, {t[2]})"),
            st.tuples(atom, st.sampled_from(['"fr"', '"en"', '"*"', '"EN-gb"']))
            .map(lambda t: f"LANGMATCHES(LANG({t[0]}), {t[1]})"),
            st.tuples(atom, st.sampled_from(['"fr"', '"EN"']))
            .map(lambda t: f"STRLANG(⟨STR⟩({t[0]}), {t[1]})"),
            # D1, D4: only the data's own terms, and only where they show no
            # form pyoxigraph changed (``render`` drops the function otherwise)
            st.tuples(st.sampled_from(_LEXICAL), atom).map(lambda t: f"⟨{t[0]}⟩({t[1]})"),
            atom.map(lambda e: f"STRDT(⟨STR⟩({e}), xsd:string)"),
            self.text(atom),
        ]
        return st.one_of(cases)

    @cache  # noqa: B019 - one Exprs for the module
    def text(self, operand: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        """Regular expressions, hashes and URI encoding of ``operand``."""
        return st.one_of(
            st.tuples(operand, st.sampled_from(_FLAGGED + _MATCH_EMPTY))
            .map(lambda t: f"REGEX({t[0]}, {t[1][0]}{t[1][1]})"),
            st.tuples(operand, st.sampled_from(_FLAGGED), st.sampled_from(_REPLACEMENTS))
            .map(lambda t: f"REPLACE({t[0]}, {t[1][0]}, {t[2]}{t[1][1]})"),
            st.tuples(st.sampled_from(_TEXT_ONE), operand).map(lambda t: f"{t[0]}({t[1]})"))

    @staticmethod
    def position(sub: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        """SUBSTR's start or length: integers around the strings' ends, other
        numbers (a type error: xsd:integer only, note 161) and any value."""
        return st.one_of(st.sampled_from(["0", "1", "2", "3", "-1", "10", "1.0", "2e0",
                                          '"1"^^xsd:short', '"2"']), sub)

    @cache  # noqa: B019 - one Exprs for the module
    def compare(self, operand: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.tuples(operand, st.sampled_from(["=", "!=", "<", ">", "<=", ">="]), operand) \
            .map(lambda t: _compare(*t))

    @cache  # noqa: B019 - one Exprs for the module
    def test(self, operand: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.tuples(st.sampled_from(["isNumeric", "isLiteral", "isIRI", "isBlank"]), operand)
            .map(lambda t: f"{t[0]}({t[1]})"),
            st.tuples(operand, operand).map(lambda t: f"sameTerm({t[0]}, {t[1]})"),
            st.tuples(operand, operand, operand).map(lambda t: _in(*t)),
        )

    @cache  # noqa: B019 - one Exprs for the module
    def condition(self) -> st.SearchStrategy[str]:
        c = st.one_of(self.compare(self.value(1)), self.test(self.atom()),
                      self.value(1).map(_ebv))
        return st.one_of(c, st.tuples(c, st.sampled_from(["&&", "||"]), c)
                         .map(lambda t: f"({' '.join(t)})"), c.map(lambda e: f"!({e})"))


_ONE_ARG = ("ABS", "ROUND", "CEIL", "FLOOR", "STRLEN", "UCASE", "LCASE", "LANG", "isNumeric",
            "YEAR", "MONTH", "DAY", "HOURS", "MINUTES", "SECONDS", "TIMEZONE")
_TEXT_ONE = ("ENCODE_FOR_URI", "MD5", "SHA1", "SHA256", "SHA384", "SHA512", "STRLEN", "UCASE")
# D10: patterns and replacements XPath and Rust (pyoxigraph) read alike here
_PATTERNS = ('"b"', '"^a"', '"c$"', '"[a-c]+"', '"a|b"', '"^.$"', '"\\\\p{Lu}"', '"é"',
             '"(a)(b)?"', '"[^a]"', '"B"', '"\\\\d"')
_FLAGS = ("", ', ""', ', "i"')
# with i, XPath folds a pattern's own characters, not its escapes (\p{Lu} stays upper case,
# design note 226); Rust folds the escape's class too
_FLAGGED = tuple((p, f) for p in _PATTERNS for f in _FLAGS if not ("i" in f and "\\" in p))
_MATCH_EMPTY = tuple((p, f) for p in ('"^$"', '"x*"') for f in _FLAGS)  # an error in REPLACE
_REPLACEMENTS = ('"x"', '"$0$0"', '"[$1]"', '""', '"$2"')
_CASTS = ("integer", "decimal", "double", "float", "boolean", "dateTime")
_STRING_TWO = ("CONTAINS", "STRSTARTS", "STRENDS", "STRBEFORE", "STRAFTER", "CONCAT")


def _ebv(v: str) -> str:
    """``v`` as a condition, an error in both engines where pyoxigraph takes
    an ill-typed number or boolean's EBV for an error (D8)."""
    numeric = "xsd:integer, xsd:decimal, xsd:float, xsd:double, xsd:int"
    return (f"IF(COALESCE(DATATYPE({v}) IN ({numeric}) && !isNumeric({v}), false) || "
            f"COALESCE(DATATYPE({v}) = xsd:boolean && !(STR({v}) IN "
            f"(\"true\", \"false\", \"1\", \"0\")), false), 1/0, {v})")


def _arithmetic(a: str, op: str, b: str) -> str:
    # D6: numbers only in both engines
    return f"IF(isNumeric({a}) && isNumeric({b}), ({a} {op} {b}), 1/0)"


def _one_tagged(a: str, b: str) -> str:
    """D9: one of two literals language-tagged, the other not."""
    return f'COALESCE((LANG({a}) != "") != (LANG({b}) != ""), false)'


def _in(a: str, b: str, c: str) -> str:
    return f"IF({_one_tagged(a, b)} || {_one_tagged(a, c)}, false, ({a} IN ({b}, {c})))"


def _compare(a: str, op: str, b: str) -> str:
    if op in ("=", "!="):
        return f"IF({_one_tagged(a, b)}, false, ({a} {op} {b}))"
    # D2: pyoxigraph does not order booleans; both engines answer false then
    guard = f"COALESCE(DATATYPE({a}), \"\") != xsd:boolean && !sameTerm({a}, {b})"  # D7
    return f"({guard} && {a} {op} {b})"


PATTERN_P = "?s :p ?o"
PATTERN_PQ = "?s :p ?o . ?t :q ?w"
PATTERN_OPT = "?s :p ?o OPTIONAL { ?s :q ?w }"
PATTERN_STAR = "?s :p ?o . ?s :q ?w"  # a star: every pattern's subject ?s (design note 177)
PATTERN_ANCHORED = ":a :p ?s . ?s :q ?o . :a :q ?w"  # reached from :a (design note 180)


@st.composite
def _queries(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(sorted(_QUERIES)))
    return _QUERIES[kind](draw, EXPRS)


def _bind(draw: st.DrawFn, e: Exprs) -> dict[str, Any]:
    pattern = draw(st.sampled_from([PATTERN_P, PATTERN_PQ, PATTERN_OPT, PATTERN_STAR,
                                    PATTERN_ANCHORED]))
    return {"query": f"SELECT ?s ?o ?z WHERE {{ {pattern} BIND({draw(e.value())} AS ?z) }}"}


def _text(draw: st.DrawFn, e: Exprs) -> dict[str, Any]:
    operand = draw(st.sampled_from([e.atom(), e.value(1)]))
    return {"query": f"SELECT ?s ?o ?z WHERE {{ {PATTERN_P} BIND({draw(e.text(operand))} AS ?z) }}"}


def _filter(draw: st.DrawFn, e: Exprs) -> dict[str, Any]:
    pattern = draw(st.sampled_from([PATTERN_PQ, PATTERN_OPT, PATTERN_STAR, PATTERN_ANCHORED]))
    return {"query": f"SELECT ?s ?t ?o ?w WHERE {{ {pattern} FILTER({draw(e.condition())}) }}"}


def _distinct(draw: st.DrawFn, e: Exprs) -> dict[str, Any]:
    if draw(st.booleans()):
        return {"query": "SELECT DISTINCT ?o WHERE { ?s ?p ?o }"}
    return {"query": f"SELECT DISTINCT ?z WHERE {{ {PATTERN_P} BIND({draw(e.value(1))} AS ?z) }}"}


def _join(draw: st.DrawFn, e: Exprs) -> dict[str, Any]:
    const = draw(st.sampled_from(e.consts))
    return {"query": draw(st.sampled_from([
        "SELECT ?s ?t ?o WHERE { ?s :p ?o . ?t :q ?o }",
        f"SELECT ?s WHERE {{ ?s ?p {const} }}",
        f"SELECT ?s ?o WHERE {{ ?s :p ?o VALUES ?o {{ {const} }} }}",
        "SELECT ?s ?o WHERE { ?s :p ?o . ?s :q ?o }",
    ]))}


def _order(draw: st.DrawFn, e: Exprs) -> dict[str, Any]:
    pattern, variables = draw(st.sampled_from([
        ("?s ?p ?o", ["o", "s"]), (PATTERN_OPT, ["w", "o", "s"]),
        (f"{PATTERN_P} BIND({draw(e.value(1))} AS ?z)", ["z", "s", "o"])]))
    keys = draw(st.lists(st.tuples(st.sampled_from(variables), st.booleans()), min_size=1,
                         max_size=2, unique_by=lambda k: k[0]))
    order = " ".join(f"DESC(?{v})" if desc else f"?{v}" for v, desc in keys)
    query = f"SELECT {' '.join('?' + v for v in variables)} WHERE {{ {pattern} }} ORDER BY {order}"
    limit = draw(st.none() | st.integers(0, 4))
    offset = draw(st.sampled_from([0, 0, 1, 2]))
    if limit is not None:
        query += f"\nLIMIT {limit}"
    if offset:
        query += f"\nOFFSET {offset}"
    return {"query": query, "order_vars": tuple(keys), "limit": limit, "offset": offset}


def _group(draw: st.DrawFn, e: Exprs) -> dict[str, Any]:
    key = draw(st.sampled_from(["?o", draw(e.value(1))]))
    return {"query": f"SELECT ?g (COUNT(*) AS ?n) (COUNT(DISTINCT ?s) AS ?d) WHERE "
                     f"{{ ?s ?p ?o BIND({key} AS ?g) }} GROUP BY ?g"}


# Groups whose values ``<`` orders totally, so MIN and MAX are the spec's:
# numbers but NaN, strings, timezoned dateTimes.
ORDERED = ("isNumeric(?o) && ?o = ?o", "isLiteral(?o) && DATATYPE(?o) = xsd:string",
            'DATATYPE(?o) = xsd:dateTime && TZ(?o) != ""')


def _aggregate(draw: st.DrawFn, e: Exprs) -> dict[str, Any]:
    fn = draw(st.sampled_from(["SUM", "AVG", "MIN", "MAX", "COUNT"]))
    distinct = draw(st.sampled_from(["", "DISTINCT "]))
    arg = "?o * 1.0e0" if fn == "AVG" else "?o"  # D3
    where = "?s ?p ?o"
    if fn in ("MIN", "MAX"):
        where += f" FILTER({draw(st.sampled_from(ORDERED))})"
    grouping = draw(st.sampled_from(["", " GROUP BY ?s", " GROUP BY ?p"]))
    head = "?s " if "?s" in grouping else "?p " if "?p" in grouping else ""
    # MIN/MAX of 1 and 1e0 may be either (§15.1 leaves the tie to us): by value
    return {"query": f"SELECT {head}({fn}({distinct}{arg}) AS ?a) WHERE {{ {where} }}{grouping}",
            "by_value": ("a",) if fn in ("MIN", "MAX") else ()}


def _negation(draw: st.DrawFn, e: Exprs) -> dict[str, Any]:
    cond = draw(e.condition())
    return {"query": draw(st.sampled_from([
        f"SELECT ?s ?o WHERE {{ ?s :p ?o FILTER NOT EXISTS {{ ?t :q ?w FILTER({cond}) }} }}",
        f"SELECT ?s ?o WHERE {{ ?s :p ?o FILTER EXISTS {{ ?s :q ?w FILTER({cond}) }} }}",
        f"SELECT ?s ?o WHERE {{ ?s :p ?o MINUS {{ ?s :q ?w FILTER({cond}) }} }}",
        f"SELECT ?s ?o ?w WHERE {{ ?s :p ?o OPTIONAL {{ ?t :q ?w FILTER({cond}) }} }}",
        "SELECT ?s ?o WHERE { ?s :p ?o MINUS { ?s :q ?o } }",
    ]))}


_QUERIES: dict[str, Callable[[st.DrawFn, Exprs], dict[str, Any]]] = {
    "bind": _bind, "filter": _filter, "distinct": _distinct, "join": _join, "order": _order,
    "group": _group, "aggregate": _aggregate, "negation": _negation, "text": _text}
EXPRS = Exprs()
QUERIES = _queries()  # templates: ``render`` puts a case's terms in


# ----------------------------------------------------------------- compare


Row = tuple[tuple[str, str], ...]


def ours(rows: Sequence[dict[str, Identifier]], variables: Sequence[str],
         by_value: Sequence[str] = ()) -> list[Row]:
    return [tuple(sorted((v, _key(r[v], v in by_value)) for v in variables
                         if r.get(v) is not None)) for r in rows]


def theirs(store: ox.Store, query: str, variables: Sequence[str],
           by_value: Sequence[str] = ()) -> list[Row]:
    found = store.query(PREFIXES + query)
    assert isinstance(found, ox.QuerySolutions)
    return [tuple(sorted((v, _key(from_ox(s[v]), v in by_value)) for v in variables
                         if s[v] is not None)) for s in found]


def _key(t: Identifier, by_value: bool) -> str:
    """The term in pyoxigraph's form, or for ``by_value`` a number's or an
    instant's value."""
    if by_value:
        from views.compare import datetime_value
        from views.terms import ExprError, numeric_value

        try:
            return f"={float(numeric_value(t))}"
        except ExprError:
            pass
        try:
            moment = datetime_value(t)
            return f"={moment.instant.normalize()}{'' if moment.tz is None else 'Z'}"
        except ExprError:
            pass
    return ox_form(t)


def multiset_problem(a: list[Row], b: list[Row]) -> str | None:
    if Counter(a) == Counter(b):
        return None
    extra = list((Counter(a) - Counter(b)).elements())[:3]
    missing = list((Counter(b) - Counter(a)).elements())[:3]
    return f"ours has {len(a)} rows, pyoxigraph {len(b)}: extra {extra}, missing {missing}"


@cache
def ox_less(a: str, b: str) -> bool:
    """pyoxigraph's ``<`` between two terms in its N-Triples forms (an error,
    or terms that are not literals: False)."""
    if not (a.startswith('"') and b.startswith('"')):
        return False
    found = list(_VALUES.query(f"SELECT ?r {{ BIND(({a} < {b}) AS ?r) }}"))
    r = found[0]["r"]
    return r is not None and r.value == "true"


def _rank(form: str | None) -> int:
    """SPARQL 1.1 §15.1: unbound < blank node < IRI < literal."""
    if form is None:
        return 0
    return {"_": 1, "<": 2}.get(form[0], 3)


def before(a: str | None, b: str | None) -> bool:
    """``a`` must sort before ``b`` (ascending) by the spec and pyoxigraph's ``<``."""
    if _rank(a) != _rank(b):
        return _rank(a) < _rank(b)
    if a is None or b is None or a == b or _rank(a) == 1:
        return False
    return a[1:-1] < b[1:-1] if _rank(a) == 2 else ox_less(a, b)  # IRIs by their text, not `>`


def inversion(rows: list[Row], keys: Sequence[tuple[str, bool]]) -> str | None:
    """A pair of rows out of ORDER BY order: for i < j, the first key on which
    they hold different terms must not put row j strictly first. Keys with
    equal values in different forms, or incomparable ones, leave the order
    to the implementation (§15.1), so the check stops there."""
    for i in range(len(rows)):
        for j in range(i + 1, len(rows)):
            if _first_difference(rows[i], rows[j], keys) == "after":
                return f"row {j} {rows[j]} should come before row {i} {rows[i]}"
    return None


def _first_difference(x: Row, y: Row, keys: Sequence[tuple[str, bool]]) -> str:
    dx, dy = dict(x), dict(y)
    for var, desc in keys:
        a, b = dx.get(var), dy.get(var)
        if a == b:
            continue
        lo, hi = (b, a) if desc else (a, b)
        if before(lo, hi):
            return "before"
        if before(hi, lo):
            return "after"
        return "free"
    return "tied"


# ------------------------------------------------------------------ a case


Changes = list[tuple[tuple, int]]  # ((None, s, p, o), ±1)
Maintain = Callable[[Changes], Any]  # applies a batch, answers the view's K-set


def check_case(case: Case, maintain: Maintain,
               problem: Callable[[Any, Any, Any, ox.Store], str | None] | None = None) -> None:
    """Feed the case's batches to ``maintain`` (a maintained view of its
    query) and compare its solutions after every batch with pyoxigraph's
    from scratch (by ``problem``, default ``compare``)."""
    from views.compile import compiled

    q = compiled(PREFIXES + case.query).query
    store = ox.Store()
    for n, batch in enumerate(case.batches):
        changes: Changes = [((None, *case.triples[i]), sign) for i, sign in batch]
        kset = maintain(changes)
        for quad, sign in changes:
            (store.add if sign > 0 else store.remove)(ox_quad(quad))
        found = (problem or compare)(case, q, kset, store)
        if found:
            raise AssertionError(f"after batch {n} of {len(case.batches)}: {found}\n"
                                 f"{describe(case)}")


def compare(case: Case, q: Any, kset: Any, store: ox.Store) -> str | None:
    from dataclasses import replace

    from views.results import solutions

    variables = q.variables
    window = ours(solutions(q, kset), variables, case.by_value)
    ox_window = theirs(store, case.query, variables, case.by_value)
    if not case.order_vars:
        return multiset_problem(window, ox_window)
    full = ours(solutions(replace(q, limit=None, offset=0), kset), variables)
    problem = multiset_problem(full, theirs(store, case.unsliced(), variables))
    problem = problem or inversion(full, case.order_vars)
    if problem:
        return problem
    if len(window) != len(ox_window):
        return f"LIMIT/OFFSET: {len(window)} rows, pyoxigraph {len(ox_window)}"
    end = len(full) if case.limit is None else case.offset + case.limit
    outside = [(o, i < case.offset) for i, o in enumerate(full)
               if i < case.offset or i >= end]
    relations = {_first_difference(o, w, case.order_vars) if first
                 else _first_difference(w, o, case.order_vars)
                 for w in window for o, first in outside}
    if relations <= {"before"}:  # the window's rows are the spec's
        return multiset_problem(window, ox_window)
    if relations <= {"before", "tied"}:  # its keys are
        keys = [v for v, _ in case.order_vars]
        return multiset_problem([_project(r, keys) for r in window],
                                [_project(r, keys) for r in ox_window])
    return None


def _project(r: Row, keys: list[str]) -> Row:
    return tuple((v, t) for v, t in r if v in keys)


def describe(case: Case) -> str:
    """The case as a regression test would state it."""
    data = "\n".join(f"  {s.n3()} {p.n3()} {o.n3()} ." for s, p, o in case.triples)
    return f"query: {case.query}\ndata:\n{data}\nbatches: {case.batches}"

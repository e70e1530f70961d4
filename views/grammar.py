"""rdflib's SPARQL grammar and prologue made to read query and update text as
SPARQL 1.1 §19 says, applied once on import: ``views.parse`` (queries) and
``server.api.ldp.patch`` (updates) import it. Each fix names what rdflib
read wrongly; the syntax fuzzer (tests/engine/test_fuzz_syntax.py) renders
one meaning in many spellings to find the next."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pyparsing import Literal as PLiteral
from pyparsing import ParserElement, Regex
from rdflib import Literal, URIRef
from rdflib.plugins.sparql import algebra
from rdflib.plugins.sparql import parser as grammar
from rdflib.plugins.sparql.parserutils import CompValue, Param
from rdflib.plugins.sparql.sparql import Prologue

from views.errors import SparqlSyntaxError
from views.iris import is_absolute, resolve
from views.scope import check


def parsed(text: str, update: bool = False) -> Any:
    """rdflib's parse tree of a query (an update), refused as
    ``SparqlSyntaxError`` where it breaks a rule rdflib does not check: a
    ``\\u`` escape naming half a character (§19.2: a surrogate is no code
    point of a string) or past the last (``\\U00110000``, where rdflib
    raised ValueError), and the scope and grouping rules (``views.scope``).
    rdflib's own syntax errors are ``ParseException``s."""
    try:
        text = grammar.expandUnicodeEscapes(text)  # once: what parseQuery / parseUpdate do first
    except ValueError:
        offset = next((m.start() for m in _LONG_ESCAPE.finditer(text)
                       if int(m.group(1), 16) > 0x10FFFF), 0)
        line = text.count("\n", 0, offset) + 1
        raise SparqlSyntaxError("a \\U escape names no code point (past U+10FFFF, SPARQL 1.1 "
                                "§19.2)", line, offset - text.rfind("\n", 0, offset)) from None
    if _SURROGATE.search(text):
        raise SparqlSyntaxError("a \\u escape names a surrogate, not a character "
                                "(SPARQL 1.1 §19.2)", 1, 1)
    tree = grammar.UpdateUnit.parse_string(text, parse_all=True)[0] if update \
        else grammar.Query.parse_string(text, parse_all=True)
    check(tree)
    return tree


_SURROGATE = re.compile("[\ud800-\udfff]")
_LONG_ESCAPE = re.compile(r"\\U([0-9A-Fa-f]{8})")


def _as(old: ParserElement, new: ParserElement) -> ParserElement:
    """``new``, skipping what ``old`` skips between tokens: rdflib set the
    comments (``# …``) on every element of its grammar at import, so an
    element put in later skips them only when told."""
    for skipped in old.ignoreExprs:
        new.ignore(skipped)
    return new


def _keep_negated_inverse_iris() -> None:
    """The IRI of a ``^iri`` inside a negated property set was dropped
    (``Comp("InversePath", "^" + (iri | A))`` has no Param, so the CompValue
    came out empty): it is kept, named ``part``."""
    for e in grammar.PathOneInPropertySet.exprs:  # type: ignore[attr-defined]
        if getattr(e, "name", None) == "InversePath":
            e.expr = _as(e.expr, PLiteral("^") + Param("part", grammar.iri | grammar.A))


def _keep_signed_numbers_as_written() -> None:
    """A signed numeric literal is the term its token spells (§19.8
    [149]–[154]: ``-0`` is ``"-0"^^xsd:integer``, a term of its own): rdflib
    negated the number (``-0`` became ``"0"``, ``-1.0e0`` ``"-1.0"``, and a
    non-canonical ``-0010.50`` raised TypeError) and dropped the sign of
    ``+1.5``. In an expression it read ``-0`` as unary minus applied to
    ``0`` (``STR(-0)`` was ``"0"``): SPARQL's tokens are longest-match, so a
    sign touching its digits is one token there too; ``- 0`` stays a
    negation, and ``?x -1`` a subtraction ([116]: the additive rule reads
    the ``-`` first)."""
    for sign, rules in (("+", (grammar.INTEGER_POSITIVE, grammar.DECIMAL_POSITIVE,
                               grammar.DOUBLE_POSITIVE)),
                        ("-", (grammar.INTEGER_NEGATIVE, grammar.DECIMAL_NEGATIVE,
                               grammar.DOUBLE_NEGATIVE))):
        for rule in rules:
            rule.set_parse_action(_signed(sign))
    grammar.UnaryExpression.exprs.insert(  # type: ignore[attr-defined]
        0, _as(grammar.NumericLiteral, grammar.NumericLiteralPositive
               | grammar.NumericLiteralNegative))


def _signed(sign: str) -> Any:
    # pyparsing reads a parse action's arity: one argument, the tokens
    return lambda tokens: Literal(sign + str(tokens[0]), datatype=tokens[0].datatype)


def _unescape_local_names() -> None:
    """A prefixed name's local part drops the backslash of each escape
    (§4.1.1.1, [173]: ``:a\\.b`` is ``<…a.b>``); rdflib kept it (an IRI
    with a backslash, refused when written). ``%xx`` stays as written
    ([171])."""
    grammar.PN_LOCAL.set_parse_action(lambda tokens: _LOCAL_ESCAPE.sub(r"\1", tokens[0]))


_LOCAL_ESCAPE = re.compile(r"\\(.)")


def _strings_take_every_escape() -> None:
    """Every quote form takes all of ECHAR ([160] ``\\ [tbnrf"']``): rdflib
    refused ``\\'`` inside ``"…"`` and ``\\"`` inside ``'…'`` (and in the
    long forms) as a syntax error."""
    echar = r"""\\[tbnrf"'\\]"""
    forms = ((rf"'''(?:(?:'|'')?(?:[^'\\]|{echar}))*'''", 3),
             (rf'"""(?:(?:"|"")?(?:[^"\\]|{echar}))*"""', 3),
             (rf"'(?:[^'\n\r\\]|{echar})*'(?!')", 1), (rf'"(?:[^"\n\r\\]|{echar})*"(?!")', 1))
    grammar.String.exprs[:] = [  # type: ignore[attr-defined]
        _as(grammar.STRING_LITERAL1, Regex(pattern).set_parse_action(_string(quote)))
        for pattern, quote in forms]


def _string(quote: int) -> Any:
    return lambda tokens: Literal(grammar.decodeUnicodeEscape(tokens[0][quote:-quote]))


def _keep_tabs() -> None:
    """A tab stays a tab: pyparsing expands tabs to spaces in the text before
    parsing unless told not to, so ``"a<TAB>b"`` was ``"a       b"``."""
    grammar.Query.parse_with_tabs()
    grammar.UpdateUnit.parse_with_tabs()


def _values_keep_their_rows() -> None:
    """``VALUES ?x { }`` is no solution and ``VALUES () { () }`` the one
    empty solution (§19.8 [62]–[64]); rdflib answered both with a bare
    list, which is neither a table nor an empty one."""
    def translate_values(v: CompValue) -> CompValue:
        rows: list[dict[Any, Any]]
        if not v.var:
            rows = [{} for _ in v.value or []]
        elif not v.value:
            rows = []
        elif not isinstance(v.value[0], list):
            rows = [{v.var[0]: value} for value in v.value]
        else:
            if any(len(values) != len(v.var) for values in v.value):
                raise SparqlSyntaxError(f"a VALUES row has not one value for each of its "
                                        f"{len(v.var)} variables (SPARQL 1.1 §10.2.1)", 1, 1)
            rows = [dict(zip(v.var, values, strict=True)) for values in v.value]
        return algebra.Values(rows)
    algebra.translateValues = translate_values


def _resolve_iris_by_rfc3986() -> None:
    """Relative IRIs resolve by RFC 3986 §5.2 against the base in force
    (§4.1.1.1): rdflib set a relative BASE as it stood (``BASE <../>`` was
    the base ``../``), kept the base's fragment for ``<>`` (``urljoin``),
    took any IRI with a colon for absolute (``<#a:b>``), and in an update
    reset the base to the request's at each operation (a BASE holds for the
    rest of the request, as a PREFIX did)."""
    absolutize = Prologue.absolutize

    def absolute(self: Prologue, iri: Any) -> Any:
        if isinstance(iri, URIRef) and self.base and not is_absolute(iri):
            return URIRef(resolve(iri, self.base))
        return absolutize(self, iri)

    def translate_prologue(p: Any, base: str | None, init_ns: Mapping[str, Any] | None = None,
                           prologue: Prologue | None = None) -> Prologue:
        if prologue is None:
            prologue = Prologue()
            prologue.base = base or ""
            for prefix, namespace in (init_ns or {}).items():
                prologue.bind(prefix, namespace)
        for x in p:
            if x.name == "Base":
                prologue.base = str(prologue.absolutize(x.iri))
            elif x.name == "PrefixDecl":
                prologue.bind(x.prefix, prologue.absolutize(x.iri))
        return prologue

    Prologue.absolutize = absolute  # type: ignore[method-assign]
    algebra.translatePrologue = translate_prologue  # type: ignore[assignment]


_keep_negated_inverse_iris()
_keep_signed_numbers_as_written()
_unescape_local_names()
_strings_take_every_escape()
_keep_tabs()
_values_keep_their_rows()
_resolve_iris_by_rfc3986()

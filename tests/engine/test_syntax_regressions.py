"""Named regressions for query text rdflib's grammar read wrongly (design
note 209, ``views.grammar``), each found by the syntax fuzzer
(tests/engine/test_fuzz_syntax.py) and checked here against the answer the
spec gives — pyoxigraph's too, for all of them."""

from __future__ import annotations

from rdflib import Literal, URIRef
from rdflib.term import Identifier

from views.compile import compiled
from views.dataset import Dataset
from views.reference import evaluate
from views.results import solutions

EX = "http://ex/"


def rows(query: str, *triples: tuple[str, str, str]) -> list[dict[str, Identifier]]:
    ds = Dataset()
    ds.apply([((None, URIRef(EX + s), URIRef(EX + p), URIRef(EX + o)), 1) for s, p, o in triples])
    q = compiled(query).query
    return [dict(r) for r in solutions(q, evaluate(q.pattern, ds))]


def test_a_relative_base_resolves_against_the_base_before_it() -> None:
    """§4.1.1.1: a relative BASE is resolved (RFC 3986 §5.2) against the
    base in force; rdflib took ``../`` for the base itself."""
    assert rows("BASE <http://ex/z/> BASE <../> SELECT ?x { BIND(<a> AS ?x) }") == \
        [{"x": URIRef("http://ex/a")}]
    assert rows("BASE <http://ex/x/y/> BASE <../../> SELECT ?s { ?s <p> ?o }",
                ("a", "p", "b")) == [{"s": URIRef("http://ex/a")}]


def test_an_empty_reference_is_the_base_without_its_fragment() -> None:
    """RFC 3986 §5.2.2: ``<>`` takes the base's path and query, not its
    fragment (``urljoin`` kept it); ``<#a:b>`` is relative though it holds
    a colon (rdflib took any colon for a scheme), and IRI("") resolves as
    ``<>`` does (§17.4.2.8)."""
    assert rows("BASE <http://ex/a#y> SELECT ?x ?y ?z "
                "{ BIND(<> AS ?x) BIND(<#a:b> AS ?y) BIND(IRI(\"\") AS ?z) }") == \
        [{"x": URIRef("http://ex/a"), "y": URIRef("http://ex/a#a:b"),
          "z": URIRef("http://ex/a")}]


def test_a_tab_in_a_string_is_a_tab() -> None:
    """§19.8 [156]–[159]: a string excludes only its quote, ``\\``, LF and
    CR; pyparsing expanded the tab to spaces before parsing."""
    assert rows('SELECT ?x ?y { BIND("a\tb" AS ?x) BIND("""c\td""" AS ?y) }') == \
        [{"x": Literal("a\tb"), "y": Literal("c\td")}]


def test_every_quote_form_takes_every_escape() -> None:
    """[160] ECHAR ``\\ [tbnrf"']`` in any quote form; ``\\'`` inside
    ``"…"`` and ``\\"`` inside ``'…'`` were syntax errors."""
    assert rows("SELECT ?a ?b ?c ?d { BIND('say \\\"hi' AS ?a) BIND(\"it\\'s\" AS ?b) "
                "BIND('''x\\\"''' AS ?c) BIND(\"\"\"y\\'\"\"\" AS ?d) }") == \
        [{"a": Literal('say "hi'), "b": Literal("it's"), "c": Literal('x"'),
          "d": Literal("y'")}]


def test_an_empty_values_block_has_no_solution() -> None:
    """§19.8 [62]–[64]: ``VALUES ?o { }`` has no row, ``VALUES () { () }``
    the one empty row; both crashed (AttributeError) or were the same."""
    data = ("a", "p", "b")
    assert rows(f"SELECT ?s {{ ?s <{EX}p> ?o VALUES ?o {{ }} }}", data) == []
    assert rows(f"SELECT ?s {{ ?s <{EX}p> ?o }} VALUES (?o ?s) {{ }}", data) == []
    assert rows(f"SELECT ?s {{ ?s <{EX}p> ?o VALUES () {{ () }} }}", data) == \
        [{"s": URIRef(EX + "a")}]
    assert rows(f"SELECT ?s {{ ?s <{EX}p> ?o VALUES () {{ }} }}", data) == []


def test_a_comment_may_stand_between_any_two_tokens() -> None:
    """§19.4: a comment is whitespace, also before the grammar rules this
    module replaces (strings, signed numbers, ``^`` in a negated set)."""
    query = ("SELECT (GROUP_CONCAT(?x ; SEPARATOR = # c\n \"|\") AS ?g) "
             "{ VALUES ?x { # c\n \"a\" # c\n -1 # c\n } FILTER(?x != # c\n -1) "
             f"FILTER NOT EXISTS {{ ?x !( # c\n ^ # c\n <{EX}p>) ?y }} }}")
    assert rows(query) == [{"g": Literal("a")}]

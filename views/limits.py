"""Bounds on what a query may ask of the engine, checked before any work
(the trust issue: a request must never take the server down). A query
nested deeper than the limit is refused before parsing — the parser and the
rewrites recurse once per level — and a query still too deep for them is
refused, not crashed on."""

from __future__ import annotations

import re
import sys

from views.errors import EngineError

# rdflib's SPARQL grammar (pyparsing) recurses ~40 frames a bracket: a query
# 25 brackets deep passed Python's default limit of 1000 frames. Pure-Python
# frames take no C stack on CPython 3.11, so the limit is raised once, to
# well above what MAX_DEPTH needs (~2,600 frames).
sys.setrecursionlimit(max(sys.getrecursionlimit(), 20_000))

MAX_DEPTH = 64  # brackets nested in a query: far beyond hand-written SPARQL
MAX_QUERY_CHARS = 100_000

# what brackets inside of do not count: IRIs, strings (long and short), comments
_SKIP = re.compile(r"""<[^<>"{}|^`\\\s]*>|'''.*?'''|\"\"\".*?\"\"\"|'(?:[^'\\\n]|\\.)*'"""
                   r'''|"(?:[^"\\\n]|\\.)*"|#[^\n]*''', re.DOTALL)
_OPEN, _CLOSE = "({[", ")}]"


class QueryTooLarge(EngineError):
    """The query is larger or more deeply nested than this server accepts."""


def depth(text: str) -> int:
    """How deeply brackets nest in ``text``, outside IRIs, strings and comments.

    >>> depth('SELECT * { ?s ?p "((" FILTER((?s)) }')
    3
    """
    deepest = level = 0
    for chunk in _SKIP.split(text):
        for c in chunk:
            if c in _OPEN:
                level += 1
                deepest = max(deepest, level)
            elif c in _CLOSE:
                level = max(level - 1, 0)
    return deepest


def check(text: str, max_depth: int = MAX_DEPTH, max_chars: int = MAX_QUERY_CHARS) -> None:
    """Refuse a query longer or more deeply nested than the limits."""
    if len(text) > max_chars:
        raise QueryTooLarge(f"the query has {len(text):,} characters; the limit is {max_chars:,}")
    found = depth(text)
    if found > max_depth:
        raise QueryTooLarge(f"the query nests brackets {found} deep; the limit is {max_depth}")

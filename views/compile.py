"""The compile pipeline, one pure step after another (after sqlglot's optimizer):
SPARQL text -> algebra -> normalised algebra -> schemas -> delta program
(``views.plan``).

``compile_query`` is the one gate every consumer passes: a query the engine
cannot maintain is rejected here with ``UnsupportedFeature`` (architecture
decision 7, fail closed), whether it will be maintained or evaluated once.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from views import algebra as A
from views import limits
from views.dataset import Spec, spec_of
from views.normalize import normalize
from views.parse import parse
from views.plan import Plan, plan_of
from views.schemas import Schemas, schemas


@dataclass(frozen=True, kw_only=True)
class Compiled:
    query: A.Query
    pattern: A.Pattern  # normalised
    schemas: Schemas
    plan: Plan
    spec: Spec  # the dataset it reads (its FROM clauses; named graphs or not)


def compile_query(text: str, base: str | None = None,
                  max_depth: int = limits.MAX_DEPTH) -> Compiled:
    """Parse and check a view definition.

    >>> c = compile_query("SELECT * { ?s <http://e/p> ?o MINUS { ?s <http://e/q> ?o } }")
    >>> sorted(sorted(s) for s in c.schemas)
    [['o', 's']]
    >>> compile_query("DESCRIBE <http://e/a>")
    Traceback (most recent call last):
    ...
    views.errors.UnsupportedFeature: unsupported feature: DESCRIBE query form
    """
    limits.check(text, max_depth)
    try:
        q = parse(text, base=base)
        pattern = normalize(q.pattern)
        return Compiled(query=q, pattern=pattern, schemas=schemas(pattern),
                        plan=plan_of(pattern), spec=spec_of(q, pattern))
    except RecursionError:  # a shape the depth check let through, still too deep
        raise limits.QueryTooLarge("the query is too deeply nested for this server") from None


@functools.lru_cache(maxsize=1024)
def compiled(text: str) -> Compiled:
    """``compile_query`` of a stored view definition, kept per process
    (parsing costs 15–80 ms; a compiled query is immutable)."""
    return compile_query(text)

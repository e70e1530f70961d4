"""Rows sent to Postgres as one array per column and read back with
``unnest``: how every batch statement of the storage layer takes its rows
(one statement for the whole batch, not one per row)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence


def unnest(columns: Sequence[str], alias: str = "x", prefix: str = "",
           types: Mapping[str, str] | None = None) -> str:
    """``unnest(CAST(:<prefix>c AS bigint[]), …) AS alias(c, …)``: the
    parameters named ``prefix + column`` as rows; every column a BIGINT unless
    ``types`` names its type.

    >>> unnest(["s", "sign"], "d", "i", {"sign": "smallint"})
    'unnest(CAST(:is AS bigint[]), CAST(:isign AS smallint[])) AS d(s, sign)'
    """
    casts = ", ".join(f"CAST(:{prefix}{c} AS {(types or {}).get(c, 'bigint')}[])"
                      for c in columns)
    return f"unnest({casts}) AS {alias}({', '.join(columns)})"


def columns(rows: Iterable[Sequence], names: Sequence[str], prefix: str = "") -> dict[str, str]:
    """The parameters of ``unnest(names, …, prefix)``: one array literal per
    column, of integers (term ids, counts) or booleans, None as NULL.
    Postgres reads a literal in C; psycopg dumps a list element by element
    in Python (4 ms of a 500-triple PATCH's write, design note 174).

    >>> columns([(1, 2), (3, None)], ["s", "p"], "d")
    {'ds': '{1,3}', 'dp': '{2,NULL}'}
    """
    rows = list(rows)
    return {prefix + c: literal([r[i] for r in rows]) for i, c in enumerate(names)}


def literal(values: Sequence[int | bool | None]) -> str:
    """An array literal of integers or booleans (None: NULL) for ``CAST(… AS
    <type>[])``.

    >>> literal([1, None, True])
    '{1,NULL,True}'
    """
    if None in values:
        return "{" + ",".join("NULL" if v is None else str(v) for v in values) + "}"
    return "{" + ",".join(map(str, values)) + "}"


def bytes_literal(values: Sequence[bytes]) -> str:
    r"""An array literal of byte strings for ``CAST(… AS bytea[])``, each in
    bytea's hex form (its backslash escaped for the array's syntax).

    >>> print(bytes_literal([b"\x01\xff", b"a"]))
    {"\\x01ff","\\x61"}
    """
    return "{" + ",".join(f'"\\\\x{v.hex()}"' for v in values) + "}"

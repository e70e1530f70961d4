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


def columns(rows: Iterable[Sequence], names: Sequence[str], prefix: str = "") -> dict[str, list]:
    """The parameters of ``unnest(names, …, prefix)``: one list per column.

    >>> columns([(1, 2), (3, 4)], ["s", "p"], "d")
    {'ds': [1, 3], 'dp': [2, 4]}
    """
    rows = list(rows)
    return {prefix + c: [r[i] for r in rows] for i, c in enumerate(names)}

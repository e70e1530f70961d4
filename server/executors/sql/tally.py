"""Group tallies (design note 181). COUNT, SUM and AVG, none DISTINCT, are
computed from sums over a group's members that a batch changes by its
delta's rows alone: the members' multiplicity, each COUNT's bound members,
and for each SUM's or AVG's variable its values, its erring members, its
members of each numeric family (integer, decimal, float, double), its
NaNs and infinities, the exact sum of its integers and decimals and that
of its finite floats and doubles (scaled, ``sums``). The highest family
present, which is not a sum, is read from the families' counts. An
extreme (MIN, MAX, a SAMPLE of a variable) changes only when a member
beyond it comes or the member holding it goes: its sort key is kept, and
a group the batch takes such a member from is read from its members.

The rendered statement keeps them per group in the node's tally table
(``storage.krel.create_tally``), each row stamped with the view's
``tally_epoch`` (migration 0032). A batch reads the rows of the current
epoch for the groups it touches; a touched group without one is counted
from its old members, as every group was before; every touched group's
new tallies are written back (a group left with no member deleted). Every
job that ends otherwise than by the rendered statement moves the epoch on
(``storage.views_repo.closing``): rows written before a change the
statement did not make are never read again.

A group that keeps none (it has a DISTINCT count, or no table is given)
computes the same sums over all its members (``grouped`` without a table
read): one way to every group's aggregates.

Multiplicities of a node's solutions are never negative, so a sum of a
member's features weighted by its multiplicity is positive exactly when
some member present has the feature — what the aggregates ask (``sums``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from server.executors.sql.sums import FAMILIES, SPECIAL
from storage.krel import column_names, key_columns

EPOCH = "(SELECT tally_epoch FROM views WHERE id = :v)"  # the view's (a statement parameter)
_FAMILIES = range(len(FAMILIES))


@dataclass(frozen=True)
class Aggregates:
    """What a group's tallies hold: its COUNTs (none DISTINCT), the
    variables its SUMs and AVGs read, and its extremes (MIN, MAX, a SAMPLE
    of a variable not a key: ``"min"`` or ``"max"`` and the index of the
    variable read among theirs)."""

    counts: int
    summed: int
    extremes: tuple[tuple[str, int], ...] = ()


def layout(a: Aggregates) -> list[tuple[str, str]]:
    """The tally columns (name, SQL type) of a group's aggregates ``a``: its
    sums, then each extreme's sort key (NULL: no member binds its variable)."""
    out = [("n", "BIGINT NOT NULL"), *((f"cnt{i}", "BIGINT NOT NULL") for i in range(a.counts))]
    for j in range(a.summed):
        out += [(f"vals{j}", "BIGINT NOT NULL"), (f"errs{j}", "BIGINT NOT NULL"),
                *((f"fam{j}_{q}", "BIGINT NOT NULL") for q in _FAMILIES),
                *((f"{name}{j}", "BIGINT NOT NULL") for name, _ in SPECIAL),
                (f"exact{j}", "NUMERIC NOT NULL"), (f"scaled{j}", "NUMERIC NOT NULL")]
    return out + [(f"ext{r}", "TEXT") for r in range(len(a.extremes))]


def _features(counts: Sequence[tuple[str, bool]], summed: int) -> list[tuple[str, str]]:
    """Each tally column's value for one member of multiplicity 1, over a
    member row (``sums.sums_members``' columns for the summed variables;
    ``counts``: each COUNT's condition, but a DISTINCT one's, not a sum)."""
    out = [("n", "1"), *((f"cnt{i}", f"CASE WHEN {b} THEN 1 ELSE 0 END")
                         for i, (b, distinct) in enumerate(counts) if not distinct)]
    for j in range(summed):
        out += [(f"vals{j}", "1"), (f"errs{j}", f"CASE WHEN f{j} IS NULL THEN 1 ELSE 0 END"),
                *((f"fam{j}_{q}", f"CASE WHEN f{j} = {q} THEN 1 ELSE 0 END") for q in _FAMILIES),
                *((f"{name}{j}", f"CASE WHEN f{j} >= 2 AND d{j} = '{v}' THEN 1 ELSE 0 END")
                  for name, v in SPECIAL),
                (f"exact{j}", f"CASE WHEN f{j} <= 1 THEN x{j} ELSE 0 END"),
                (f"scaled{j}", f"coalesce(b{j}, 0)")]
    return out


def cached(touched: str, keys: Sequence[str], table: str, a: Aggregates,
           gone: str | None = None) -> str:
    """The touched groups' tallies of the current epoch (``keys``: the
    groups' key columns in ``touched``), but for a group whose extreme
    the batch may have taken: one of its members ``gone`` (the delta's
    rows of negative k, each extreme's variable's sort key ``h0`` …) holds
    it. Its extremes are read from its members again; the others' are
    their old ones or a new member's beyond them."""
    names = [c for c, _ in layout(a)]
    lost = ""
    if a.extremes and gone is not None:
        held = " OR ".join(f"g.h{j} = t.ext{r}" for r, (_, j) in enumerate(a.extremes))
        lost = f" AND NOT EXISTS (SELECT 1 FROM {gone} AS g WHERE {_same(keys, 'g', 'x')} AND ({held}))"
    return (f"SELECT {', '.join([*(f'x.{k}' for k in keys), *(f't.{c}' for c in names)])} "
            f'FROM {touched} AS x JOIN "{table}" AS t ON {_stored(keys, "x")} '
            f"AND t.epoch = {EPOCH}{lost}")


def missed(touched: str, keys: Sequence[str], have: str) -> str:
    """The touched groups without tallies of the current epoch."""
    return (f"SELECT x.* FROM {touched} AS x "
            f"WHERE NOT EXISTS (SELECT 1 FROM {have} AS c WHERE {_same(keys, 'c', 'x')})")


def grouped(source: str, keys: Sequence[str], have: str | None,
            counts: Sequence[tuple[str, bool]], a: Aggregates, written: bool = False) -> str:
    """The groups' old and new aggregates' inputs from ``source`` (member
    rows with ``ko``, old members of the groups ``have`` lacks — of every
    group without ``have`` — and ``kd``, the batch's), named as
    ``render.Renderer.group`` reads them (``o_``, ``n_``, ``o0`` …,
    ``sums.term``'s), with the new tallies (``ln_…``). ``counts``: per
    COUNT, its condition, or what a DISTINCT one counts (not a sum: only
    without ``have``). An exact sum is read without the trailing zeros of
    members gone (3 + 1.5 − 1.5 is the integer 3, not 3.0), as a sum of the
    members present would be. With ``have`` or ``written``, the new
    tallies are columns too (``ln_…``: ``writes``, ``filled``)."""
    summed = a.summed
    features = _features(counts, summed)
    sums = [f"sum(({f}) * {k}) AS {side}{c}" for c, f in features
            for side, k in (("a_", "ko"), ("d_", "kd"))]
    for r, (pick, j) in enumerate(a.extremes):  # old, among the batch's, new
        sums += [f'{pick}(h{j} COLLATE "C") FILTER (WHERE {k}) AS {side}ext{r}'
                 for side, k in (("a_", "ko > 0"), ("d_", "kd > 0"), ("n_", "ko + kd > 0"))]
    for i, (what, distinct) in enumerate(counts):  # a DISTINCT count counts values present
        if distinct:
            sums += [f"count({what}) FILTER (WHERE ko > 0) AS lo_cnt{i}",
                     f"count({what}) FILTER (WHERE ko + kd > 0) AS ln_cnt{i}"]
    inner = (f"SELECT {', '.join([*keys, *sums])} FROM {source}"
             + (f" GROUP BY {', '.join(keys)}" if keys else ""))
    sides = [f"a.{c}_cnt{i}" for i, (_, distinct) in enumerate(counts) if distinct
             for c in ("lo", "ln")]
    for c, _ in features:
        old = f"a.a_{c}" if have is None else f"coalesce(c.{c}, 0) + a.a_{c}"
        sides += [f"{old} AS lo_{c}", f"{old} + a.d_{c} AS ln_{c}"]
    for r, (pick, _) in enumerate(a.extremes):  # a group read keeps its extreme or passes it
        beyond = "greatest" if pick == "max" else "least"
        sides += [f"a.a_ext{r} AS lo_ext{r}", f"a.n_ext{r} AS ln_ext{r}"] if have is None else [
            f"CASE WHEN c.n IS NULL THEN a.a_ext{r} ELSE c.ext{r} END AS lo_ext{r}",
            (f'CASE WHEN c.n IS NULL THEN a.n_ext{r} ELSE {beyond}(c.ext{r} COLLATE "C", '
             f"a.d_ext{r}) END AS ln_ext{r}")]
    lin = (f"SELECT {', '.join([*(f'a.{k}' for k in keys), *sides])} FROM ({inner}) AS a"
           + ("" if have is None else f" LEFT JOIN {have} AS c ON {_same(keys, 'c', 'a')}"))
    named = ["lo_n AS o_", "ln_n AS n_"]
    named += [f"l{s}_cnt{i} AS {s}{i}" for i in range(len(counts)) for s in "on"]
    for j in range(summed):
        for s in "on":
            family = " ".join(f"WHEN l{s}_fam{j}_{q} > 0 THEN {q}" for q in reversed(_FAMILIES))
            named += [f"l{s}_vals{j} AS {s}_c{j}", f"l{s}_errs{j} AS {s}_e{j}",
                      f"CASE {family} END AS {s}_f{j}", f"trim_scale(l{s}_exact{j}) AS {s}_x{j}",
                      f"l{s}_scaled{j} AS {s}_b{j}",
                      *(f"l{s}_{name}{j} AS {s}_{name}{j}" for name, _ in SPECIAL)]
    named += [f"l{s}_ext{r} AS {s}_r{r}" for r in range(len(a.extremes)) for s in "on"]
    new = [] if have is None and not written else [f"ln_{c}" for c, _ in layout(a)]
    return f"SELECT {', '.join([*keys, *named, *new])} FROM ({lin}) AS l"


def writes(table: str, keys: Sequence[str], sums: str, a: Aggregates, tag: str,
           gate: str) -> list[str]:
    """The CTEs writing every touched group's new tallies (``sums``: their
    rows, ``grouped``'s), stamped with the current epoch, and deleting those
    of a group left with no member; each gated by ``gate``."""
    names = [c for c, _ in layout(a)]
    sets = ", ".join(f"{c} = excluded.{c}" for c in ["epoch", *names])
    return [(f"tw{tag} AS ({_insert(table, keys, sums, a, EPOCH)}{gate} "
             f"ON CONFLICT ({', '.join(key_columns(keys))}) DO UPDATE SET {sets})"),
            (f'td{tag} AS (DELETE FROM "{table}" AS t USING {sums} AS g '
             f"WHERE {_stored(keys, 'g')} AND g.n_ <= 0{gate})")]


def filled(table: str, keys: Sequence[str], sums: str, a: Aggregates) -> str:
    """The INSERT of every group's tallies (``sums``: ``grouped``'s rows
    over all members, ``written``) into the empty ``table``, stamped with
    the epoch after the current one: a job that rebuilt the view's state
    moves the epoch on as it ends (``storage.views_repo.closing``), so
    they are read from its end on, and a job rolled back takes them with it."""
    return _insert(table, keys, f"({sums})", a, f"{EPOCH} + 1")


def _insert(table: str, keys: Sequence[str], sums: str, a: Aggregates, epoch: str) -> str:
    """The groups' new tallies (``sums``' rows) inserted into ``table``,
    stamped with ``epoch``: those of a group with a member."""
    names = [c for c, _ in layout(a)]
    values = [key_id(f"g.{k}") for k in keys] or ["TRUE"]
    return (f'INSERT INTO "{table}" AS t ({", ".join([*key_columns(keys), "epoch", *names])}) '
            f"SELECT {', '.join([*values, epoch, *(f'g.ln_{c}' for c in names)])} "
            f"FROM {sums} AS g WHERE g.n_ > 0")


def key_id(x: str) -> str:
    """A group key's id (SQL ``x``) with 0 for unbound — term ids start at
    1 — as tallies store it; compared so, "both unbound or equal" is an
    equality a hash join takes (design note 184)."""
    return f"coalesce({x}, 0)"


def _same(keys: Sequence[str], a: str, b: str) -> str:
    """Rows ``a`` and ``b`` are of one group (an unbound key equals an unbound
    one): their ``key_id``s equal. Not ``IS NOT DISTINCT FROM``, which no
    hash join takes: a batch touching 1,174 groups joined them with their
    tallies by nested loops, 170 of 188 ms (design note 184)."""
    return " AND ".join(f"{key_id(f'{a}.{k}')} = {key_id(f'{b}.{k}')}" for k in keys) or "TRUE"


def _stored(keys: Sequence[str], row: str) -> str:
    """A tally row ``t`` is the group of ``row`` (unbound keys stored as 0)."""
    return " AND ".join(f"t.{c} = {key_id(f'{row}.{k}')}" for c, k
                        in zip(column_names(range(len(keys))), keys, strict=True)) or "t.unit"

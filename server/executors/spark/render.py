"""The Spark plan of a view: its delta-program nodes rendered to PySpark
DataFrames, evaluated set-at-a-time on the view's input graph (decision 12 of
docs/DESIGN-NOTES.md; ``server.executors.spark.job`` runs it as a job).

- Variables are columns of term ids (decision 2); a K-relation is one
  DataFrame per schema (decision 3), columns sorted by variable, plus ``k``.
- Joins, unions, projections, DISTINCT, OPTIONAL's unmatched side and MINUS
  are Spark joins on ids. Expressions (FILTER, BIND, the OPTIONAL filter,
  grouping and aggregates) run in Python UDFs through ``views.expr`` and
  ``views.aggregates`` — the engine's own semantics, on decoded terms.
- EXISTS { P } becomes a flag per mapping: P joined with the mappings it
  is tested on (P of BGPs, joins and filters; substitution semantics equals
  the join there).
- Terms an expression computes get the dictionary's id when the dictionary
  has them, else a provisional negative id derived from their digest; the
  worker adds them to the dictionary when it merges.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from rdflib.term import Identifier

import views.grammar  # noqa: F401  (keeps literals' lexical forms in the UDF workers too)
from server.executors.spark.closure import closure
from server.executors.spark.config import NotOnSpark
from views import algebra as A
from views import plan as P
from views.aggregates import group_key, group_row
from views.expr import truth, try_evaluate
from views.kset import Mu, mu
from views.terms import digest, fields_of, term_of

DataFrame = Any  # pyspark.sql.DataFrame; pyspark is imported lazily
Frames = dict[frozenset[str], DataFrame]


def col(v: str) -> str:
    """The column of variable ``v`` (any SPARQL name, blank-node variables too)."""
    return "v_" + v.encode("utf-8").hex()


def provisional_id(d: bytes) -> int:
    """The id of a computed term the dictionary lacks: negative, from its
    digest (the same formula as ``_provisional`` in Spark)."""
    return -int.from_bytes(d[:7], "big") - 1


# ----------------------------------------------------------- the renderer


class Evaluator:
    """Renders a view's node DAG to DataFrames over ``triples`` (s, p, o ids
    of the view's input graph) and ``terms`` (the dictionary: id, kind,
    lexical, datatype, lang, digest). ``ids`` gives the dictionary ids of
    constants (unknown ones left out)."""

    def __init__(self, spark: Any, triples: DataFrame, terms: DataFrame,
                 ids: Callable[[list], dict]) -> None:
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        self.F, self.T = F, T
        self.spark, self.triples, self.terms = spark, triples, terms
        self.ids = ids
        self.term_type = T.StructType([
            T.StructField("kind", T.IntegerType()), T.StructField("lexical", T.StringType()),
            T.StructField("datatype", T.StringType()), T.StructField("lang", T.StringType()),
            T.StructField("digest", T.BinaryType())])
        self.extra: DataFrame | None = None  # computed terms the dictionary lacks

    # --- the program

    def run(self, plan: P.Plan) -> dict[str, Frames]:
        """Every stored node's output on the input graph, by node id."""
        self._constants(plan.nodes)
        out: dict[str, Frames] = {}
        by_node: dict[str, Frames] = {}
        for n in plan.nodes:
            frames = self._node(n, by_node)
            if isinstance(n, P.Scan) and plan.stored(n):
                frames = self._keep(frames)
            by_node[n.id] = frames
            if plan.stored(n):
                out[n.id] = frames
        return out

    def _node(self, n: P.Node, done: dict[str, Frames]) -> Frames:
        kids = [done[c.id] for c in n.children]
        match n:
            case P.Scan():
                return self._bgp(list(n.triples))
            case P.Values():
                return self._keep(self._values(n.rows))
            case P.Join():
                return self._keep(self._join(kids[0], kids[1], n.expr))
            case P.Diff():
                if n.graph_var is not None:
                    raise NotOnSpark("MINUS with a GRAPH variable")
                return self._keep(self._diff(kids[0], kids[1], n.expr, n.minus))
            case P.Union():
                return self._keep(self._union([*kids[0].items(), *kids[1].items()]))
            case P.Filter():
                return self._keep({s: self._filter(df, s, n.expr) for s, df in kids[0].items()})
            case P.Extend():
                return self._keep(self._extend(kids[0], n.var, n.expr))
            case P.Project():
                keep = set(n.vars)
                return self._keep(self._union([(s & keep, df.select(*self._cols(s & keep), "k"))
                                               for s, df in kids[0].items()]))
            case P.Distinct():
                return self._keep({s: self._sum(s, df).withColumn("k", self.F.lit(1).cast("long"))
                                   for s, df in kids[0].items()})
            case P.Group():
                return self._keep(self._group(kids[0], n))
            case P.Closure():
                return self._keep(closure(self.F, n, kids[0], self.const_ids, col,
                                          self._materialise, lambda s: self._frame(s, [])))
        raise NotOnSpark(f"{type(n).__name__} on Spark")

    def _keep(self, frames: Frames) -> Frames:
        """A node's output: one row per mapping (k summed, zeros dropped),
        materialised with its lineage cut, so parents and the write reuse it
        and every plan stays the size of one node (lazily cached frames keep
        their lineage: with the children OPTIONAL and EXISTS share, planning
        took minutes or ran out of memory). Empty schemas are dropped: seven
        BINDs would otherwise make 2^7 schema frames."""
        out = {}
        for s, df in frames.items():
            df = self._materialise(self._sum(s, df).where(self.F.col("k") != 0))
            if not df.isEmpty():  # an empty schema would double again at every BIND
                out[s] = df
        return out

    @staticmethod
    def _materialise(df: DataFrame) -> DataFrame:
        """Computed now, lineage cut (a Spark job, ~0.27 s on W3C-sized data);
        the blocks go when the frame is garbage (spark.cleaner)."""
        return df.localCheckpoint(eager=True)

    def _sum(self, s: frozenset[str], df: DataFrame) -> DataFrame:
        return df.groupBy(*self._cols(s)).agg(self.F.sum("k").cast("long").alias("k"))

    @staticmethod
    def _cols(s: Iterable[str]) -> list[str]:
        return [col(v) for v in sorted(s)]

    def _frame(self, s: frozenset[str], rows: list[tuple]) -> DataFrame:
        """A K-relation of schema ``s`` from (ids…, k) tuples."""
        T = self.T
        fields = [T.StructField(c, T.LongType()) for c in [*self._cols(s), "k"]]
        return self.spark.createDataFrame(rows, T.StructType(fields))

    def _unit(self) -> DataFrame:
        """The K-set holding the empty mapping once."""
        return self.spark.range(1).select(self.F.lit(1).cast("long").alias("k"))

    def _union(self, parts: Iterable[tuple[frozenset[str], DataFrame]]) -> Frames:
        out: Frames = {}
        for s, df in parts:
            df = df.select(*self._cols(s), "k")
            out[s] = out[s].unionByName(df) if s in out else df
        return out

    # --- leaves

    def _constants(self, nodes: tuple[P.Node, ...]) -> None:
        consts = [x for n in nodes if isinstance(n, P.Scan) for tp in n.triples
                  for x in (tp.s, tp.p, tp.o) if not A.is_var(x)]
        consts += [x for n in nodes if isinstance(n, P.Closure)
                   for x in (n.subject, n.object) if not A.is_var(x)]
        for n in nodes:
            if isinstance(n, (P.Filter, P.Extend)):
                consts += [x for e in A.walk_expr(n.expr) if isinstance(e, A.Exists)
                           for tp in A.triple_patterns(e.pattern)
                           for x in (tp.s, tp.p, tp.o) if not A.is_var(x)]
        self.const_ids = self.ids(consts)

    def _bgp(self, tps: list[A.TriplePattern]) -> Frames:
        F = self.F
        frame: DataFrame | None = None
        bound: set[str] = set()
        every = frozenset(v for t in tps for v in (t.s, t.p, t.o) if A.is_var(v))
        for tp in tps:
            if tp.g is not None:
                raise NotOnSpark("GRAPH")
            df, conds = self.triples, []
            names: dict[str, str] = {}
            for pos, x in (("s", tp.s), ("p", tp.p), ("o", tp.o)):
                if A.is_var(x):
                    if x in names:
                        conds.append(F.col(pos) == F.col(names[x]))
                    else:
                        names[x] = pos
                elif x in self.const_ids:
                    conds.append(F.col(pos) == F.lit(self.const_ids[x]))
                else:  # a constant the dictionary lacks: no match
                    return {every: self._frame(every, [])}
            for c in conds:
                df = df.where(c)
            df = df.select(*[F.col(pos).alias(col(v)) for v, pos in names.items()])
            shared = [col(v) for v in names if v in bound]
            if frame is None:
                frame = df
            elif shared:
                frame = frame.join(df, on=shared)
            else:
                frame = frame.crossJoin(df)
            bound |= set(names)
        if frame is None:
            return {frozenset(): self._unit()}
        return {frozenset(bound): frame.withColumn("k", F.lit(1).cast("long"))}

    def _values(self, values: tuple[tuple[tuple[str, Identifier], ...], ...]) -> Frames:
        rows: dict[Mu, int] = {}
        for r in values:
            rows[mu(dict(r))] = rows.get(mu(dict(r)), 0) + 1
        terms = {t for m in rows for _, t in m}
        known = self.ids(list(terms))
        new = [t for t in terms if t not in known]
        ids = {**known, **{t: provisional_id(digest(t)) for t in new}}
        if new:
            self._add_extra(self.spark.createDataFrame(
                [(ids[t], *fields_of(t), digest(t)) for t in new],
                "id long, kind int, lexical string, datatype string, lang string, digest binary"))
        by_schema: dict[frozenset[str], list[tuple]] = {}
        for m, k in rows.items():
            s = frozenset(v for v, _ in m)
            d = dict(m)
            by_schema.setdefault(s, []).append((*[ids[d[v]] for v in sorted(s)], k))
        return {s: self._frame(s, data) for s, data in by_schema.items()}

    # --- binary

    def _join(self, left: Frames, right: Frames, expr: A.Expr | None) -> Frames:
        F = self.F
        parts = []
        for sl, dl in left.items():
            for sr, dr in right.items():
                shared = self._cols(sl & sr)
                a, b = dl.withColumnRenamed("k", "k1"), dr.withColumnRenamed("k", "k2")
                j = a.join(b, on=shared) if shared else a.crossJoin(b)
                j = j.withColumn("k", F.col("k1") * F.col("k2")).drop("k1", "k2")
                if expr is not None:
                    j = self._filter(j, sl | sr, expr)
                parts.append((sl | sr, j))
        return self._union(parts)

    def _diff(self, left: Frames, right: Frames, expr: A.Expr | None, minus: bool) -> Frames:
        """μ1 kept while no compatible μ2 (sharing a variable, for MINUS;
        satisfying the filter on μ1 ∪ μ2, for OPTIONAL) exists."""
        out: Frames = {}
        for sl, dl in left.items():
            keep = dl
            for sr, dr in right.items():
                shared = self._cols(sl & sr)
                if minus and not shared:
                    continue
                if expr is None:
                    blockers = dr.select(*shared).distinct()
                    keep = self._anti(keep, blockers, shared)
                else:
                    a = dl.drop("k")
                    b = dr.drop("k")
                    j = a.join(b, on=shared) if shared else a.crossJoin(b)
                    j = self._filter(j.withColumn("k", self.F.lit(1)), sl | sr, expr)
                    keep = self._anti(keep, j.select(*self._cols(sl)).distinct(), self._cols(sl))
            out[sl] = keep
        return out

    def _anti(self, df: DataFrame, blockers: DataFrame, on: list[str]) -> DataFrame:
        if on:
            return df.join(blockers, on=on, how="left_anti")
        # no shared variable: every blocker matches every row
        return df.crossJoin(self._any(blockers, "_blocked")).where(~self.F.col("_blocked")) \
            .drop("_blocked")

    def _any(self, df: DataFrame, flag: str) -> DataFrame:
        """One row, one boolean column ``flag``: whether ``df`` has a row."""
        found = df.limit(1).select(self.F.lit(True).alias(flag))
        return found.union(self.spark.createDataFrame([(False,)], f"{flag} boolean")) \
            .groupBy().agg(self.F.max(flag).alias(flag))

    # --- expressions

    def _extend(self, child: Frames, var: str, expr: A.Expr) -> Frames:
        def value_of(mu: dict, exists: Callable) -> tuple | None:
            return _packed(try_evaluate(expr, mu, exists))

        parts = []
        for s, df in child.items():
            if var in s:
                parts.append((s, df))
                continue
            df = self._with_exists(df, s, expr)
            value = self._udf(df, s, expr, value_of, self.term_type)
            df = df.withColumn("_new", value)
            parts.append((s, df.where(self.F.col("_new").isNull())))
            bound = self._resolve(df.where(self.F.col("_new").isNotNull()), "_new", col(var))
            parts.append((s | {var}, bound))
        return self._union(parts)

    def _filter(self, df: DataFrame, s: frozenset[str], expr: A.Expr) -> DataFrame:
        df = self._with_exists(df, s, expr)
        keep = self._udf(df, s, expr, lambda mu, ex: truth(expr, mu, ex), self.T.BooleanType())
        return df.where(keep).select(*self._cols(s), "k")

    def _udf(self, df: DataFrame, s: frozenset[str], expr: A.Expr,
             result: Callable[[dict, Callable], Any], returns: Any) -> Any:
        """A column of ``result(mapping, exists)`` per row: the mapping holds
        the decoded terms of the expression's variables, ``exists`` answers
        from the row's EXISTS flags."""
        names = sorted(A.expr_vars(expr) & s)
        patterns = _exists_patterns(expr)

        def f(*args: Any) -> Any:
            return result(_mapping(names, args[:len(names)]),
                          _exists_lookup(patterns, args[len(names):]))

        udf = self.F.udf(f, returns)
        args = [self.F.col("t_" + col(v)) for v in names] + [self.F.col(f) for f in _flags(expr)]
        return udf(*args)

    def _with_exists(self, df: DataFrame, s: frozenset[str], expr: A.Expr) -> DataFrame:
        """``df`` with a boolean column per EXISTS of ``expr``, then the
        expression's variables decoded into term columns."""
        F = self.F
        keys = self._cols(s)
        for flag, pattern in zip(_flags(expr), _exists_patterns(expr)):
            mappings = df.select(*keys).distinct()
            found = self._correlated(pattern, {s: mappings.withColumn("k", F.lit(1).cast("long"))})
            hits = None
            for fdf in found.values():
                h = fdf.select(*keys)
                hits = h if hits is None else hits.unionByName(h)
            if hits is None:  # the pattern matched nothing
                hits = mappings.limit(0)
            hits = hits.distinct().withColumn(flag, F.lit(True))
            df = df.join(hits, on=keys, how="left") if keys else df.crossJoin(
                self._any(hits, flag))
            df = df.fillna(False, subset=[flag])
        return self._decode(df, A.expr_vars(expr) & s)

    def _correlated(self, p: A.Pattern, outer: Frames) -> Frames:
        """P evaluated under each outer mapping (EXISTS, substitution
        semantics), as outer ⋈ P with P's filters on the joined mapping."""
        match p:
            case A.BGP():
                return self._join(outer, self._bgp(list(p.triples)), None)
            case A.Join():
                return self._correlated(p.right, self._correlated(p.left, outer))
            case A.Filter():
                inner = self._correlated(p.p, outer)
                return {s: self._filter(df, s, p.expr) for s, df in inner.items()}
        raise NotOnSpark(f"{type(p).__name__} inside EXISTS")

    # --- terms

    def _decode(self, df: DataFrame, vs: Iterable[str]) -> DataFrame:
        """Adds a struct column ``t_<col>`` with the term of each variable."""
        F = self.F
        terms = self.terms.select("id", "kind", "lexical", "datatype", "lang")
        if self.extra is not None:
            terms = terms.unionByName(self.extra.select("id", "kind", "lexical", "datatype", "lang"))
        for v in sorted(vs):
            c = col(v)
            lookup = terms.select(F.col("id").alias(c), F.struct(
                "kind", "lexical", "datatype", "lang").alias("t_" + c))
            df = df.join(lookup, on=c, how="left")
        return df

    def _resolve(self, df: DataFrame, src: str, dst: str) -> DataFrame:
        """Replace the computed-term struct column ``src`` by id column ``dst``."""
        F = self.F
        new = df.select(F.col(src).alias("t")).distinct().select("t.*")
        known = self.terms.select(F.col("digest"), F.col("id"))
        mapped = new.join(known, on="digest", how="left")
        extra = mapped.where(F.col("id").isNull()).withColumn("id", _provisional(F, "digest"))
        self._add_extra(extra.select("id", "kind", "lexical", "datatype", "lang", "digest"))
        ids = mapped.select("digest", F.coalesce(F.col("id"), _provisional(F, "digest")).alias(dst))
        return df.withColumn("digest", F.col(src + ".digest")).join(ids, on="digest") \
            .drop("digest", src)

    def _add_extra(self, df: DataFrame) -> None:
        """Computed terms join the lookup once each: a term two expressions
        compute would otherwise decode twice and double its rows' k."""
        df = df if self.extra is None else self.extra.unionByName(df)
        self.extra = self._materialise(df.dropDuplicates(["id"]))

    # --- grouping

    def _group(self, child: Frames, p: P.Group) -> Frames:
        F, T = self.F, self.T
        used: set[str] = set()
        for e in p.keys:
            used |= A.expr_vars(e)
        for a in p.aggregates:
            if a.expr is not None:
                used |= A.expr_vars(a.expr)
        everything = sorted(set().union(*child) if child else set())
        names = sorted(used & set(everything))
        rows = None
        for s, df in child.items():
            for v in everything:
                if v not in s:
                    df = df.withColumn(col(v), F.lit(None).cast("long"))
            df = self._decode(df.select(*self._cols(everything), "k"), [v for v in names if v in s])
            for v in names:
                if v not in s:
                    df = df.withColumn("t_" + col(v), F.lit(None).cast(
                        "struct<kind:int,lexical:string,datatype:string,lang:string>"))
            member = F.struct(*[F.col("t_" + col(v)).alias(col(v)) for v in names], F.col("k"))
            df = df.select(member.alias("m"))
            rows = df if rows is None else rows.unionByName(df)
        if rows is None:
            rows = self.spark.createDataFrame([], T.StructType([T.StructField(
                "m", T.StructType([T.StructField("k", T.LongType())]))]))
        if p.keys:
            key = F.udf(_group_key_fn(p, names), T.StringType())(F.col("m"))
            grouped = rows.groupBy(key.alias("_g")).agg(F.collect_list("m").alias("ms"))
        else:
            grouped = rows.groupBy().agg(F.collect_list("m").alias("ms"))
        out_vars = sorted({e.name for e in p.keys if isinstance(e, A.Var)}
                          | {a.var for a in p.aggregates})
        result = T.StructType([T.StructField(col(v), self.term_type) for v in out_vars])
        solved = grouped.select(F.udf(_group_row_fn(p, names, out_vars), result)("ms").alias("r"))
        solved = self._materialise(solved.select("r.*"))
        masks = solved.select(*[F.col(col(v)).isNotNull().alias(col(v)) for v in out_vars]) \
            .distinct().collect()
        parts = []
        for mask in masks:
            present = [v for v in out_vars if mask[col(v)]]
            df = solved
            for v in out_vars:
                df = df.where(F.col(col(v)).isNotNull() if v in present else F.col(col(v)).isNull())
            df = df.select(*[col(v) for v in present])
            for v in present:
                df = self._resolve(df.withColumnRenamed(col(v), "_t"), "_t", col(v))
            parts.append((frozenset(present), df.withColumn("k", F.lit(1).cast("long"))))
        return self._union(parts)


def _provisional(F: Any, column: str) -> Any:
    """``provisional_id`` in Spark."""
    return -F.conv(F.hex(F.substring(F.col(column), 1, 7)), 16, 10).cast("long") - 1


def _flags(expr: A.Expr) -> list[str]:
    return [f"_x{i}" for i in range(len(_exists_patterns(expr)))]


def _exists_patterns(expr: A.Expr) -> list[A.Pattern]:
    """The EXISTS patterns of ``expr`` (outermost; nested ones are decided
    inside their own pattern)."""
    out: list[A.Pattern] = []

    def walk(e: A.Expr) -> None:
        if isinstance(e, A.Exists):
            if e.pattern not in out:
                out.append(e.pattern)
            return
        for c in A.expr_children(e):
            walk(c)

    walk(expr)
    return out


def _mapping(names: list[str], terms: Iterable[Any]) -> dict:
    return {n: term_of(t["kind"], t["lexical"], t["datatype"], t["lang"])
            for n, t in zip(names, terms) if t is not None}


def _exists_lookup(patterns: list[A.Pattern], flags: Iterable[bool]) -> Callable:
    decided = dict(zip(patterns, flags))
    return lambda pattern, _mu: decided[pattern]


def _packed(t: Any) -> tuple | None:
    return None if t is None else (*fields_of(t), digest(t))


def _group_key_fn(p: P.Group, names: list[str]) -> Callable:
    def f(m: Any) -> str:
        key = group_key(p.keys, _mapping(names, [m[col(v)] for v in names]))
        return json.dumps([None if t is None else t.n3() for t in key])
    return f


def _group_row_fn(p: P.Group, names: list[str], out_vars: list[str]) -> Callable:
    def f(members: list) -> tuple:
        rows = [(_mapping(names, [m[col(v)] for v in names]), int(m["k"])) for m in members]
        key = group_key(p.keys, rows[0][0]) if rows else tuple(None for _ in p.keys)
        row = group_row(p.keys, p.aggregates, key, rows)
        return tuple(_packed(row.get(v)) for v in out_vars)
    return f

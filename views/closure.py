"""Reachability maintained under edge insertions and deletions: the state of
an arbitrary-length path (SPARQL 1.1 §18.4 ALP), as the datalog program

    T(x, y) ← E(x, y)              (r1, x a source)
    T(x, z) ← T(x, y) ∧ E(y, z)    (r2)

over explicit edges E. A source is any node (all pairs) or the nodes of one
term (a path from a constant). Nodes are opaque hashables; the state before
a batch is read through ``Before`` (so it may live in memory or in a
database), and each function returns the change of T.

- ``insert``: semi-naive evaluation from the new edges (every derivation
  uses at least one new edge or one new T fact).
- ``backward_forward``: deletions by the Backward/Forward algorithm (Motik,
  Nenov, Piro, Horrocks, AAAI 2015, Algorithms 1–3): a fact reached from a
  deleted edge is kept when backward chaining finds an alternative proof,
  confirmed by forward chaining over the checked facts only.
- ``dred``: deletions by Delete/Rederive (overdelete every consequence, then
  rederive what still has a proof): the baseline Backward/Forward is measured
  against (``podviews bench paths``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator
from typing import Protocol

from views.errors import ViewTooLarge

Node = Hashable
Pair = tuple[Hashable, Hashable]
Fact = tuple[int, Hashable, Hashable]  # (E or T, a, b)
E, T = 0, 1


class Before(Protocol):
    """The edges and the reachable pairs before the batch."""

    def out(self, x: Node) -> Collection[Node]:
        """y with an edge x → y."""
        ...

    def inn(self, y: Node) -> Collection[Node]:
        """x with an edge x → y."""
        ...

    def succ(self, x: Node) -> Collection[Node]:
        """y with T(x, y)."""
        ...

    def pred(self, y: Node) -> Collection[Node]:
        """x with T(x, y)."""
        ...

    def reach(self, x: Node, y: Node) -> bool:
        """T(x, y)."""
        ...


IsSource = Callable[[Node], bool]


def _index(pairs: Iterable[Pair]) -> tuple[dict, dict]:
    fwd: dict[Node, set[Node]] = defaultdict(set)
    back: dict[Node, set[Node]] = defaultdict(set)
    for a, b in pairs:
        fwd[a].add(b)
        back[b].add(a)
    return fwd, back


# ---------------------------------------------------------------- insertion


def insert(g: Before, removed: set[Pair], deleted: set[Pair], inserted: set[Pair],
           is_source: IsSource, max_rows: int | None = None) -> set[Pair]:
    """The pairs that the ``inserted`` edges add to T, where the edges are
    E − ``deleted`` + ``inserted`` and T is the old T − ``removed`` (the
    outcome of the batch's deletions): semi-naive, a worklist of new facts
    joined with the current edges. More than ``max_rows`` new pairs raise
    ``ViewTooLarge`` at once."""
    gone_out, _ = _index(deleted)
    new_out, _ = _index(inserted)
    _, removed_in = _index(removed)
    added: set[Pair] = set()
    added_in: dict[Node, set[Node]] = defaultdict(set)
    work: list[Pair] = []

    def has(x: Node, y: Node) -> bool:
        return (x, y) in added or ((x, y) not in removed and g.reach(x, y))

    def derive(x: Node, y: Node) -> None:
        if not has(x, y):
            if max_rows is not None and len(added) >= max_rows:
                raise ViewTooLarge(f"an arbitrary-length path connects more than {max_rows:,} "
                                   "new pairs at once")
            added.add((x, y))
            added_in[y].add(x)
            work.append((x, y))

    for u, v in inserted:
        if is_source(u):
            derive(u, v)
        for x in [x for x in g.pred(u) if x not in removed_in.get(u, ())] + list(added_in[u]):
            derive(x, v)
    while work:
        x, y = work.pop()
        for z in [*(z for z in g.out(y) if z not in gone_out.get(y, ())), *new_out.get(y, ())]:
            derive(x, z)
    return added


# --------------------------------------------------------- Backward/Forward


class BackwardForward:
    """Algorithm 1 of the B/F paper for the program above; ``removed()``
    runs it. The sets keep the paper's names: C checked, P proved, V the
    processed part of P, Y delayed, D the examined consequences of the
    deleted edges, O the processed part of D, S disproved."""

    def __init__(self, g: Before, deleted: set[Pair], is_source: IsSource,
                 still: tuple[Node, set[Node]] | None = None) -> None:
        self.g, self.deleted, self.is_source = g, deleted, is_source
        self.still = still  # (u, what u reaches without the one deleted edge u → v)
        self.C: set[Fact] = set()
        self.c_list: list[Fact] = []
        self.c_next = self.s_next = 0
        self.P: set[Fact] = set()
        self.p_list: list[Fact] = []
        self.p_next = 0
        self.V: set[Fact] = set()
        self.v_t_into: dict[Node, set[Node]] = defaultdict(set)  # y -> x with T(x,y) in V
        self.v_e_from: dict[Node, set[Node]] = defaultdict(set)  # y -> z with E(y,z) in V
        self.Y: set[Fact] = set()
        self.S: set[Fact] = set()
        self.O: set[Fact] = set()
        self.D: dict[Fact, None] = {}
        self.steps = 0  # rule instances considered: the work, implementation-independent

    def removed(self) -> set[Pair]:
        for u, v in self.deleted:                                     # line 2
            self.D[(E, u, v)] = None
        pending = list(self.D)
        i = 0
        while i < len(pending):                                       # line 3
            f = pending[i]
            i += 1
            self.check(f)                                             # line 4
            for gfact in self.c_list[self.s_next:]:                   # line 5
                if gfact not in self.P:
                    self.S.add(gfact)
            self.s_next = len(self.c_list)
            if f not in self.P:                                       # lines 6-9
                for h in self._consequences_old(f):
                    if h not in self.D:
                        self.D[h] = None
                        pending.append(h)
            self.O.add(f)                                             # line 10
        return {(a, b) for k, a, b in self.D if k == T and (k, a, b) not in self.P}  # line 11

    def _consequences_old(self, f: Fact) -> Iterator[Fact]:
        """Heads of the rule instances with ``f`` in the body, matched in
        I − O (the 'inverse semi-naive' of §3)."""
        k, a, b = f
        if k == E:
            if self.is_source(a):
                yield (T, a, b)
            for x in self.g.pred(a):
                self.steps += 1
                if (T, x, a) not in self.O:
                    yield (T, x, b)
        else:
            for z in self.g.out(b):
                self.steps += 1
                if (E, b, z) not in self.O:
                    yield (T, a, z)

    def check(self, f0: Fact) -> None:
        """checkProvability (Algorithm 2), with an explicit stack: each frame
        is a fact and the body atoms of its rule instances still to check."""
        stack: list[tuple[Fact, Iterator[Fact]]] = []

        def enter(f: Fact) -> None:
            if f in self.C:                                           # line 12
                return
            self.C.add(f)
            self.c_list.append(f)
            self.saturate()                                           # line 13
            if f not in self.P:                                       # line 14
                stack.append((f, self._supports(f)))

        enter(f0)
        while stack:
            f, body = stack[-1]
            if f in self.P:                                           # line 19
                stack.pop()
                continue
            nxt = next(body, None)
            if nxt is None:
                stack.pop()
            else:
                enter(nxt)                                            # line 18

    def _supports(self, f: Fact) -> Iterator[Fact]:
        """The body atoms of the rule instances whose head is ``f``, matched
        in I − S (lines 15–17)."""
        k, x, z = f
        if k == E:
            return
        if self.is_source(x) and (E, x, z) not in self.S and z in self.g.out(x):
            self.steps += 1
            yield (E, x, z)
        for y in _middles(self.g, x, z):
            self.steps += 1
            if (T, x, y) in self.S or (E, y, z) in self.S:
                continue
            yield (T, x, y)
            yield (E, y, z)

    def saturate(self) -> None:
        """Algorithm 3: forward chaining over the checked facts."""
        while self.c_next < len(self.c_list):                         # lines 20-22
            f = self.c_list[self.c_next]
            self.c_next += 1
            if (f[0] == E and (f[1], f[2]) not in self.deleted) or f in self.Y or \
                    self._still_reached(f):
                self._prove(f)
        while self.p_next < len(self.p_list):                         # lines 23-29
            f = self.p_list[self.p_next]
            self.p_next += 1
            if f in self.V:
                continue
            self.V.add(f)
            k, a, b = f
            if k == E:
                self.v_e_from[a].add(b)
                heads = [(T, a, b)] if self.is_source(a) else []
                heads += [(T, x, b) for x in self.v_t_into.get(a, ())]
            else:
                self.v_t_into[b].add(a)
                heads = [(T, a, z) for z in self.v_e_from.get(b, ())]
            for h in heads:
                self.steps += 1
                if h in self.C:
                    self._prove(h)
                else:
                    self.Y.add(h)

    def _still_reached(self, f: Fact) -> bool:
        """T(x, z) where u still reaches z and x reaches u: proved (a path
        to u never leaves u, so it does not use the deleted edge u → v)."""
        if self.still is None or f[0] != T:
            return False
        u, reached = self.still
        _, x, z = f
        return z in reached and ((x == u and self.is_source(u)) or self.g.reach(x, u))

    def _prove(self, f: Fact) -> None:
        if f not in self.P:
            self.P.add(f)
            self.p_list.append(f)


def backward_forward(g: Before, deleted: set[Pair], is_source: IsSource,
                     detours: bool = True) -> set[Pair]:
    """The pairs of T with no proof once the ``deleted`` edges are gone.

    With ``detours``, the first backward step is on the edges themselves: a
    deleted edge u → v whose u still reaches v over the remaining edges
    changes no pair (every path through it has a detour), so only the other
    deleted edges go to Algorithm 1 — the others stay in E for it, which
    leaves the closure the same. Inside a strongly connected community this
    finds the alternative once instead of once per source. When one edge
    u → v is left, what u still reaches without it is computed once, and
    a checked T(x, z) with z among it and T(x, u) is proved at once."""
    still = None
    if detours:
        deleted = {e for e in deleted if not _detour(g, e, deleted)}
        if not deleted:
            return set()
        if len(deleted) == 1:
            [(u, v)] = deleted
            still = (u, _reached(g, u, (u, v)))
    return BackwardForward(g, deleted, is_source, still).removed()


def _reached(g: Before, u: Node, without: Pair) -> set[Node]:
    """What ``u`` reaches over the edges but ``without``."""
    seen: set[Node] = set()
    todo = [u]
    while todo:
        a = todo.pop()
        for b in g.out(a):
            if b not in seen and (a, b) != without:
                seen.add(b)
                todo.append(b)
    return seen


def _detour(g: Before, edge: Pair, deleted: set[Pair]) -> bool:
    """Whether edge[0] reaches edge[1] without the ``deleted`` edges: a
    bidirectional breadth-first search that grows the smaller frontier, so
    it stops early when either side's reach is small (a cut found) or when a
    short detour exists."""
    u, v = edge
    fwd, back = {u}, {v}
    f_front, b_front = [u], [v]
    while f_front and b_front:
        forward = len(f_front) <= len(b_front)
        front, seen, other = (f_front, fwd, back) if forward else (b_front, back, fwd)
        nxt = []
        for a in front:
            for b in (g.out(a) if forward else g.inn(a)):
                if b in seen or ((a, b) if forward else (b, a)) in deleted:
                    continue
                if b in other:
                    return True
                seen.add(b)
                nxt.append(b)
        if forward:
            f_front = nxt
        else:
            b_front = nxt
    return False


def _middles(g: Before, x: Node, z: Node) -> Iterator[Node]:
    """y with T(x, y) and an edge y → z (the body of r2 for the head
    T(x, z)), joined from the smaller side: x's reachable nodes or z's
    in-neighbours (a hub of a hierarchy has thousands)."""
    ins, outs = g.inn(z), g.succ(x)
    if len(outs) < len(ins):
        return (y for y in outs if z in g.out(y))
    return (y for y in ins if g.reach(x, y))


# ------------------------------------------------------------------- DRed


def dred(g: Before, deleted: set[Pair], is_source: IsSource) -> set[Pair]:
    """The same as ``backward_forward``, by Delete/Rederive: every pair with
    a derivation through a deleted edge is overdeleted (DR2), then the ones
    with a one-step proof from what survives are rederived (DR4) and their
    consequences re-inserted semi-naively (DR5)."""
    over: set[Pair] = set()
    work: list[Pair] = []

    def overdelete(x: Node, y: Node) -> None:
        if (x, y) not in over:
            over.add((x, y))
            work.append((x, y))

    for u, v in deleted:                                              # DR2
        if is_source(u):
            overdelete(u, v)
        for x in g.pred(u):
            overdelete(x, v)
    while work:
        x, y = work.pop()
        for z in g.out(y):
            overdelete(x, z)
    gone_out, _ = _index(deleted)

    def edge(a: Node, b: Node) -> bool:
        return b not in gone_out.get(a, ()) and b in g.out(a)

    back: set[Pair] = set()
    for x, z in over:                                                 # DR4
        if (is_source(x) and edge(x, z)) or any(
                (x, y) not in over and z not in gone_out.get(y, ())
                for y in _middles(g, x, z)):
            back.add((x, z))
    work = list(back)
    while work:                                                       # DR5
        x, y = work.pop()
        for z in g.out(y):
            if (x, z) in over and (x, z) not in back and z not in gone_out.get(y, ()):
                back.add((x, z))
                work.append((x, z))
    return over - back


# ------------------------------------------------------------ in memory


class Reach:
    """Edges and reachable pairs held in dicts of sets: the state for the
    bench and the unit tests (the view node reads its state through
    ``views.closure_node`` instead)."""

    def __init__(self, is_source: IsSource = lambda _: True) -> None:
        self.is_source = is_source
        self.e_out: dict[Node, set[Node]] = defaultdict(set)
        self.e_in: dict[Node, set[Node]] = defaultdict(set)
        self.t_out: dict[Node, set[Node]] = defaultdict(set)
        self.t_in: dict[Node, set[Node]] = defaultdict(set)

    def out(self, x: Node) -> Collection[Node]:
        return self.e_out.get(x, ())

    def inn(self, y: Node) -> Collection[Node]:
        return self.e_in.get(y, ())

    def succ(self, x: Node) -> Collection[Node]:
        return self.t_out.get(x, ())

    def pred(self, y: Node) -> Collection[Node]:
        return self.t_in.get(y, ())

    def reach(self, x: Node, y: Node) -> bool:
        return y in self.t_out.get(x, ())

    def pairs(self) -> set[Pair]:
        return {(x, y) for x, ys in self.t_out.items() for y in ys}

    def update(self, inserted: set[Pair], deleted: set[Pair],
               delete: Callable[[Before, set[Pair], IsSource], set[Pair]] = backward_forward
               ) -> tuple[set[Pair], set[Pair]]:
        """Apply an edge change; return (added, removed) pairs of T."""
        inserted = {e for e in inserted if e[1] not in self.e_out.get(e[0], ())}
        deleted = {e for e in deleted if e[1] in self.e_out.get(e[0], ())}
        removed = delete(self, deleted, self.is_source) if deleted else set()
        added = insert(self, removed, deleted, inserted, self.is_source)
        for a, b in deleted:
            _discard(self.e_out, a, b)
            _discard(self.e_in, b, a)
        for a, b in inserted:
            self.e_out[a].add(b)
            self.e_in[b].add(a)
        for x, y in removed - added:
            _discard(self.t_out, x, y)
            _discard(self.t_in, y, x)
        for x, y in added - removed:
            self.t_out[x].add(y)
            self.t_in[y].add(x)
        return added - removed, removed - added


def _discard(index: dict[Node, set[Node]], a: Node, b: Node) -> None:
    s = index.get(a)
    if s is not None:
        s.discard(b)
        if not s:
            del index[a]

"""Web Access Control (https://solidproject.org/TR/wac): which modes an
agent holds on a resource of a pod, from the pod's ACL documents — the
resource's own (its ``acl:accessTo`` authorizations) or, failing that, the
nearest container's up the tree (its ``acl:default`` ones). Agents match by
``acl:agent``, ``acl:agentClass foaf:Agent`` (anyone) or
``acl:AuthenticatedAgent`` (anyone logged in); an authorization naming
``acl:origin`` applies to a request with an ``Origin`` only when it is one
of them. ``acl:Write`` implies ``acl:Append``.

A ``Policy`` is one version of a pod's ACL documents, parsed once; its
decisions are memoised, and a new version (every ACL write bumps it) makes a
new policy — that is the invalidation."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from rdflib import RDF, Graph, Namespace, URIRef

from storage.pods import containers_above

ACL = Namespace("http://www.w3.org/ns/auth/acl#")
FOAF_AGENT = URIRef("http://xmlns.com/foaf/0.1/Agent")
READ, WRITE, APPEND, CONTROL = "read", "write", "append", "control"
_MODES = {ACL.Read: {READ}, ACL.Write: {WRITE, APPEND}, ACL.Append: {APPEND},
          ACL.Control: {CONTROL}}
MAX_DECISIONS = 4096  # memoised per policy
MAX_POLICIES = 256  # pods whose policy is kept


@dataclass(frozen=True)
class Authorization:
    modes: frozenset[str]
    agents: frozenset[str]
    classes: frozenset[str]  # foaf:Agent, acl:AuthenticatedAgent
    origins: frozenset[str]
    access_to: frozenset[str]  # resource paths in the pod
    default: frozenset[str]  # container paths in the pod

    def grants(self, webid: str | None, origin: str | None) -> frozenset[str]:
        if self.origins and origin is not None and origin not in self.origins:
            return frozenset()
        if (str(FOAF_AGENT) in self.classes
                or (webid and (str(ACL.AuthenticatedAgent) in self.classes
                               or webid in self.agents))):
            return self.modes
        return frozenset()


def authorizations(ntriples: str, root: str) -> list[Authorization]:
    """The authorizations of one ACL document (N-Triples, written under the
    pod's root IRI ``root``); targets outside the pod are dropped."""
    g = Graph()
    g.parse(data=ntriples, format="nt")

    def paths(node: object, pred: URIRef) -> frozenset[str]:
        return frozenset(str(o)[len(root):] for o in g.objects(node, pred)  # type: ignore[arg-type]
                         if isinstance(o, URIRef) and str(o).startswith(root))

    def iris(node: object, pred: URIRef) -> frozenset[str]:
        return frozenset(str(o) for o in g.objects(node, pred))  # type: ignore[arg-type]

    out = []
    for a in set(g.subjects(RDF.type, ACL.Authorization)):
        modes = frozenset(m for o in g.objects(a, ACL.mode) for m in _MODES.get(o, ()))  # type: ignore[call-overload]
        out.append(Authorization(modes, iris(a, ACL.agent), iris(a, ACL.agentClass),
                                 frozenset(s.rstrip("/") for s in iris(a, ACL.origin)),
                                 paths(a, ACL.accessTo), paths(a, ACL.default)))
    return out


@dataclass
class Policy:
    """One version of a pod's ACL documents: path → its authorizations."""

    documents: dict[str, list[Authorization]]
    _decided: dict[tuple[str, str | None, str | None], frozenset[str]] = field(
        default_factory=dict)

    def modes(self, path: str, webid: str | None, origin: str | None) -> frozenset[str]:
        """The modes ``webid`` (None: anonymous) holds on ``path``."""
        key = (path, webid, origin)
        found = self._decided.get(key)
        if found is None:
            found = self._decide(path, webid, origin)
            if len(self._decided) >= MAX_DECISIONS:
                self._decided.clear()
            self._decided[key] = found
        return found

    def _decide(self, path: str, webid: str | None, origin: str | None) -> frozenset[str]:
        own = self.documents.get(path)
        if own is not None:
            return _union(a.grants(webid, origin) for a in own if path in a.access_to)
        for container in reversed(containers_above(path)):
            inherited = self.documents.get(container)
            if inherited is not None:
                return _union(a.grants(webid, origin) for a in inherited
                              if container in a.default)
        return frozenset()


def _union(sets: object) -> frozenset[str]:
    out: set[str] = set()
    for s in sets:  # type: ignore[attr-defined]
        out |= s
    return frozenset(out)


class Policies:
    """The policies of recently asked pods, each under its ACL version."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: OrderedDict[int, tuple[int, Policy]] = OrderedDict()

    def get(self, pod: int, version: int,
            load: Callable[[], Iterable[tuple[str, str, str]]]) -> Policy:
        """The pod's policy at ``version`` (``load()`` gives its documents'
        (path, root, N-Triples) when it is not kept)."""
        with self._lock:
            kept = self._kept.get(pod)
            if kept is not None and kept[0] == version:
                self._kept.move_to_end(pod)
                return kept[1]
        policy = Policy({path: authorizations(body, root)
                         for path, root, body in load()})
        with self._lock:
            self._kept[pod] = (version, policy)
            self._kept.move_to_end(pod)
            while len(self._kept) > MAX_POLICIES:
                self._kept.popitem(last=False)
        return policy


POLICIES = Policies()

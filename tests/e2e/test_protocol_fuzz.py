"""Randomized differential fuzzer of the Solid Protocol (LDP): random
sequences of requests — GET and HEAD in every RDF type, PUT of Turtle, of
bytes and of containers, POST, N3 Patch and SPARQL Update, DELETE, with
If-Match / If-None-Match — over a few paths that interact (``a/``,
``a/b/doc``, members POST creates…), sent to `podviews serve` (a pod's root)
and to a Community Solid Server 7 (its root storage). After each step the
answers must agree (the status and the conformance test's ``aspects``, the
body of a GET as a graph or as bytes), and then so must the state: every
path touched so far is read on both and compared as a graph, a container's
members and graph, or a file's bytes and Content-Type. A difference fails
the test unless ``KNOWN`` allows it, quoting the spec; after a known
difference that leaves the two states apart (CSS created what we refused)
the sequence ends there, passing.

``PODVIEWS_PROTOCOL_FUZZ_EXAMPLES`` sequences are run (default 3), with the seeds
``PODVIEWS_PROTOCOL_FUZZ_SEED`` (default 0), +1, …; a failure names its seed, and
``PODVIEWS_PROTOCOL_FUZZ_SEED=<seed> PODVIEWS_PROTOCOL_FUZZ_EXAMPLES=1`` replays it
alone (its own variables: the term fuzzers' counts are thousands)."""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
import pyoxigraph as ox
import pytest
from rdflib import RDF, BNode, Graph, Literal, URIRef
from rdflib.compare import isomorphic

from tests.e2e.conftest import HTTP_204, NODE, owned_pod
from tests.e2e.test_solid_conformance import DIFFERENCES, LDP, aspects

pytestmark = pytest.mark.skipif(not NODE, reason="Node.js is not installed: no Community "
                                                   "Solid Server")

EXAMPLES = int(os.environ.get("PODVIEWS_PROTOCOL_FUZZ_EXAMPLES", "3"))
SEED = int(os.environ.get("PODVIEWS_PROTOCOL_FUZZ_SEED", "0"))
STEPS = (30, 60)  # a sequence's length, at random between
# below the storage's root; '' is the root. 'a' and 'doc/' clash with 'a/' and 'doc'.
PATHS = ("", "a/", "a/b/", "doc", "file", "a/doc", "a/file", "a/b/doc", "a", "doc/")
RDF_TYPES = ("text/turtle", "application/ld+json", "application/n-triples")
STATE_ACCEPT = "text/turtle, */*;q=0.1"  # RDF as Turtle, anything else as it is
XSD = "http://www.w3.org/2001/XMLSchema#"
PREFIXES = f"@prefix xsd: <{XSD}>.\n@prefix solid: <http://www.w3.org/ns/solid/terms#>.\n"

# the terms of random triples: few, so that patches meet the triples PUT wrote;
# relative IRIs stay below the document (<../x> or </x> would leave one
# server's storage — our pods are /pods/{pod}/, CSS's storage is / — and
# could not be compared)
SUBJECTS = ("<#s>", "<#t>", "<>", "<other>")
PREDICATES = ("<#p>", "<#q>", "<http://example.org/p>")
# (no literal outside ASCII: CSS 7 serves a document a PATCH wrote with a
# Content-Length of its characters, not its bytes — RFC 9110 §8.6 counts
# octets — so its body is cut short and the rest spoils the connection)
OBJECTS = ("<#o>", "<#s>", "<sub/x>", '"a"', '"a"@en', '"a"@en-GB', '"chat"@fr', "1", "-0",
           "1.0", "1e0", '"01"^^xsd:integer', "true", '"2024-01-01"^^xsd:date',
           '"x\\"y"', '"""two\nlines"""', '""', '"a"^^xsd:string')
VARIABLES = ("?s", "?o")
SLUGS = ("m", "n", "doc", "a", "file")


# --- requests -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Request:
    """One step: ``path`` is logical (``Server.actual`` names it on a
    server); ``etag`` asks for one of the server's own ETags of the path in
    a header: (header, 'current' or 'earlier')."""

    method: str
    path: str
    headers: dict[str, str] = field(default_factory=dict)
    body: str | bytes = b""
    etag: tuple[str, str] | None = None

    def __str__(self) -> str:
        sent = {**self.headers, **({self.etag[0]: f"<{self.etag[1]} ETag>"} if self.etag else {})}
        body = self.body if isinstance(self.body, str) else repr(self.body)
        return f"{self.method} /{self.path} {sent}" + (f"\n      {body!s:.400}" if body else "")


def triple(rng: random.Random, variables: tuple[str, ...] = (), blank: bool = True) -> str:
    """A random triple; with ``variables``, some of its terms are those."""
    s = rng.choice(SUBJECTS + variables[:1] * 3 + (("_:b",) if blank else ()))
    o = rng.choice(OBJECTS + variables[1:] * 3 + (("_:b",) if blank else ()))
    return f"{s} {rng.choice(PREDICATES)} {o} ."


def triples(rng: random.Random, most: int, variables: tuple[str, ...] = (),
            blank: bool = True) -> str:
    return "\n".join(triple(rng, variables, blank) for _ in range(rng.randint(0, most)))


def n3_patch(rng: random.Random) -> str:
    """A solid:InsertDeletePatch: inserts, deletes and sometimes a
    solid:where binding ?s and ?o. An empty formula is left out, as the spec
    presumes it: CSS 7 misreads a written ``{ }`` (422 'can not contain
    blank nodes' in inserts or deletes, 409 'no matches' in where). One
    patch in ten breaks one of the spec's constraints (Solid Protocol
    §5.3.1: 'Servers MUST respond with a 422 status code')."""
    where = triples(rng, 2, VARIABLES, blank=False) if rng.random() < 0.4 else ""
    bound = tuple(v for v in VARIABLES if v in where)
    parts = {"where": where, "inserts": triples(rng, 2, bound, blank=False),
             "deletes": triples(rng, 2, bound, blank=False)}
    typed = "a solid:InsertDeletePatch"
    broken = rng.random() < 0.1 and rng.choice(("blank", "unbound", "untyped", "empty"))
    if broken == "blank":
        parts["inserts"] += " <#s> <#p> _:b ."
    elif broken == "unbound":
        parts["deletes"] += " <#s> <#p> ?unbound ."
    elif broken == "untyped":
        typed = "a solid:Patch"
    elif broken == "empty":
        parts = {}
    return PREFIXES + f"_:patch {typed}" + "".join(
        f";\n  solid:{name} {{ {f} }}" for name, f in parts.items() if f) + ".\n"


def sparql_update(rng: random.Random) -> str:
    """INSERT DATA, DELETE DATA, DELETE/INSERT … WHERE or DELETE WHERE, one
    or two of them."""
    def one() -> str:
        kind = rng.choice(("insert data", "delete data", "modify", "delete where"))
        if kind == "insert data":
            return f"INSERT DATA {{ {triples(rng, 3)} }}"
        if kind == "delete data":
            return f"DELETE DATA {{ {triples(rng, 2, blank=False)} }}"
        if kind == "delete where":
            return f"DELETE WHERE {{ {triples(rng, 2, VARIABLES, blank=False)} }}"
        return (f"DELETE {{ {triples(rng, 1, VARIABLES, blank=False)} }} "
                f"INSERT {{ {triples(rng, 2, VARIABLES)} }} "
                f"WHERE {{ {triples(rng, 2, VARIABLES, blank=False)} }}")
    return f"PREFIX xsd: <{XSD}>\n" + " ;\n".join(one() for _ in range(rng.choice((1, 1, 2))))


def condition(rng: random.Random, method: str, exists: bool
              ) -> tuple[dict[str, str], tuple[str, str] | None]:
    """Conditional headers, sometimes: the resource's current or an earlier
    ETag (each server's own), a made-up one, or ``If-None-Match: *``; If-Match
    seldom names a resource that does not exist (CSS creates it: ``IF_MATCH``)."""
    x = rng.random()
    if method in ("GET", "HEAD"):
        return ({}, ("if-none-match", "current")) if x < 0.2 else \
               ({}, ("if-match", "earlier")) if x < 0.25 else ({}, None)
    if not exists:
        return ({"if-match": rng.choice(('"stale"', "*"))}, None) if x < 0.03 else \
               ({"if-none-match": "*"}, None) if x < 0.2 else ({}, None)
    if x < 0.12:
        return {}, ("if-match", "current")
    if x < 0.18:
        return {}, ("if-match", "earlier")
    if x < 0.22:
        return {"if-match": rng.choice(('"stale"', "*"))}, None
    if x < 0.25:
        return {}, ("if-none-match", "current")
    if x < 0.4:
        return {"if-none-match": "*"}, None
    return {}, None


def non_rdf(rng: random.Random) -> tuple[str, bytes]:
    """A media type that is not RDF and a body of it."""
    if rng.random() < 0.5:
        return "text/plain", rng.choice((b"hello", b"", b"caf\xc3\xa9", b"<#a> <#b> <#c> ."))
    return "application/octet-stream", bytes(rng.randrange(256) for _ in range(rng.randint(0, 9)))


def request(rng: random.Random, paths: list[str], present: set[str]) -> Request:
    """A random step on one of ``paths`` (containers end in '/'; those in
    ``present`` exist). Bodies go to documents, seldom to containers
    (CSS drops them: ``TRANSFORMED``)."""
    containers = [p for p in paths if p == "" or p.endswith("/")]
    documents = [p for p in paths if p not in containers]
    method = rng.choices(("GET", "HEAD", "PUT", "PUT bytes", "PUT container", "POST", "PATCH n3",
                          "PATCH sparql", "DELETE"), (3, 1, 4, 2, 2, 3, 3, 3, 2))[0]
    path = rng.choice(containers if method in ("PUT container", "POST") else
                      documents if method.startswith("PUT") else paths)
    if rng.random() < 0.05:
        path = rng.choice(paths)
    headers, etag = condition(rng, method, path in present)
    if method in ("GET", "HEAD"):
        accept = rng.choice((None, *RDF_TYPES))
        return Request(method, path, {**headers, **({"accept": accept} if accept else {})},
                       etag=etag)
    if method == "PUT":
        return Request("PUT", path, {**headers, "content-type": "text/turtle"},
                       PREFIXES + triples(rng, 4), etag)
    if method == "PUT bytes":
        media, body = non_rdf(rng)
        return Request("PUT", path, {**headers, "content-type": media}, body, etag)
    if method == "PUT container":
        typed = {"content-type": "text/turtle"} if rng.random() < 0.9 else {}
        return Request("PUT", path, {**headers, **typed}, b"", etag)
    if method == "POST":
        return post(rng, path, headers, etag)
    if method == "PATCH n3":
        return Request("PATCH", path, {**headers, "content-type": "text/n3"}, n3_patch(rng), etag)
    if method == "PATCH sparql":
        return Request("PATCH", path, {**headers, "content-type": "application/sparql-update"},
                       sparql_update(rng), etag)
    return Request("DELETE", path, headers, etag=etag)


def post(rng: random.Random, path: str, headers: dict[str, str],
         etag: tuple[str, str] | None) -> Request:
    """A POST of a container, an RDF document or bytes, with a Slug or not."""
    sent = {**headers, **({"slug": rng.choice(SLUGS)} if rng.random() < 0.6 else {})}
    kind = rng.choice(("container", "rdf", "bytes"))
    if kind == "container":
        sent["link"] = f'<{LDP}BasicContainer>; rel="type"'
        return Request("POST", path, {**sent, "content-type": "text/turtle"}, b"", etag)
    if kind == "rdf":
        return Request("POST", path, {**sent, "content-type": "text/turtle"},
                       PREFIXES + triples(rng, 3), etag)
    media, body = non_rdf(rng)
    return Request("POST", path, {**sent, "content-type": media}, body, etag)


# --- the servers ----------------------------------------------------------------------------

@dataclass
class Server:
    """A storage under test: its client and root, the names it gave to
    members POST created (logical path -> its path), and the ETags it sent
    for each logical path, latest last."""

    name: str
    client: httpx.Client
    root: str
    aliases: dict[str, str] = field(default_factory=dict)
    etags: dict[str, list[str]] = field(default_factory=dict)

    def actual(self, path: str) -> str:
        return _renamed(path, self.aliases)

    def logical(self, path: str) -> str:
        return _renamed(path, {v: k for k, v in self.aliases.items()})

    def send(self, r: Request) -> httpx.Response:
        headers = dict(r.headers)
        if r.etag is not None:
            headers[r.etag[0]] = self.etag(r.path, r.etag[1])
        answer = self.client.request(r.method, self.root + self.actual(r.path), headers=headers,
                                     content=r.body)
        self.remember(r.path, answer)
        return answer

    def etag(self, path: str, which: str) -> str:
        """The last ETag seen for ``path``, or the last before that differs
        from it; a made-up one when there is none."""
        seen = self.etags.get(path, [])
        if which == "current":
            return seen[-1] if seen else '"none"'
        return next((e for e in reversed(seen) if e != seen[-1]), '"none"')

    def remember(self, path: str, answer: httpx.Response) -> None:
        if answer.is_success and "etag" in answer.headers:
            self.etags.setdefault(path, []).append(answer.headers["etag"])


def _renamed(path: str, names: dict[str, str]) -> str:
    """``path`` with its longest prefix that ``names`` renames renamed (a
    container's name prefixes its members'; a document's, only its
    fragments)."""
    for old in sorted(names, key=len, reverse=True):
        if path == old or path.startswith(old) and (old.endswith("/") or path[len(old)] == "#"):
            return names[old] + path[len(old):]
    return path


def empty(client: httpx.Client, root: str, path: str = "") -> None:
    """Delete every member below the container ``path`` of the storage at
    ``root`` (members first)."""
    r = client.get(root + path, headers={"accept": "text/turtle"})
    r.raise_for_status()
    g = Graph().parse(data=r.text, format="turtle", publicID=root + path)
    for member in sorted(str(m) for m in g.objects(URIRef(root + path), URIRef(LDP + "contains"))):
        name = member.removeprefix(root)
        if name.endswith("/"):
            empty(client, root, name)
        client.delete(member).raise_for_status()


# --- comparing ------------------------------------------------------------------------------

STORAGE = "urn:storage:"  # where both servers' storage roots are, in compared graphs
# Server-managed triples of a container listing, dropped before its graphs
# are compared (its ldp:contains are compared as a set of members):
# - CSS dates the container and each member (dc:modified) and gives each
#   member's size and media type (posix:size, ma-ont:format; posix:mtime
#   too on a file backend): we state none of them, and times differ anyway;
# - both type the container ldp:Container, ldp:BasicContainer, ldp:Resource
#   (and pim:Storage at the root); CSS also types each member (ldp:Resource,
#   a container member ldp:Container and ldp:BasicContainer, and may add
#   its media type's http://www.w3.org/ns/iana/media-types/…#Resource),
#   which we do not;
# - we name the root's owner (solid:owner), which CSS does not.
# The random triples use none of these terms, so no client triple is dropped.
MANAGED_PREDICATES = {"http://purl.org/dc/terms/modified", "http://www.w3.org/ns/posix/stat#mtime",
                      "http://www.w3.org/ns/posix/stat#size", "http://www.w3.org/ns/ma-ont#format",
                      "http://www.w3.org/ns/solid/terms#owner", LDP + "contains"}
MANAGED_TYPES = {LDP + "Resource", LDP + "Container", LDP + "BasicContainer",
                 "http://www.w3.org/ns/pim/space#Storage"}
MEDIA_TYPES = "http://www.w3.org/ns/iana/media-types/"


def graph(server: Server, body: bytes, media: str, base: str) -> Graph | str:
    """The body's triples, IRIs below the server's root renamed to the
    logical ``urn:storage:`` ones; or why they cannot be read. Parsed with
    pyoxigraph, which keeps literals' lexical forms ("01"^^xsd:integer is
    not "1"^^xsd:integer; rdflib's parsers would rewrite it) and writes
    language tags in lower case (RDF 1.1 Concepts §3.3: 'Lexical
    representations of language tags MAY be converted to lower case.')."""
    try:
        parsed = list(ox.parse(body, format=ox.RdfFormat.from_media_type(media), base_iri=base))
    except (SyntaxError, ValueError, TypeError) as e:
        return f"unreadable {media}: {e}"
    g = Graph()
    for q in parsed:
        g.add(tuple(_term(server, t) for t in (q.subject, q.predicate, q.object)))  # type: ignore[arg-type]
    return g


def _term(server: Server, t: object) -> URIRef | BNode | Literal:
    if isinstance(t, ox.NamedNode):
        inside = t.value.startswith(server.root)
        return URIRef(STORAGE + server.logical(t.value.removeprefix(server.root))
                      if inside else t.value)
    if isinstance(t, ox.BlankNode):
        return BNode(t.value)
    assert isinstance(t, ox.Literal)
    plain = t.language is not None or t.datatype.value == XSD + "string"
    return Literal(t.value, lang=t.language, datatype=None if plain else URIRef(t.datatype.value),
                   normalize=False)


@dataclass(frozen=True)
class Listing:
    """A container's members (logical paths) and the rest of its graph."""

    members: frozenset[str]
    graph: Graph

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Listing) and self.members == other.members
                and isomorphic(self.graph, other.graph))

    __hash__ = None  # type: ignore[assignment]


def listing(g: Graph, container: str) -> Listing:
    """A container's members and its graph without the triples only a
    server states (``MANAGED_PREDICATES``, ``MANAGED_TYPES``)."""
    me = URIRef(STORAGE + container)
    members = frozenset(str(m).removeprefix(STORAGE) for m in g.objects(me, URIRef(LDP + "contains")))
    rest = Graph()
    for s, p, o in g:
        managed_type = p == RDF.type and (str(o) in MANAGED_TYPES or str(o).startswith(MEDIA_TYPES))
        if str(p) not in MANAGED_PREDICATES and not managed_type:
            rest.add((s, p, o))
    return Listing(members, rest)


Content = Listing | Graph | tuple[str, bytes]  # a container's, an RDF document's, a file's


@dataclass(frozen=True)
class State:
    """What a GET of a path shows: its status and, when it is there, its
    kind ('container', 'rdf' or 'bytes') and content (a file's: its
    Content-Type as sent, parameters and all, and its bytes)."""

    status: int
    kind: str | None = None
    content: Content | None = None
    answer: httpx.Response | None = field(default=None, compare=False)


def media_type(r: httpx.Response) -> str:
    return r.headers.get("content-type", "").split(";")[0].strip().lower()


def state(server: Server, path: str) -> State:
    url = server.root + server.actual(path)
    r = server.client.get(url, headers={"accept": STATE_ACCEPT})
    server.remember(path, r)
    if r.status_code != 200:
        return State(r.status_code, answer=r)
    if path == "" or path.endswith("/"):
        return State(200, "container", listing(_read(server, r, url), path), r)
    if media_type(r) in RDF_TYPES:
        return State(200, "rdf", _read(server, r, url), r)
    return State(200, "bytes", (r.headers.get("content-type", ""), r.content), r)


def _read(server: Server, r: httpx.Response, url: str) -> Graph:
    g = graph(server, r.content, media_type(r), url)
    assert isinstance(g, Graph), f"{server.name} answered {url} with {g}"
    return g


def same(a: object, b: object) -> bool:
    """Equal, graphs by isomorphism (blank nodes renamed)."""
    if isinstance(a, Graph) and isinstance(b, Graph):
        return isomorphic(a, b)
    return bool(a == b)


@dataclass(frozen=True)
class Difference:
    """What differs after ``step`` (the step's answer, or the state of
    ``path``), ``before`` it held on both servers."""

    aspect: str
    step: Request
    path: str
    ours: object
    theirs: object
    before: dict[str, State]

    def held(self, path: str) -> str | None:
        """What ``path`` was before the step: a kind, or None when absent."""
        s = self.before.get(path)
        return s.kind if s is not None else None

    def sends(self, header: str) -> bool:
        return header in self.step.headers or (self.step.etag or ("",))[0] == header

    def statuses(self, ours: int | tuple[int, ...], theirs: int | tuple[int, ...]) -> bool:
        """Whether the step's answers were ``ours`` and ``theirs`` (or one of them)."""
        return (self.aspect == "status" and self.ours in _tuple(ours)
                and self.theirs in _tuple(theirs))

    def clash(self) -> bool:
        """Whether the step's path clashes with a resource of the other kind
        (``a`` with the container ``a/``, ``doc/`` or ``doc/x`` with the
        document ``doc``)."""
        p = self.step.path
        other = p[:-1] if p.endswith("/") else p + "/"
        return bool(p) and (self.held(other) is not None) or self.under_document()

    def under_document(self) -> bool:
        """Whether a container the step's path lies in is a document's name
        (``doc`` for ``doc/x``)."""
        p = self.step.path
        return any(self.held(p[:i]) in ("rdf", "bytes") for i, c in enumerate(p) if c == "/")


def _tuple(x: int | tuple[int, ...]) -> tuple[int, ...]:
    return x if isinstance(x, tuple) else (x,)


def answer_differences(step: Request, ours: httpx.Response, theirs: httpx.Response,
                       servers: tuple[Server, Server], before: dict[str, State]
                       ) -> list[Difference]:
    """Where the two answers to ``step`` differ: status, ``aspects``, a
    GET's body (as a graph for RDF) and whether a POST took the Slug."""
    a, b = aspects(ours), aspects(theirs)
    found = {k: (a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)}
    if step.method == "GET" and ours.status_code == theirs.status_code == 200:
        bodies = _body(servers[0], ours, step.path), _body(servers[1], theirs, step.path)
        if not same(*bodies):
            found["body"] = bodies
    if step.method == "POST" and "slug" in step.headers and ours.status_code == 201 \
            and theirs.status_code == 201:
        took = (_named(servers[0], ours) == step.headers["slug"],
                _named(servers[1], theirs) == step.headers["slug"])
        if took[0] != took[1]:
            found["Slug taken"] = took
    return [Difference(k, step, step.path, o, t, before) for k, (o, t) in found.items()]


def _body(server: Server, r: httpx.Response, path: str) -> Content | str:
    """A GET's body: a container's listing, a graph, bytes; or why it
    cannot be read."""
    if media_type(r) not in RDF_TYPES:
        return r.headers.get("content-type", ""), r.content
    g = graph(server, r.content, media_type(r), str(r.url))
    return listing(g, path) if isinstance(g, Graph) and (path == "" or path.endswith("/")) else g


def _named(server: Server, r: httpx.Response) -> str:
    """The last segment of a new member's path."""
    return r.headers.get("location", "").removeprefix(server.root).rstrip("/").rsplit("/")[-1]


def state_differences(path: str, ours: State, theirs: State, step: Request,
                      before: dict[str, State]) -> list[Difference]:
    """Where the two servers' states of ``path`` differ, after ``step``."""
    found: dict[str, tuple[object, object]] = {}
    a, b = ours.content, theirs.content
    if (ours.status, ours.kind) != (theirs.status, theirs.kind):
        found["state"] = ((ours.status, ours.kind), (theirs.status, theirs.kind))
    elif isinstance(a, Listing) and isinstance(b, Listing):
        if a.members != b.members:
            found["members"] = (sorted(a.members), sorted(b.members))
        if not isomorphic(a.graph, b.graph):
            found["container graph"] = (a.graph, b.graph)
    elif isinstance(a, Graph) and isinstance(b, Graph) and not isomorphic(a, b):
        found["graph"] = (a, b)
    elif isinstance(a, tuple) and isinstance(b, tuple):
        found |= {k: (x, y) for k, x, y in zip(("Content-Type", "bytes"), a, b, strict=True)
                  if x != y}
    return [Difference(k, step, path, o, t, before) for k, (o, t) in found.items()]


# --- the known differences ------------------------------------------------------------------

@dataclass(frozen=True)
class Known:
    """A difference the specs allow (or CSS's, where it is wrong): of
    ``aspect``, where ``applies``; ``why`` quotes the spec. After one that
    ``ends`` the two states differ, so the sequence ends there."""

    aspect: str
    applies: Callable[[Difference], bool]
    why: str
    ends: bool = False


CREATED = (200, 201, 204, 205)
IF_MATCH = (
    "RFC 9110 §13.1.1: 'If the field value is a list of entity tags, the condition is true if "
    "any of the listed tags match the entity tag of the selected representation. Otherwise, "
    "the condition is false.' … 'An origin server MUST NOT perform the requested method if a "
    "received If-Match condition evaluates to false' — a resource that does not exist has no "
    "representation to match: we answer 412, CSS ignores If-Match and creates it.")
TRANSFORMED = (
    "RFC 9110 §9.3.4 (PUT): 'If a representation is inconsistent with the target resource, the "
    "origin server SHOULD either make it consistent, by transforming the representation or "
    "changing the resource configuration, or respond with an appropriate error message … The "
    "409 (Conflict) or 415 (Unsupported Media Type) status codes are suggested' — a container "
    "is RDF: CSS drops what a container's body says (%s); we %s.")
NOT_ACCEPTABLE = (
    "RFC 9110 §12.5.1: 'If the [Accept] header field is present in a request and none of the "
    "available representations for the response have a media type that is listed as "
    "acceptable, the origin server can either honor the header field by sending a 406 (Not "
    "Acceptable) response or disregard the header field by treating the response as if it is "
    "not subject to content negotiation for that request header field' — we disregard it for "
    "a non-RDF resource asked for as RDF; CSS answers 501 (Not Implemented), neither.")
CONTENT_TYPE = (
    "Solid Protocol (#server-content-type): 'Server MUST reject PUT, POST and PATCH requests "
    "without the Content-Type header with a status code of 400.' — CSS creates the container.")
PRECEDENCE = (
    "RFC 9110 §13.2.1: 'A server MUST ignore all received preconditions if its response to the "
    "same request without those conditions, prior to processing the request content, would "
    "have been a status code other than a 2xx (Successful) or 412 (Precondition Failed).' — %s")
PRECONDITION_FIRST = PRECEDENCE % (
    "CSS's 409 or 422 comes from reading and applying the patch (a blank node in its "
    "insertions; its deletions are not there, its solid:where does not match): the request "
    "content is processed, so the precondition comes first.")
CONFLICT_FIRST = PRECEDENCE % (
    "a PUT of an existing container, a PATCH of a container or of a non-RDF resource, a PUT "
    "or PATCH of a name another resource holds (a for a/, a/x under the document a) is 409 "
    "whatever the content: CSS answers 412.")
MISSING_TYPE = (
    "Solid Protocol (#server-content-type): 'Server MUST reject PUT, POST and PATCH requests "
    "without the Content-Type header with a status code of 400.' — CSS answers with the "
    "error the request would otherwise have met (409 for a PUT of an existing container), "
    "or 412 for a failed precondition, which RFC 9110 §13.2.1 puts after an error found "
    "without reading the content: 'A server MUST ignore all received preconditions if its "
    "response to the same request without those conditions, prior to processing the request "
    "content, would have been a status code other than a 2xx (Successful) or 412'.")
HEADERS = {"Allow", "Accept-Patch", "Accept-Post", "Accept-Put", "Link", "Content-Type"}
NOT_MODIFIED = (
    "RFC 9110 §13.1.2: 'If the field value is a list of entity tags, the condition is false if "
    "one of the listed tags matches the entity tag of the selected representation.' … 'the "
    "origin server MUST respond with either a) the 304 (Not Modified) status code if the "
    "request method is GET or HEAD' — CSS answers 200 to a GET of a non-RDF resource with its "
    "current ETag in If-None-Match (it does answer 304 for RDF).")
POST_MISSING = (
    "Solid Protocol §5.3 (#server-post-target-not-found): 'When a POST method request targets "
    "a resource without an existing representation, the server MUST respond with the 404 "
    "status code.' — POST to x/ where x is a document: CSS answers 405.")
GET_IF_MATCH = (
    "RFC 9110 §13.1.1: 'An origin server MUST NOT perform the requested method if a received "
    "If-Match condition evaluates to false; instead, the origin server MUST respond with "
    "either a) the 412 (Precondition Failed) status code or b) one of the 2xx (Successful) "
    "status codes if the origin server has verified that a state change is being requested' "
    "— a GET or HEAD with an If-Match naming no current ETag: we answer 412, CSS performs "
    "the GET (200, 304, or its 501 for RDF asked of a file); and a 304 answers no If-Match "
    "(§15.4.5: a conditional GET or HEAD 'if the condition evaluated to false' of "
    "If-None-Match or If-Modified-Since): CSS's 304 where our If-Match held (200).")
POST_NO_CONTAINER = (
    "Solid Protocol §5.3 (#server-post-target-not-found): 'When a POST method request targets "
    "a resource without an existing representation, the server MUST respond with the 404 "
    "status code.' — POST to a name without its slash (x, where the container is x/), or "
    "with a precondition, to a missing resource: CSS posts to the container x/ or answers "
    "412 (RFC 9110 §13.2.1 puts a precondition after the 404).%s")
KNOWN: tuple[Known, ...] = (
    Known("status", lambda d: d.step.method in ("GET", "HEAD") and d.sends("if-match")
          and (d.statuses(412, (200, 304, 501)) or d.statuses(200, 304)), GET_IF_MATCH),
    Known("WAC-Allow", lambda d: True, DIFFERENCES[("*", "WAC-Allow")]),
    Known("status", lambda d: d.statuses(204, 205), HTTP_204),
    Known("status", lambda d: d.step.method == "PATCH" and d.held(d.step.path) == "bytes"
          and d.statuses(409, 501), DIFFERENCES[("patch file", "status")]),
    Known("status", lambda d: d.under_document() and d.statuses(409, 403),
          DIFFERENCES[("document under document", "status")]),
    Known("status", lambda d: d.sends("if-match") and d.held(d.step.path) is None
          and d.statuses(412, CREATED), IF_MATCH, ends=True),
    Known("status", lambda d: d.step.method == "PUT" and d.step.path.endswith("/")
          and d.step.headers.get("content-type", "text/turtle") not in RDF_TYPES
          and d.statuses(409, CREATED), TRANSFORMED % ("a non-RDF body", "refuse it, 409"),
          ends=True),
    Known("container graph", lambda d: isinstance(d.theirs, Graph) and not d.theirs,
          TRANSFORMED % ("its triples", "keep them")),
    Known("body", lambda d: isinstance(d.ours, Listing) and isinstance(d.theirs, Listing)
          and d.ours.members == d.theirs.members and not d.theirs.graph,
          TRANSFORMED % ("its triples", "keep them")),
    Known("status", lambda d: d.step.method in ("GET", "HEAD") and d.held(d.step.path) == "bytes"
          and d.statuses((200, 304), 501), NOT_ACCEPTABLE),
    Known("status", lambda d: d.step.method in ("GET", "HEAD") and d.sends("if-none-match")
          and d.held(d.step.path) == "bytes" and d.statuses(304, 200), NOT_MODIFIED),
    Known("status", lambda d: "content-type" not in d.step.headers and d.statuses(400, CREATED),
          CONTENT_TYPE, ends=True),
    Known("status", lambda d: "content-type" not in d.step.headers
          and d.step.method in ("PUT", "POST", "PATCH")
          and d.statuses(400, (403, 404, 405, 409, 412)), MISSING_TYPE),
    Known("status", lambda d: d.step.method == "PATCH" and not d.clash()
          and d.statuses(412, (409, 422)), PRECONDITION_FIRST),
    Known("status", lambda d: d.statuses(409, 412) and (
        d.step.method in ("PUT", "PATCH") and d.clash()
        or d.step.method == "PUT" and d.held(d.step.path) == "container"
        or d.step.method == "PATCH" and (d.step.path.endswith("/") or d.step.path == ""
                                         or d.held(d.step.path) == "bytes")), CONFLICT_FIRST),
    Known("status", lambda d: d.step.method == "POST" and d.clash() and d.statuses(404, 405),
          POST_MISSING),
    Known("status", lambda d: d.step.method == "POST" and not d.step.path.endswith("/")
          and d.step.path and d.held(d.step.path) is None and d.statuses(404, CREATED),
          POST_NO_CONTAINER, ends=True),
    Known("status", lambda d: d.step.method == "POST" and d.held(d.step.path) is None
          and d.statuses(404, 412), POST_NO_CONTAINER % ""),
    Known("Allow", lambda d: d.step.method == "DELETE" and d.step.path == "",
          DIFFERENCES[("delete root", "Allow")]),
    Known("Accept-Put", lambda d: d.step.method == "DELETE" and d.step.path == "",
          DIFFERENCES[("delete root", "Accept-Put")]),
)


def judged(found: list[Difference], known: tuple[Known, ...]) -> tuple[list[Difference], bool]:
    """The differences no ``Known`` allows, and whether an allowed one ends
    the sequence. Where a status difference is allowed, so are those of the
    headers that go with the status (``aspects``)."""
    allowed = {id(d): [k for k in known if k.aspect == d.aspect and k.applies(d)] for d in found}
    status = [ks for d in found for ks in [allowed[id(d)]] if d.aspect == "status" and ks]
    for d in found:
        if d.aspect in HEADERS and status:
            allowed[id(d)] = allowed[id(d)] or status[0]
    return ([d for d in found if not allowed[id(d)]],
            any(k.ends for ks in allowed.values() for k in ks))


# --- the fuzzer -----------------------------------------------------------------------------

def fuzz(rng: random.Random, ours: Server, theirs: Server,
         known: tuple[Known, ...] = KNOWN) -> str | None:
    """A random sequence sent to both servers, each step compared; the
    first unexplained difference, described, or None."""
    done: list[Request] = []
    touched = {""}
    before = {"": state(ours, "")}
    state(theirs, "")  # its ETag
    for _ in range(rng.randint(*STEPS)):
        step = request(rng, sorted(set(PATHS) | touched),
                       {p for p, s in before.items() if s.status == 200})
        answers = ours.send(step), theirs.send(step)
        done.append(step)
        found, ends = judged(answer_differences(step, *answers, (ours, theirs), before), known)
        if found or ends:
            return describe(done, found, answers) if found else None
        touched |= {step.path} | created(step, *answers, ours, theirs, len(done))
        touched |= {p[:i + 1] for p in touched for i, c in enumerate(p) if c == "/"}
        after = {}
        for path in sorted(touched):
            mine, its = state(ours, path), state(theirs, path)
            after[path] = mine
            found, ends = judged(state_differences(path, mine, its, step, before), known)
            if found or ends:
                return describe(done, found, (mine.answer, its.answer)) if found else None
        before = after
    return None


def created(step: Request, ours: httpx.Response, theirs: httpx.Response, a: Server, b: Server,
            n: int) -> set[str]:
    """The logical path of a member a POST created on both servers: its
    path where both named it alike, else ``~n`` in the container, which
    each server's ``aliases`` name."""
    if step.method != "POST" or ours.status_code != 201 or theirs.status_code != 201:
        return set()
    paths = [r.headers["location"].removeprefix(s.root) for s, r in ((a, ours), (b, theirs))]
    if paths[0] == paths[1]:
        return {paths[0]}
    name = f"{step.path}~{n}" + ("/" if paths[0].endswith("/") else "")
    a.aliases[name], b.aliases[name] = paths
    return {name}


def describe(done: list[Request], found: list[Difference],
             answers: tuple[httpx.Response | None, ...]) -> str:
    lines = [f"{i:3}. {s}" for i, s in enumerate(done, 1)]
    lines += [f"differs: {d.aspect} of /{d.path}: ours={_show(d.ours)} css={_show(d.theirs)}"
              for d in found]
    for name, r in zip(("ours", "css"), answers, strict=False):
        if r is not None:
            lines.append(f"{name}: {r.status_code} {dict(r.headers)}\n  {r.text[:600]}")
    return "\n".join(lines)


def _show(x: object) -> str:
    if isinstance(x, Graph):
        return "{" + " ".join(sorted(f"{s.n3()} {p.n3()} {o.n3()} ." for s, p, o in x)) + "}"
    return repr(x)


@pytest.mark.parametrize("seed", range(SEED, SEED + EXAMPLES))
def test_random_requests_answer_as_the_community_solid_server(seed: int, css: str,
                                                              podviews: str) -> None:
    pod = owned_pod(podviews, f"fuzz{seed}")
    with httpx.Client(timeout=60) as c:
        empty(c, css)
        failure = fuzz(random.Random(seed), Server("podviews", pod.client, pod.url),
                       Server("CSS", c, css))
    assert failure is None, (f"seed {seed} (replay: PODVIEWS_PROTOCOL_FUZZ_SEED={seed} "
                             f"PODVIEWS_PROTOCOL_FUZZ_EXAMPLES=1):\n{failure}")

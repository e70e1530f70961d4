"""Writes to pods on a real Postgres: the diff, support counting, the change log."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from rdflib import Literal, URIRef

from storage import pods, terms

EX = "http://ex/"


def t(s: str, p: str, o: object) -> tuple:
    return (URIRef(EX + s), URIRef(EX + p), o if not isinstance(o, str) else URIRef(EX + o))


def _pod(c: sa.Connection) -> int:
    owner = pods.create_agent(c, "https://alice.example/#me", "owner", b"h")
    return pods.create_pod(c, "alice", owner)


def test_terms_round_trip(migrated: str) -> None:
    with sa.create_engine(migrated).begin() as c:
        items = [URIRef(EX + "a"), Literal("01", datatype=URIRef(
            "http://www.w3.org/2001/XMLSchema#integer")), Literal("chat", lang="fr"), Literal("x")]
        ids = terms.intern(c, items)
        assert terms.intern(c, items) == ids  # idempotent
        assert terms.decode(c, ids.values()) == {v: k for k, v in ids.items()}
        num = c.execute(sa.text("SELECT num FROM terms WHERE id = :i"),
                        {"i": ids[items[1]]}).scalar_one()
        assert num == 1.0


def test_put_diffs_and_the_default_graph_is_a_set(migrated: str) -> None:
    with sa.create_engine(migrated).begin() as c:
        pod = _pod(c)
        a, b, shared = t("a", "p", "b"), t("b", "p", Literal(1)), t("c", "q", "d")
        s1 = pods.put_resource(c, pod, "one", [a, shared])
        assert pods.change_delta(c, s1) == {a: 1, shared: 1}
        s2 = pods.put_resource(c, pod, "two", [shared, b])
        assert pods.change_delta(c, s2) == {b: 1}  # shared was already in the pod
        s3 = pods.put_resource(c, pod, "one", [a])
        assert pods.change_delta(c, s3) == {}  # shared still held by "two"
        s4 = pods.delete_resource(c, pod, "two")
        assert pods.change_delta(c, s4) == {shared: -1, b: -1}
        assert s1 < s2 < s3 < s4
        assert pods.default_graph(c, pod) == {a}


def test_a_patch_reads_only_its_triples_and_equals_the_put_of_its_result(migrated: str) -> None:
    """``patch_resource`` makes its inserts present and its deletes absent,
    with the ΔG and content a ``put_resource`` of the same result gives; a
    patch that changes nothing keeps the ETag, one that changes something
    moves it."""
    with sa.create_engine(migrated).begin() as c:
        pod = _pod(c)
        a, b, d, shared = t("a", "p", "b"), t("b", "p", Literal(1)), t("d", "p", "e"), \
            t("c", "q", "d")
        pods.put_resource(c, pod, "other", [shared])
        s1 = pods.patch_resource(c, pod, "doc", [a, shared], [d])  # created by the patch
        assert pods.change_delta(c, s1) == {a: 1}  # shared was in the pod already
        etag = pods.written(c, s1).etag
        same = pods.patch_resource(c, pod, "doc", [a], [b])  # nothing to do
        assert pods.change_delta(c, same) == {} and pods.written(c, same).etag == etag
        s2 = pods.patch_resource(c, pod, "doc", [b], [a, d])
        assert pods.change_delta(c, s2) == {b: 1, a: -1}
        assert pods.written(c, s2).etag != etag
        rid = pods.resource(c, pod, "doc").id
        assert pods.resource_triples(c, rid) == {b, shared}
        s3 = pods.put_resource(c, pod, "doc", [b, shared])  # the same content put
        assert pods.change_delta(c, s3) == {}
        assert pods.default_graph(c, pod) == {b, shared}


def test_containers_are_made_above_a_resource_and_names_are_one_namespace(migrated: str) -> None:
    with sa.create_engine(migrated).begin() as c:
        pod = _pod(c)
        pods.put_resource(c, pod, "a/b/c", [t("a", "p", "b")])
        assert pods.members(c, pod, "") == ["a/"]
        assert pods.members(c, pod, "a/") == ["a/b/"]
        assert pods.members(c, pod, "a/b/") == ["a/b/c"]
        with pytest.raises(pods.NameTaken):
            pods.put_resource(c, pod, "a/b/c/", [])
        with pytest.raises(pods.NameTaken):
            pods.put_resource(c, pod, "a/b", [])
        seq = pods.put_bytes(c, pod, "a/pic", b"\x89PNG", "image/png")
        row = pods.resource(c, pod, "a/pic")
        assert row.binary and row.size == 4 and pods.resource_body(c, row.id) == b"\x89PNG"
        assert pods.change_delta(c, seq) == {}
        described = pods.put_description(c, pod, row.id, [t("pic", "p", "x")])
        assert pods.change_delta(c, described) == {t("pic", "p", "x"): 1}  # views see it
        pods.put_bytes(c, pod, "a/pic", b"GIF8", "image/gif")  # the description stays
        assert pods.resource_triples(c, row.id) == {t("pic", "p", "x")}

"""`alembic upgrade head` yields exactly the models' schema; `downgrade base`
removes it."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from rdflib import URIRef

from storage import documents, pods
from storage.migrate import downgrade, upgrade
from storage.models import Base


def test_upgrade_head_matches_the_models(migrated: str) -> None:
    engine = sa.create_engine(migrated)
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}),
                                Base.metadata)
    assert diff == []


def test_downgrade_base_leaves_nothing(migrated: str) -> None:
    downgrade(migrated, "base")
    tables = set(sa.inspect(sa.create_engine(migrated)).get_table_names())
    assert tables <= {"alembic_version"}


def test_0008_makes_the_containers_of_existing_resources(migrated: str) -> None:
    """Resources written before containers were rows get their pod's root and
    every container above them; ``d1`` and ``d1/`` cannot both exist after."""
    downgrade(migrated, "0007")
    engine = sa.create_engine(migrated)
    with engine.begin() as c:
        owner = c.execute(sa.text("INSERT INTO agents (webid, role, token_hash) VALUES "
                                  "('https://a.test/#me', 'owner', 'x') RETURNING id")).scalar()
        pod = c.execute(sa.text("INSERT INTO pods (name, owner_id) VALUES ('p', :o) RETURNING id"),
                        {"o": owner}).scalar()
        for path in ("top", "a/b/c", "a/d"):
            c.execute(sa.text("INSERT INTO resources (pod_id, path, etag, content_type) "
                              "VALUES (:p, :path, 'e', 'text/turtle')"), {"p": pod, "path": path})
    upgrade(migrated)
    with engine.begin() as c:
        paths = set(c.execute(sa.text("SELECT path FROM resources")).scalars())
        assert paths == {"", "top", "a/", "a/b/", "a/b/c", "a/d"}
        with pytest.raises(sa.exc.IntegrityError):
            c.execute(sa.text("INSERT INTO resources (pod_id, path, etag, content_type) "
                              "VALUES (:p, 'top/', 'e', 'text/turtle')"), {"p": pod})


def test_0010_deleting_parents_deletes_their_rows(migrated: str) -> None:
    """Quads, a pod's default graph and the change log's triples have no
    foreign keys since 0010; the triggers that replace their cascades delete
    them with their resource, pod or change."""
    from rdflib import URIRef

    from storage import pods

    t = (URIRef("http://ex/s"), URIRef("http://ex/p"), URIRef("http://ex/o"))
    with sa.create_engine(migrated).begin() as c:
        pod = pods.create_pod(c, "gone", pods.create_agent(c, "urn:g", "owner", b"g"))
        seq = pods.put_resource(c, pod, "doc", [t])
        pods.put_resource(c, pod, "kept", [t])

        def count(table: str) -> int:
            return int(c.execute(sa.text(f"SELECT count(*) FROM {table}")).scalar_one())

        assert (count("quads"), count("pod_triples"), count("change_triples")) == (2, 1, 1)
        c.execute(sa.text("DELETE FROM resources WHERE path = 'doc'"))
        assert count("quads") == 1
        c.execute(sa.text("DELETE FROM changes WHERE seq = :s"), {"s": seq})
        assert count("change_triples") == 0
        c.execute(sa.text("DELETE FROM pods WHERE id = :p"), {"p": pod})
        assert (count("quads"), count("pod_triples"), count("resources")) == (0, 0, 0)


def test_0019_watched_root_tables_capture_by_the_function_of_their_arity(migrated: str) -> None:
    """A view's root tables watched before 0019 (the one function of 0016,
    its SQL dynamic) are watched by the function of their arity after it,
    with the same argument, and the other way down; the feed records the
    next change through them."""
    from rdflib import URIRef

    from server.api.views.service import register_view
    from storage import catalog, feed, pods
    from tests.maintenance.test_pipeline import drain, setup

    engine = sa.create_engine(migrated)
    pod, consumer = setup(engine)
    ex = "http://ex/"
    with engine.begin() as c:
        pods.put_resource(c, pod, "r", [(URIRef(ex + "a"), URIRef(ex + "p"), URIRef(ex + "b"))])
        view = register_view(c, consumer, "v", f"SELECT ?s ?o WHERE {{ ?s <{ex}p> ?o }}")
    drain(engine)

    def functions() -> set[tuple[str, str]]:
        with engine.connect() as c:
            return {(f, bytes(a).decode().rstrip("\x00")) for f, a in c.execute(sa.text(
                "SELECT p.proname, g.tgargs FROM pg_trigger g JOIN pg_proc p ON p.oid = g.tgfoid "
                "JOIN krel_tables k ON g.tgrelid = to_regclass(quote_ident(k.table_name)) "
                "WHERE k.view_id = :v"), {"v": view})}

    assert functions() == {("podviews_capture_2", '["o", "s"]')}
    engine.dispose()
    downgrade(migrated, "0018")
    assert functions() == {("podviews_capture", '["o", "s"]')}
    engine.dispose()
    upgrade(migrated)
    assert functions() == {("podviews_capture_2", '["o", "s"]')}
    with engine.begin() as c:
        pods.put_resource(c, pod, "r", [(URIRef(ex + "a"), URIRef(ex + "p"), URIRef(ex + "c"))])
    drain(engine)
    with engine.connect() as c:
        (delta,) = feed.deltas(c, view, feed.position(c, view).floor, 0, 100)
        assert (delta.added, delta.removed) == (1, 1)
        assert len(catalog.view_results(c, view)) == 1
    engine.dispose()


def test_0033_keeps_in_change_quads_only_what_change_triples_lacks(migrated: str) -> None:
    """A change's diff stored once (design note 186): downgraded, each
    change's ``change_quads`` holds its whole diff again (its ΔG too);
    upgraded, only the rest, and the documents' changes read the same."""
    def t(s: str, o: str) -> tuple[URIRef, URIRef, URIRef]:
        return URIRef(f"https://x.test/{s}"), URIRef("https://x.test/p"), URIRef(
            f"https://x.test/{o}")

    def quads(c: sa.Connection) -> set[tuple[int, ...]]:
        return set(map(tuple, c.execute(sa.text("SELECT seq, s, p, o, sign FROM change_quads"))))

    engine = sa.create_engine(migrated)
    with engine.begin() as c:
        owner = pods.create_agent(c, "https://a.test/#me", "owner", b"x")
        pod = pods.create_pod(c, "p", owner)
        pods.put_resource(c, pod, "a", {t("x", "y"), t("x", "z")})
        pods.put_resource(c, pod, "b", {t("x", "y"), t("w", "z")})
        pods.delete_resource(c, pod, "a")
        last = int(c.execute(sa.text("SELECT max(seq) FROM changes")).scalar_one())
        read = set(map(tuple, documents.net_changes(c, [pod], 0, last)))
        kept = quads(c)
        delta = set(map(tuple, c.execute(sa.text(
            "SELECT seq, s, p, o, sign FROM change_triples"))))
    assert len(kept) == 2 and not kept & delta  # (x p y) into b, then out of a
    downgrade(migrated, "0032")
    with engine.begin() as c:
        assert quads(c) == kept | delta
    upgrade(migrated)
    with engine.begin() as c:
        assert quads(c) == kept
        assert set(map(tuple, documents.net_changes(c, [pod], 0, last))) == read

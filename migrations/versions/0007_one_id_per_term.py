"""one id per RDF term: "a"^^xsd:string is "a" and language tags are lower
case (RDF 1.1, architecture decision 8); dictionary rows written before in
another form become the canonical row, or merge into it where it exists, and
the pods' quads, default graphs and change log are rewritten to the
surviving ids. K-relation tables are not rewritten: views.plan.SEMANTICS 2
changes every plan's fingerprint, so every view is rebuilt from its pods and
no state computed with two ids for one term is ever read.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23 12:30:00
"""

from __future__ import annotations

import hashlib

import sqlalchemy as sa
from alembic import op
from rdflib.term import Literal

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None

XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"


def _canonical(lexical: str, lang: str | None) -> tuple[bytes, str | None]:
    """(digest, language) of the canonical form — inlined here (not imported
    from views/) so that this revision means the same thing forever."""
    lang = lang.lower() if lang else None
    n3 = Literal(lexical, lang=lang).n3()
    return hashlib.sha1(n3.encode("utf-8")).digest(), lang


def upgrade() -> None:
    conn = op.get_bind()
    rows = conn.execute(sa.text(
        "SELECT id, lexical, lang FROM terms WHERE kind = 2 "
        "AND (datatype = :s OR lang <> lower(lang)) ORDER BY id"), {"s": XSD_STRING}).all()
    op.execute("CREATE TEMP TABLE term_merge (old BIGINT PRIMARY KEY, new BIGINT NOT NULL) "
               "ON COMMIT DROP")
    for r in rows:
        digest, lang = _canonical(r.lexical, r.lang)
        keeper = conn.execute(sa.text("SELECT id FROM terms WHERE digest = :d"),
                              {"d": digest}).scalar()
        if keeper is None:  # this row becomes the term's canonical row
            conn.execute(sa.text("UPDATE terms SET digest = :d, datatype = NULL, lang = :l "
                                 "WHERE id = :i"), {"d": digest, "l": lang, "i": r.id})
        else:
            conn.execute(sa.text("INSERT INTO term_merge VALUES (:o, :n)"),
                         {"o": r.id, "n": keeper})
    if rows:
        _rewrite_references()


def _mapped(alias: str) -> str:
    return ", ".join(f"coalesce(m{c}.new, {alias}.{c}) AS {c}" for c in "spo")


def _joins(alias: str) -> str:
    return " ".join(f"LEFT JOIN term_merge m{c} ON m{c}.old = {alias}.{c}" for c in "spo")


_TOUCHED = "(ms.old IS NOT NULL OR mp.old IS NOT NULL OR mo.old IS NOT NULL)"


def _rewrite_references() -> None:
    # a resource holding both forms of a term now holds one triple
    op.execute(f"CREATE TEMP TABLE merged_quads ON COMMIT DROP AS SELECT DISTINCT "
               f"q.resource_id, {_mapped('q')} FROM quads q {_joins('q')} WHERE {_TOUCHED}")
    op.execute("DELETE FROM quads q USING term_merge m WHERE q.s = m.old OR q.p = m.old "
               "OR q.o = m.old")
    op.execute("INSERT INTO quads (resource_id, s, p, o) SELECT * FROM merged_quads "
               "ON CONFLICT DO NOTHING")
    # a pod's default graph counts the resources holding each triple (decision 5)
    op.execute("CREATE TEMP TABLE merged_triples ON COMMIT DROP AS SELECT DISTINCT "
               "r.pod_id, m.s, m.p, m.o "
               "FROM merged_quads m JOIN resources r ON r.id = m.resource_id")
    op.execute("DELETE FROM pod_triples t USING term_merge m WHERE t.s = m.old "
               "OR t.p = m.old OR t.o = m.old")
    op.execute("DELETE FROM pod_triples t USING merged_triples m WHERE t.pod_id = m.pod_id "
               "AND t.s = m.s AND t.p = m.p AND t.o = m.o")
    op.execute("INSERT INTO pod_triples (pod_id, s, p, o, n) "
               "SELECT m.pod_id, m.s, m.p, m.o, count(*) FROM merged_triples m "
               "JOIN resources r ON r.pod_id = m.pod_id "
               "JOIN quads q ON q.resource_id = r.id AND q.s = m.s AND q.p = m.p AND q.o = m.o "
               "GROUP BY 1, 2, 3, 4")
    # the change log: one change's two forms of a triple are one change (or none)
    op.execute(f"CREATE TEMP TABLE touched_changes ON COMMIT DROP AS SELECT c.seq, "
               f"{_mapped('c')}, c.sign FROM change_triples c {_joins('c')} WHERE {_TOUCHED}")
    op.execute("CREATE TEMP TABLE merged_changes ON COMMIT DROP AS "
               "SELECT seq, s, p, o, sum(sign) AS net FROM (SELECT * FROM touched_changes "
               "UNION ALL SELECT c.seq, c.s, c.p, c.o, c.sign FROM change_triples c JOIN "
               "(SELECT DISTINCT seq, s, p, o FROM touched_changes) k USING (seq, s, p, o)) u "
               "GROUP BY 1, 2, 3, 4")
    op.execute("DELETE FROM change_triples c USING term_merge m WHERE c.s = m.old "
               "OR c.p = m.old OR c.o = m.old")
    op.execute("DELETE FROM change_triples c USING merged_changes m WHERE c.seq = m.seq "
               "AND c.s = m.s AND c.p = m.p AND c.o = m.o")
    op.execute("INSERT INTO change_triples (seq, s, p, o, sign) "
               "SELECT seq, s, p, o, sign(net) FROM merged_changes WHERE net <> 0")
    # predicates (views.predicates) are IRIs, which have one form already
    op.execute("DELETE FROM terms t USING term_merge m WHERE t.id = m.old")


def downgrade() -> None:
    pass  # the merged forms were one term all along: nothing to split again

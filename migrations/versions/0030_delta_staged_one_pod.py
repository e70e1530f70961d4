"""``podviews_delta_staged`` without a probe of the graph per changed triple
over one pod: there a triple's signs in the change log are its 0 <-> 1
transitions, so its net change over the batch says whether the pod holds
it at the batch's end (``storage.changes._net``, design note 167). Over more
pods the holders are still counted: a triple may leave one pod and stay
in another.

Revision ID: 0030
Revises: 0029
Create Date: 2026-11-27 20:00:00
"""

from __future__ import annotations

from alembic import op

revision = '0030'
down_revision = '0029'
branch_labels = None
depends_on = None

_HOLDERS_COUNTED = """(SELECT count(*) AS holders FROM pod_triples t
                          WHERE t.pod_id = ANY(dg_pods) AND t.s = d.s AND t.p = d.p
                            AND t.o = d.o)"""
_HOLDERS_ONE_POD = """(SELECT CASE WHEN cardinality(dg_pods) = 1 AND d.net <> 0
                          THEN CAST(d.net > 0 AS int) ELSE (SELECT count(*) FROM pod_triples t
                          WHERE t.pod_id = ANY(dg_pods) AND t.s = d.s AND t.p = d.p
                            AND t.o = d.o) END AS holders)"""


def _staged(holders: str) -> str:
    return f"""
CREATE OR REPLACE FUNCTION podviews_delta_staged(dg_pods bigint[], dg_after bigint,
                                                 dg_upto bigint, dg_preds bigint[])
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE counted jsonb;
BEGIN
  PERFORM podviews_delta_start();
  PERFORM set_config('join_collapse_limit', '1', true);
  WITH ins AS (
    INSERT INTO pg_temp.pv_dg (s, p, o, sign)
    SELECT s, p, o, CASE WHEN holders > 0 THEN 1 ELSE -1 END FROM (
      SELECT d.s, d.p, d.o, d.net, h.holders
      FROM (SELECT ct.s, ct.p, ct.o, sum(ct.sign) AS net FROM change_triples ct
            WHERE ct.seq > dg_after AND ct.seq <= dg_upto
              AND (dg_preds IS NULL OR ct.p = ANY(dg_preds))
              AND ct.seq IN (SELECT seq FROM changes
                             WHERE pod_id = ANY(dg_pods) AND seq > dg_after AND seq <= dg_upto)
            GROUP BY 1, 2, 3) AS d
      CROSS JOIN LATERAL {holders} AS h) AS n
    WHERE (holders > 0) <> (holders - net > 0)
    RETURNING p, sign)
  SELECT coalesce(jsonb_agg(jsonb_build_array(p, sign, n)), '[]') INTO counted
  FROM (SELECT p, sign, count(*) AS n FROM ins GROUP BY p, sign) AS g;
  RETURN counted;
END $$"""


def upgrade() -> None:
    op.execute(_staged(_HOLDERS_ONE_POD))


def downgrade() -> None:
    op.execute(_staged(_HOLDERS_COUNTED))

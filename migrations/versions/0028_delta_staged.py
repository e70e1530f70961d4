"""``podviews_delta_staged(pods, after, upto, predicates)``: the session's
ΔG table made ready (``podviews_delta_start``) and filled with ΔG of
``pods`` over (after, upto] (the triples of one of ``predicates``, NULL:
any) — the triples whose membership in the union of the pods changed,
each with its sign (decision 5) — and the rest of the transaction set to
join in the written order (design note 148). It returns the staged
triples counted by predicate and sign, as a JSON array of ``[p, sign, n]``.

The claim calls it for a change job of a view whose batches run as one
rendered statement, so that such a job stages ΔG without a statement of
its own (design note 157); ``server.executors.sql.run.stage`` calls it
otherwise. The query is the interpreter's net changes
(``storage.changes._net``) with the signs taken: the two must stay one
query. Its plan is generic (the claim set ``plan_cache_mode``) and kept for
the session.

Revision ID: 0028
Revises: 0027
Create Date: 2026-11-27 09:00:00
"""

from __future__ import annotations

from alembic import op

revision = '0028'
down_revision = '0027'
branch_labels = None
depends_on = None

STAGED = """
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
      CROSS JOIN LATERAL (SELECT count(*) AS holders FROM pod_triples t
                          WHERE t.pod_id = ANY(dg_pods) AND t.s = d.s AND t.p = d.p
                            AND t.o = d.o) AS h) AS n
    WHERE (holders > 0) <> (holders - net > 0)
    RETURNING p, sign)
  SELECT coalesce(jsonb_agg(jsonb_build_array(p, sign, n)), '[]') INTO counted
  FROM (SELECT p, sign, count(*) AS n FROM ins GROUP BY p, sign) AS g;
  RETURN counted;
END $$"""


def upgrade() -> None:
    op.execute(STAGED)


def downgrade() -> None:
    op.execute("DROP FUNCTION podviews_delta_staged(bigint[], bigint, bigint, bigint[])")

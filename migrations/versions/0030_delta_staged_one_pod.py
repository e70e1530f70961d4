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

import importlib.util
from pathlib import Path

from alembic import op

revision = '0030'
down_revision = '0029'
branch_labels = None
depends_on = None

_spec = importlib.util.spec_from_file_location(  # 0028's function, its holders' count changed
    "podviews_migration_0028", Path(__file__).with_name("0028_delta_staged.py"))
assert _spec is not None and _spec.loader is not None
_0028 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_0028)

_COUNTED = "(SELECT count(*) AS holders FROM pod_triples t"
_ONE_POD = ("(SELECT CASE WHEN cardinality(dg_pods) = 1 AND d.net <> 0 "
            "THEN CAST(d.net > 0 AS int) ELSE (SELECT count(*) FROM pod_triples t")
_COUNTED_END = "AND t.o = d.o) AS h"
_ONE_POD_END = "AND t.o = d.o) END AS holders) AS h"
assert _0028.STAGED.count(_COUNTED) == 1 and _0028.STAGED.count(_COUNTED_END) == 1
STAGED = _0028.STAGED.replace(_COUNTED, _ONE_POD).replace(_COUNTED_END, _ONE_POD_END)


def upgrade() -> None:
    op.execute(STAGED)


def downgrade() -> None:
    op.execute(_0028.STAGED)

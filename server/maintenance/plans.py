"""Stored state belongs to the plan that computed it. ``ENGINE`` names the
engine code that is running (a digest of the ``views`` package's sources and
``views.plan.SEMANTICS``); each view records the engine that last checked its
plan. After an upgrade, ``reconcile`` compiles every view the new engine has
not checked: an unchanged fingerprint only records the check, a changed one
queues a rebuild (status 'rebuilding'), a query the new engine refuses fails
the view with the reason. Jobs and readers compare fingerprints themselves
as well (``server.maintenance.jobs``, ``server.api.views.service``), so a
changed plan is never maintained or served even between two reconciles."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import sqlalchemy as sa

import views
from storage import views_repo
from views.compile import compiled
from views.errors import EngineError
from views.plan import SEMANTICS

log = logging.getLogger("podviews.maintenance")


def _engine_identity() -> str:
    h = hashlib.sha256(f"semantics {SEMANTICS}\n".encode())
    for path in sorted(Path(views.__file__).parent.glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:32]


ENGINE = _engine_identity()


def reconcile(engine: sa.Engine) -> tuple[int, int]:
    """Check the views this engine has not checked: (checked, rebuilding)."""
    checked = rebuilding = 0
    with engine.begin() as conn:
        for v in views_repo.unchecked(conn, ENGINE):
            try:
                fingerprint = compiled(v.query).plan.fingerprint
            except EngineError as e:
                views_repo.fail(conn, v.id, f"the engine no longer accepts the query: {e}")
                continue
            if fingerprint == v.plan_fingerprint:
                views_repo.checked(conn, v.id, ENGINE)
                checked += 1
            else:
                views_repo.rebuild(conn, v.id, "the engine's plan for this view changed "
                                               f"(fingerprint {v.plan_fingerprint[:12]} → "
                                               f"{fingerprint[:12]}): rebuilding")
                rebuilding += 1
    if rebuilding:
        log.info("%d views rebuild: the engine's plan for them changed", rebuilding)
    return checked, rebuilding

"""``podviews migrate``: the database schema to the latest revision."""

from __future__ import annotations

import argparse
from typing import Any

from server.cli.common import DB_HELP, database


def add(sub: Any) -> None:
    migrate = sub.add_parser("migrate", help="bring the database schema to the latest revision")
    migrate.add_argument("--database-url", default=None, help=DB_HELP)
    migrate.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    with database(args):
        print("database at the latest revision")
    return 0

"""What the commands share: the database a command works on (the given URL
or the embedded cluster, migrated), settings given as options, result
tables, and every option's environment variable."""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, fields
from typing import Any

from server.config import Settings
from storage.embedded import Embedded

log = logging.getLogger("podviews.cli")

DB_HELP = "database URL [PODVIEWS_DATABASE_URL]; default: embedded under PODVIEWS_DATA_DIR"
_SETTINGS = ("database_url", "executor", "spark_master", "spark_threshold", "spark_delta_below",
             "sql_render", "host", "port", "workers")


def settings(args: argparse.Namespace) -> Settings:
    """Settings: the options given win over the environment."""
    return Settings(**{n: getattr(args, n) for n in _SETTINGS
                       if getattr(args, n, None) is not None})


@contextmanager
def database(args: argparse.Namespace, keep_running: bool = False) -> Iterator[str]:
    """The URL of the database, at the latest revision: the one given, or
    the embedded cluster (stopped afterwards; with ``keep_running``, started
    again meanwhile if its postmaster dies — the server then reconnects by
    itself)."""
    from storage.db import open_database
    from storage.migrate import upgrade

    config = settings(args)
    url, embedded = open_database(config.database_url, config.data_dir)
    done = threading.Event()
    if embedded is not None and keep_running:
        threading.Thread(target=_keep_running, args=(embedded, done), daemon=True,
                         name="embedded-postgres").start()
    try:
        upgrade(url)
        yield url
    finally:
        done.set()
        if embedded is not None:
            embedded.stop()


def _keep_running(embedded: Embedded, done: threading.Event) -> None:
    while not done.wait(1.0):
        try:
            if embedded.ensure_running():
                log.warning("the embedded Postgres had stopped; started it again")
        except Exception:
            log.exception("starting the embedded Postgres again failed")


def print_rows(title: str, rows: Sequence[Any], as_json: bool) -> None:
    """Dataclass rows as a table (or one JSON document)."""
    if as_json:
        print(json.dumps({"rows": [asdict(r) for r in rows]}, indent=1))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    names = [f.name for f in fields(rows[0])] if rows else []
    for name in names:
        table.add_column(name.replace("_", " "))
    for r in rows:
        table.add_row(*(str(getattr(r, name)) for name in names))
    Console(width=200).print(table)


_SETTING = re.compile(r"\[(PODVIEWS_[A-Z_]+)")


def env_defaults(parser: argparse.ArgumentParser, prefix: str) -> None:
    """Every option may be given as an environment variable too. Options
    that are server settings name theirs in their help ([PODVIEWS_…], read
    by ``Settings``); every other one is ``PODVIEWS_<COMMAND>_<OPTION>``
    (``PODVIEWS_BENCH_COUNT=3``), added to its help. The command line wins."""
    for action in parser._actions:  # argparse keeps no public list of them
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                env_defaults(sub, f"{prefix}_{name.upper().replace('-', '_')}")
            continue
        longs = [o for o in action.option_strings if o.startswith("--")]
        if not longs or longs[0] == "--help" or _SETTING.search(action.help or ""):
            continue
        env = f"{prefix}_{longs[0][2:].upper().replace('-', '_')}"
        action.help = f"{action.help or ''} [{env}]".strip()
        raw = os.environ.get(env)
        if raw is not None:
            action.default = _from_env(parser, action, env, raw)


def _from_env(parser: argparse.ArgumentParser, action: argparse.Action, env: str,
              raw: str) -> object:
    if action.nargs == 0:  # a flag
        return raw.strip().lower() in ("1", "true", "yes", "on")
    convert = action.type if callable(action.type) else str
    try:
        values = [convert(v) for v in raw.split()] if action.nargs in ("+", "*") \
            else [convert(raw)]
    except (TypeError, ValueError) as e:
        parser.error(f"{env}={raw!r}: {e}")
    choices = list(action.choices) if action.choices is not None else None
    bad = [v for v in values if choices is not None and v not in choices]
    if bad and choices is not None:
        parser.error(f"{env}={raw!r}: choose from {', '.join(map(str, choices))}")
    return values if action.nargs in ("+", "*") else values[0]

"""The one entry point: ``podviews`` (a module per command in ``server.cli``)."""

from __future__ import annotations

import argparse
import logging
import sys

from server.cli import bench, check, load, migrate, serve, watch, worker
from server.cli.common import env_defaults

COMMANDS = (check, serve, migrate, load, bench, worker, watch)


def build_parser() -> argparse.ArgumentParser:
    """Every command and option; each option's default may come from the
    environment (``common.env_defaults``)."""
    parser = argparse.ArgumentParser(prog="podviews", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add(sub)
    env_defaults(parser, "PODVIEWS")
    return parser


def main(argv: list[str] | None = None) -> int:
    logging.getLogger("rdflib").setLevel(logging.ERROR)  # ill-typed literals are data here
    args = build_parser().parse_args(argv)
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())

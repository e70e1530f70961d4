"""Every `podviews` option can come from the environment too."""

from __future__ import annotations

import argparse

import pytest

from server.cli import build_parser


def _options(parser: argparse.ArgumentParser, path: str = "podviews"):  # type: ignore[no-untyped-def]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options(sub, f"{path} {name}")
        elif any(o.startswith("--") and o != "--help" for o in action.option_strings):
            yield path, action


def test_every_option_names_its_environment_variable() -> None:
    options = list(_options(build_parser()))
    assert len(options) > 30
    missing = [(path, a.option_strings) for path, a in options if "[PODVIEWS_" not in (a.help or "")]
    assert missing == []


def test_the_environment_sets_defaults_and_the_command_line_wins(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PODVIEWS_BENCH_COUNT", "3")
    monkeypatch.setenv("PODVIEWS_BENCH_JSON", "yes")
    monkeypatch.setenv("PODVIEWS_BENCH_ONLY", "Q1 SUM")
    monkeypatch.setenv("PODVIEWS_CHECK_W3C_EXECUTOR", "sql")
    args = build_parser().parse_args(["bench", "paper-bsbm"])
    assert (args.count, args.json, args.only) == (3, True, ["Q1", "SUM"])
    assert build_parser().parse_args(["bench", "paper-bsbm", "--count", "5"]).count == 5
    assert build_parser().parse_args(["check", "w3c", "dir"]).executor == "sql"


def test_a_bad_environment_value_is_an_error_naming_the_variable(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PODVIEWS_CHECK_W3C_EXECUTOR", "auto")
    with pytest.raises(SystemExit):
        build_parser()
    assert "PODVIEWS_CHECK_W3C_EXECUTOR='auto'" in capsys.readouterr().err

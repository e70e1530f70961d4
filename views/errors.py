"""Errors of the engine. Each docstring is the default message."""

from __future__ import annotations


class EngineError(Exception):
    """The engine could not handle the query."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (self.__doc__ or "").strip())


class SparqlSyntaxError(EngineError):
    """The query is not valid SPARQL."""

    def __init__(self, message: str, line: int, column: int) -> None:
        self.line = line
        self.column = column
        super().__init__(f"{message} (line {line}, column {column})")


class UnsupportedFeature(EngineError):
    """The query uses a feature the engine cannot maintain incrementally."""

    def __init__(self, feature: str) -> None:
        self.feature = feature
        super().__init__(f"unsupported feature: {feature}")

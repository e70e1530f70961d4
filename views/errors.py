"""Errors of the engine. Each docstring is the default message."""

from __future__ import annotations


class EngineError(Exception):
    """The engine could not handle the query."""

    # a job that raised it would raise it again: no retry (an executor that
    # cannot run a plan may be replaced by one that can: NotOnSpark)
    permanent = True

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


class ViewTooLarge(EngineError):
    """The view grew beyond the size this server maintains."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"the view is too large to maintain: {detail}")

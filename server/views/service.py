"""Views: register, describe, read, drop."""

from __future__ import annotations

from server.errors import NotFound
from server.hub import Hub, View
from server.sparql_json import ask_json, select_json
from server.views.schemas import ViewIn, ViewOut
from views.compile import compile_query
from views.results import ask, solutions


def create(hub: Hub, body: ViewIn) -> View:
    compiled = compile_query(body.query)  # SparqlSyntaxError / UnsupportedFeature -> 400
    return hub.add_view(body.name, body.query, compiled)


def get(hub: Hub, view_id: int) -> View:
    view = hub.views.get(view_id)
    if view is None:
        raise NotFound(f"no view {view_id}")
    return view


def describe(view: View) -> ViewOut:
    return ViewOut(id=view.id, name=view.name, query=view.text, status="ready",
                   watermark=view.watermark, rows=sum(view.maintainer.result.values()),
                   plan=view.maintainer.explain())


def results(view: View) -> dict:  # type: ignore[type-arg]
    q = view.compiled.query
    if q.form == "ASK":
        return ask_json(ask(view.maintainer.result))
    return select_json(q.variables, solutions(q, view.maintainer.result))


def drop(hub: Hub, view_id: int) -> None:
    with hub.lock:
        get(hub, view_id)
        del hub.views[view_id]

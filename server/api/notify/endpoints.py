"""HTTP and WebSocket for Solid Notifications on views' results (design
notes 90–96): the server's storage description (``/.well-known/solid``),
the subscription services of WebSocketChannel2023 and WebhookChannel2023,
the gateway the Inrupt client negotiates with, a channel's deletion, and
the WebSocket a WebSocketChannel2023 channel delivers through."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import operator
from typing import Any

from fastapi import APIRouter, Request, Response, WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse
from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool

from server.api.deps import Config, Db, Who
from server.api.notify import activity, follow, service
from server.api.views import fanout
from server.config import Settings
from server.errors import NotFound, PayloadTooLarge, Unprocessable
from storage import channels

router = APIRouter(tags=["notifications"])
log = logging.getLogger("podviews.notify")
LD_JSON = "application/ld+json"
MAX_BODY = 64 << 10
SUBSCRIBED: dict[int | str, dict[str, Any]] = {
    200: {"content": {LD_JSON: {}}}, 401: {}, 404: {}, 409: {}, 410: {}, 413: {}, 415: {},
    422: {}, 503: {}}


@router.api_route("/.well-known/solid", methods=["GET", "HEAD"],
                  responses={200: {"content": {"text/turtle": {}, LD_JSON: {}}}})
def storage_description(config: Config, request: Request) -> Response:
    """The server's storage description: where to subscribe to a view's
    results (public, as the Solid Notifications Protocol's discovery is);
    Turtle, or JSON-LD when the client prefers it."""
    accept = request.headers.get("accept", "")
    if _prefers(accept, (LD_JSON, "application/json"), "text/turtle"):
        return JSONResponse(activity.storage_description_jsonld(config.public_base),
                            media_type=LD_JSON, headers={"Vary": "Accept"})
    return Response(activity.storage_description(config.public_base), media_type="text/turtle",
                    headers={"Vary": "Accept"})


def _prefers(accept: str, these: tuple[str, ...], over: str) -> bool:
    """Whether ``accept`` ranks one of ``these`` above ``over`` (q values)."""
    ranks: dict[str, float] = {}
    for part in accept.split(","):
        name, *params = (p.strip() for p in part.split(";"))
        q = next((p[2:] for p in params if p.startswith("q=")), "1")
        try:
            ranks[name.lower()] = float(q)
        except ValueError:
            continue
    best = max((ranks.get(t, 0.0) for t in these), default=0.0)
    return best > 0 and best > ranks.get(over, ranks.get("text/*", ranks.get("*/*", 0.0)))


async def _body(request: Request) -> bytes:
    """The request's body, refused (413) once it passes ``MAX_BODY`` bytes."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            raise PayloadTooLarge(f"a subscription is at most {MAX_BODY} bytes")
    return body


async def _subscribe(request: Request, who: Any, db: Engine, config: Settings,
                     channel_type: str | None) -> dict[str, Any]:
    body = await _body(request)
    sub = await run_in_threadpool(  # off the loop: a webhook's sendTo is resolved (DNS)
        service.parse, body, request.headers.get("content-type", ""), channel_type,
        config.public_base, config.webhook_private)
    token, start = await run_in_threadpool(service.subscribe, db, who, sub)
    base = config.public_base
    receive = service.websocket_url(base, token) if sub.send_to is None else None
    return activity.channel_json(f"{base}/notifications/channels/{token}", sub.channel_type,
                                 sub.topic, receive, sub.send_to, start)


@router.post("/notifications/WebSocketChannel2023/", responses=SUBSCRIBED)
async def subscribe_websocket(request: Request, who: Who, db: Db, config: Config) -> Response:
    """A WebSocketChannel2023 channel on a view's results (``topic``): its
    ``receiveFrom`` delivers each delta after the view's position now (or
    after ``state``, a seq) as an Activity Streams ``Update``."""
    made = await _subscribe(request, who, db, config, activity.WEBSOCKET)
    return JSONResponse(made, media_type=LD_JSON)


@router.post("/notifications/WebhookChannel2023/", responses=SUBSCRIBED)
async def subscribe_webhook(request: Request, who: Who, db: Db, config: Config) -> Response:
    """A WebhookChannel2023 channel on a view's results: each delta POSTed
    to ``sendTo``, retried with backoff, until the channel is dead."""
    made = await _subscribe(request, who, db, config, activity.WEBHOOK)
    return JSONResponse(made, media_type=LD_JSON)


@router.post("/notifications/gateway", responses={200: {}, 422: {}})
async def gateway(request: Request, who: Who, config: Config) -> Response:
    """The notification gateway (``solid:notificationGateway``, as Inrupt's
    client negotiates): a list of protocols in; the endpoint of the first
    this server speaks ("ws") out."""
    try:
        asked = json.loads(await _body(request)).get("protocols", [])
    except (ValueError, AttributeError):
        raise Unprocessable("the gateway takes {\"protocols\": [...]} (JSON)") from None
    if not isinstance(asked, list) or "ws" not in asked:
        raise Unprocessable(f"no protocol of {asked!r} is offered here (offered: ws)")
    return JSONResponse({"endpoint": f"{config.public_base}/notifications/gateway/ws",
                         "protocol": "ws", "features": list(activity.FEATURES)})


@router.post("/notifications/gateway/ws", responses=SUBSCRIBED)
async def gateway_websocket(request: Request, who: Who, db: Db, config: Config) -> Response:
    """A WebSocketChannel2023 subscription as the gateway's clients send it
    (no ``type``): the channel, with its WebSocket also as ``endpoint``."""
    made = await _subscribe(request, who, db, config, None)
    return JSONResponse({**made, "endpoint": made["receiveFrom"], "protocol": "ws"},
                        media_type=LD_JSON)


@router.delete("/notifications/channels/{token}", status_code=204, responses={404: {}})
def unsubscribe(token: str, who: Who, db: Db) -> Response:
    """The channel closed, by its subscriber."""
    if not service.unsubscribe(db, who, token):
        raise NotFound("no such channel of yours")
    return Response(status_code=204)


@router.websocket("/notifications/ws/{token}")
async def receive_from(websocket: WebSocket, token: str) -> None:
    """The WebSocket of a WebSocketChannel2023 channel: its secret path is
    the credential (the Solid Notifications Protocol's ``receiveFrom``);
    each delta after the channel's position, as the subscriber reads it."""
    state = websocket.app.state
    engine: Engine = state.engine
    found = await run_in_threadpool(service.channel, engine, token)
    if found is None or found.kind != channels.WEBSOCKET or found.status != channels.ACTIVE:
        await websocket.close(code=1008, reason="no such channel")
        return
    await websocket.accept()
    topic = f"{state.settings.public_base}/views/{found.view_id}/results"
    position = [int(found.position)]

    who = service.subscriber(found)
    raw = websocket.scope.get(fanout.RAW_SEND)
    writer = None if raw is None or state.fanout is None else state.fanout.writer(
        found.view_id, who, raw, activity.Channel(topic, found.view_id),
        functools.partial(operator.setitem, position, 0))  # the position as it is written

    async def pump() -> tuple[int, str]:
        async for item in follow.follow(engine, who, found.view_id,
                                        position[0], state.settings.page_rows, state.notices,
                                        state.closing, state.shared_reads, writer):
            if isinstance(item, follow.Ended):
                await websocket.send_text(activity.encoded(item.problem()))
                return (1001, "server shutting down") if item.status == 503 else \
                    (1000, item.title)
            await websocket.send_text(activity.notification_shared(
                topic, found.view_id, item.change.seq, item.body))
            position[0] = item.change.seq
        return 1000, ""

    async def listen() -> None:
        while (await websocket.receive())["type"] != "websocket.disconnect":
            pass

    pumping, listening = asyncio.ensure_future(pump()), asyncio.ensure_future(listen())
    try:
        done, _ = await asyncio.wait((pumping, listening), return_when=asyncio.FIRST_COMPLETED)
    finally:
        pumping.cancel()
        listening.cancel()
        await run_in_threadpool(service.delivered, engine, found.id, position[0])
    if pumping not in done or pumping.cancelled():
        return  # the subscriber left
    failure = pumping.exception()
    if isinstance(failure, WebSocketDisconnect):
        return
    if failure is not None:
        log.warning("channel %s: delivery failed", found.id, exc_info=failure)
        code, reason = 1011, "the server could not read the view's changes; reconnect"
    else:
        code, reason = pumping.result()
        if code == 1000 and reason:
            await run_in_threadpool(service.ended, engine, found.id, reason)
    with contextlib.suppress(RuntimeError, WebSocketDisconnect):  # closed by the peer meanwhile
        await websocket.close(code=code, reason=reason[:120])


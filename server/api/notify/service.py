"""Subscriptions to a view's results (Solid Notifications Protocol; design
notes 90–93): a subscription request read and checked (problem documents
naming what is wrong), access checked exactly as a read of the results
(``views.service.row`` and ``state``), and the channel stored with the
subscriber and the position it starts after."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import Engine, Row
from sqlalchemy.exc import IntegrityError

from server.api import fetch
from server.api.auth import Principal, new_token, token_hash
from server.api.notify import activity
from server.api.views.changes import with_feed
from server.errors import (
    Gone,
    NotFound,
    NotReady,
    Unprocessable,
    UnsupportedMediaType,
)
from storage import catalog, channels, db, feed

JSON_TYPES = ("application/ld+json", "application/json")
_TOPIC = re.compile(r"/views/([1-9][0-9]{0,17})/results")
_KINDS = {activity.WEBSOCKET: channels.WEBSOCKET, activity.WEBHOOK: channels.WEBHOOK}


@dataclass(frozen=True)
class Subscription:
    channel_type: str  # activity.WEBSOCKET or activity.WEBHOOK
    topic: str
    view_id: int
    send_to: str | None = None
    state: int | None = None  # the seq after which to deliver (the `state` feature)


def parse(body: bytes, content_type: str, channel_type: str | None, base: str,
          allow_private: bool = False) -> Subscription:
    """A subscription request to the service of ``channel_type`` (None: the
    gateway's, which names no type: the WebSocket channel)."""
    if content_type.split(";")[0].strip().lower() not in JSON_TYPES:
        raise UnsupportedMediaType(f"a subscription is JSON-LD ({', '.join(JSON_TYPES)}), "
                                   f"not {content_type or 'untyped'}")
    try:
        found = json.loads(body)
    except (ValueError, UnicodeDecodeError) as e:
        raise Unprocessable(f"the subscription is not JSON: {e}") from None
    if not isinstance(found, dict):
        raise Unprocessable("the subscription is not a JSON object")
    kind = _channel_type(found.get("type"), channel_type)
    topic = found.get("topic")
    if not isinstance(topic, str):
        raise Unprocessable("the subscription names no topic (the results URL of a view: "
                            f"{base}/views/{{id}}/results)")
    match = _TOPIC.fullmatch(topic.removeprefix(base)) if topic.startswith(base) else None
    if match is None:
        raise Unprocessable(f"topic {topic!r} is not a view's results on this server "
                            f"({base}/views/{{id}}/results)")
    unknown = sorted(set(found) - {"@context", "type", "topic", "sendTo", "state", "accept"})
    if unknown:
        raise Unprocessable(f"unsupported subscription feature(s): {', '.join(unknown)} "
                            f"(supported: {', '.join(activity.FEATURES)}, accept)")
    accept = found.get("accept", "application/ld+json")
    if accept not in JSON_TYPES:
        raise Unprocessable(f"notifications are application/ld+json, not {accept!r}")
    return Subscription(kind, topic, int(match.group(1)),
                        _send_to(found.get("sendTo"), kind, allow_private),
                        _state(found.get("state")))


def _channel_type(given: Any, service: str | None) -> str:
    """The channel type named (a full IRI, ``notify:X`` or ``X`` under the
    notification context), which must be the service's."""
    expected = service or activity.WEBSOCKET
    if given is None and service is None:
        return expected
    names = {t: {t, f"notify:{short}", short} for t, short in activity.SERVICES.items()}
    if not isinstance(given, str) or not any(given in n for n in names.values()):
        raise Unprocessable(f"unsupported channel type {given!r} (this server offers "
                            f"{', '.join(activity.SERVICES)})")
    if given not in names[expected]:
        raise Unprocessable(f"this service makes {activity.SERVICES[expected]} channels, not "
                            f"{given}; subscribe at the service the storage description names")
    return expected


def _send_to(given: Any, kind: str, allow_private: bool) -> str | None:
    if kind != activity.WEBHOOK:
        if given is not None:
            raise Unprocessable("sendTo belongs to a WebhookChannel2023 subscription")
        return None
    if not isinstance(given, str):
        raise Unprocessable("a WebhookChannel2023 subscription needs sendTo, an http(s) URL")
    try:
        fetch.check(given, allow_private)
    except fetch.FetchError as e:
        raise Unprocessable(f"sendTo {given!r} is refused: {e}") from None
    return given


def _state(given: Any) -> int | None:
    if given is None:
        return None
    if not isinstance(given, str) or not given.isdigit() or len(given) > 18:
        raise Unprocessable(f"state {given!r} is not a seq this server sent (a notification's "
                            "state)")
    return int(given)


def subscribe(engine: Engine, who: Principal, sub: Subscription) -> tuple[str, int]:
    """The channel (its secret token, and the seq it starts after) for
    ``who``, who may read the view's results: 404 for a view that is not
    theirs, 503 while the view is not readable, 409 for a view without a
    changes feed, 410 for a ``state`` older than the feed keeps."""
    token, hashed = new_token()
    with catalog.snapshot(engine) as c:
        v, s = with_feed(c, who, sub.view_id)
        if not s.current:
            raise NotReady(f"view {v.id} is {s.status}" + (f": {s.note}" if s.note else ""),
                           {"Retry-After": "1"})
        start = int(v.watermark) if sub.state is None else sub.state
        floor = int(feed.position(c, v.id).floor)
        if sub.state is not None and not floor <= sub.state <= int(v.watermark):
            if sub.state > int(v.watermark):
                raise Unprocessable(f"state {sub.state} is ahead of view {v.id} (at "
                                    f"{v.watermark})")
            raise Gone(f"view {v.id}'s changes after {sub.state} are no longer kept; read its "
                       "results and subscribe without state")
    try:
        with engine.begin() as c:
            channels.create(c, _KINDS[sub.channel_type], hashed, sub.view_id, who.role,
                            who.agent, who.webid, start, sub.send_to)
    except IntegrityError:  # the view was dropped meanwhile
        raise NotFound(f"no view {sub.view_id}") from None
    return token, start


def unsubscribe(engine: Engine, who: Principal, token: str) -> bool:
    """The channel named by ``token`` gone, when ``who`` subscribed it (or is the admin)."""
    with engine.begin() as c:
        found = channels.by_token(c, token_hash(token))
        if found is None or not (who.is_admin() or (found.agent_id, found.webid) ==
                                 (who.agent, who.webid)):
            return False
        return channels.delete(c, token_hash(token))


def channel(engine: Engine, token: str) -> Row | None:
    """The channel named by ``token`` (``receiveFrom``'s secret)."""
    with db.reading(engine) as c:
        return channels.by_token(c, token_hash(token))


def delivered(engine: Engine, channel_id: int, position: int) -> None:
    with engine.begin() as c:
        channels.advance(c, channel_id, position)


def ended(engine: Engine, channel_id: int, why: str) -> None:
    with engine.begin() as c:
        channels.end(c, channel_id, channels.ENDED, why)


def subscriber(found: Any) -> Principal:
    """The caller a channel reads as: its subscriber."""
    return Principal(found.role, found.agent_id, found.webid)


def websocket_url(base: str, token: str) -> str:
    parts = urlsplit(base)
    scheme = "wss" if parts.scheme == "https" else "ws"
    return f"{scheme}://{parts.netloc}{parts.path}/notifications/ws/{token}"

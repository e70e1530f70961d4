"""What the Solid Notifications Protocol says in its own terms (design notes
90, 92): the server's storage description (its subscription services and
their channel types), a channel's description, and a notification — an
Activity Streams ``Update`` of a view's results that carries the delta
itself (our extension: ``delta``, a JSON literal in the SPARQL 1.1 Query
Results JSON term syntax, and ``state``, the delta's seq)."""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from server.api.views import changes, live

NOTIFY = "http://www.w3.org/ns/solid/notifications#"
SOLID = "http://www.w3.org/ns/solid/terms#"
WEBSOCKET, WEBHOOK = f"{NOTIFY}WebSocketChannel2023", f"{NOTIFY}WebhookChannel2023"
AS_CONTEXT = "https://www.w3.org/ns/activitystreams"
NOTIFY_CONTEXT = "https://www.w3.org/ns/solid/notification/v1"
PODVIEWS = "https://w3id.org/podviews/ns#"
# a delta is a JSON literal (JSON-LD 1.1 §4.2.2): consumers read it as plain JSON
CONTEXT: list[Any] = [AS_CONTEXT, NOTIFY_CONTEXT,
                      {"delta": {"@id": f"{PODVIEWS}delta", "@type": "@json"}}]
SERVICES = {WEBSOCKET: "WebSocketChannel2023", WEBHOOK: "WebhookChannel2023"}
FEATURES = ("state",)  # a subscriber resumes after the seq it names (note 92)


def service_url(base: str, channel_type: str) -> str:
    return f"{base}/notifications/{SERVICES[channel_type]}/"


def storage_description(base: str) -> str:
    """The server's description (Turtle): the subscription services for
    views' results, and the gateway the Inrupt client negotiates with
    (``solid:notificationGateway``, note 94). Its subject comes first."""
    me = f"<{base}/.well-known/solid>"
    features = ", ".join(f"<{NOTIFY}{f}>" for f in FEATURES)
    lines = [f"{me} a <{SOLID}StorageDescription> ;",
             f"    <{NOTIFY}subscription> " + ", ".join(
                 f"<{service_url(base, t)}>" for t in SERVICES) + " ;",
             f"    <{SOLID}notificationGateway> <{base}/notifications/gateway> ."]
    for t in SERVICES:
        lines.append(f"<{service_url(base, t)}> <{NOTIFY}channelType> <{t}> ;\n"
                     f"    <{NOTIFY}feature> {features} .")
    return "\n".join(lines) + "\n"


def storage_description_jsonld(base: str) -> list[dict[str, Any]]:
    """The same description as expanded JSON-LD (no remote context to fetch)."""
    def ref(iri: str) -> dict[str, str]:
        return {"@id": iri}

    return [{"@id": f"{base}/.well-known/solid", "@type": [f"{SOLID}StorageDescription"],
             f"{NOTIFY}subscription": [ref(service_url(base, t)) for t in SERVICES],
             f"{SOLID}notificationGateway": [ref(f"{base}/notifications/gateway")]},
            *({"@id": service_url(base, t), f"{NOTIFY}channelType": [ref(t)],
               f"{NOTIFY}feature": [ref(f"{NOTIFY}{f}") for f in FEATURES]} for t in SERVICES)]


def channel_json(channel_id: str, channel_type: str, topic: str, receive_from: str | None,
                 send_to: str | None, state: int) -> dict[str, Any]:
    """A subscription's answer: the channel, as the subscription service made it."""
    out: dict[str, Any] = {"@context": [NOTIFY_CONTEXT], "id": channel_id, "type": channel_type,
                           "topic": topic, "state": str(state)}
    if receive_from is not None:
        out["receiveFrom"] = receive_from
    if send_to is not None:
        out["sendTo"] = send_to
    return out


def notification(topic: str, view_id: int, delta: changes.Change) -> dict[str, Any]:
    """One delta as an Activity Streams ``Update`` of the view's results; its
    id names the view and the seq, so a receiver can tell a repeat."""
    body = live.change_json(delta)
    return {"@context": CONTEXT, "id": f"urn:podviews:view:{view_id}:seq:{delta.seq}",
            "type": "Update", "object": topic, "state": str(delta.seq),
            "published": _now(), "delta": body}


def notification_text(topic: str, view_id: int, seq: int, body: str) -> str:
    """``encoded(notification(...))`` around a delta already encoded
    (``body``: its JSON, shared by every channel of the view: note 112)."""
    head = encoded({"@context": CONTEXT, "id": f"urn:podviews:view:{view_id}:seq:{seq}",
                    "type": "Update", "object": topic, "state": str(seq),
                    "published": _now()})
    return f'{head[:-1]},"delta":{body}}}'


_SHARED: OrderedDict[tuple[str, int, int, str], str] = OrderedDict()  # on the event loop


def notification_shared(topic: str, view_id: int, seq: int, body: str) -> str:
    """``notification_text``, encoded once for every channel of the view that
    is sent the same delta (``body``, shared: note 115); its ``published`` is
    when it was first encoded."""
    key = (topic, view_id, seq, body)
    text = _SHARED.get(key)
    if text is None:
        text = _SHARED[key] = notification_text(topic, view_id, seq, body)
        while len(_SHARED) > 256:
            _SHARED.popitem(last=False)
    return text


@dataclass(frozen=True)
class Channel:
    """How the view's writer sends a WebSocketChannel2023 channel its
    changes (``fanout.Style``): each delta's notification, one message
    each, encoded once for every channel of the view; no heartbeat."""

    topic: str
    view_id: int
    heartbeat: None = None

    def messages(self, read: live.Read) -> list[dict[str, Any]]:
        return [{"type": "websocket.send",
                 "text": notification_shared(self.topic, self.view_id, ch.seq,
                                             read.bodies[ch.seq])}
                for ch in read.page.changes]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def encoded(message: dict[str, Any]) -> str:
    return json.dumps(message, separators=(",", ":"))

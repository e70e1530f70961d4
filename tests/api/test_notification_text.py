"""A notification built around a delta encoded once (shared by every channel
of the view, design note 112) is the notification encoded whole."""

from __future__ import annotations

import json

from rdflib import Literal, URIRef

from server.api.notify import activity
from server.api.views import changes, live


def test_a_notification_around_a_shared_delta_is_the_whole_notification() -> None:
    delta = changes.Change(7, [{"s": URIRef("http://ex/a"), "o": Literal("é \"q\"", lang="fr")}],
                           [{"s": URIRef("http://ex/b"), "o": Literal(3)}] * 2, 0, True)
    topic = "http://localhost/views/4/results"
    whole = json.loads(activity.encoded(activity.notification(topic, 4, delta)))
    text = json.loads(activity.notification_text(topic, 4, 7, live.change_body(delta)))
    assert {k: v for k, v in text.items() if k != "published"} == \
        {k: v for k, v in whole.items() if k != "published"}
    assert text["published"].endswith("Z")


def test_channels_sent_the_same_delta_share_one_notification() -> None:
    delta = changes.Change(9, [{"s": URIRef("http://ex/c")}], [], 0, True)
    topic = "http://localhost/views/5/results"
    first = activity.notification_shared(topic, 5, 9, live.change_body(delta))
    assert activity.notification_shared(topic, 5, 9, live.change_body(delta)) == first
    other = activity.notification_shared(topic, 5, 9, live.change_body(
        changes.Change(9, [{"s": URIRef("http://ex/d")}], [], 0, True)))  # another database's
    assert json.loads(other)["delta"]["added"] == [{"s": {"type": "uri", "value": "http://ex/d"}}]
    whole = json.loads(activity.encoded(activity.notification(topic, 5, delta)))
    assert {k: v for k, v in json.loads(first).items() if k != "published"} == \
        {k: v for k, v in whole.items() if k != "published"}

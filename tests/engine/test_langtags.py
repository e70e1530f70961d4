"""``views.langtags`` against pyoxigraph's BCP 47 parser (oxilangtag, an
implementation of its own): random tags of subtags of every length over
letters, digits and the singletons that matter (``x``, ``u``, ``a``)."""

from __future__ import annotations

import random

import pyoxigraph as ox

from views.langtags import well_formed


def _pyoxigraph_takes(tag: str) -> bool:
    try:
        ox.Literal("x", language=tag)
    except ValueError:
        return False
    return True


def test_well_formed_tags_are_pyoxigraphs() -> None:
    rng = random.Random(218)
    fixed = ["en", "en-US", "zh-Hant-TW", "de-CH-1996", "sl-rozaj-biske", "zh-yue-HK", "es-419",
             "en-a-bbb-x-a-ccc", "en-u-ca-gregory", "qaa-Qaaa-QM-x-southern", "i-klingon",
             "zh-min-nan", "en-GB-oed", "art-lojban", "x-whatever", "a-b", "x", "en-x",
             "abcdefghi", "en--US", "en-", "-en", "en_US", "123", "en-a", "i-foo", "é"]
    tags = fixed + ["-".join("".join(rng.choice("abxuAX019") for _ in range(rng.choice(
        [0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 6, 8, 9]))) for _ in range(rng.randint(1, 6)))
        for _ in range(20_000)]
    differ = [t for t in tags if well_formed(t) != _pyoxigraph_takes(t)]
    assert differ == []
    assert sum(map(well_formed, tags)) > 1_000  # both sides are drawn

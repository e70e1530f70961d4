"""Relative references resolved by ``views.iris`` against RFC 3986 §5.4's
own table (base ``http://a/b/c/d;p?q``): every normal and abnormal example,
the RFC as the oracle. Python's ``urljoin`` misses some of them."""

from __future__ import annotations

import pytest

from views.iris import resolve

BASE = "http://a/b/c/d;p?q"
EXAMPLES = {
    # §5.4.1 normal examples
    "g:h": "g:h", "g": "http://a/b/c/g", "./g": "http://a/b/c/g", "g/": "http://a/b/c/g/",
    "/g": "http://a/g", "//g": "http://g", "?y": "http://a/b/c/d;p?y",
    "g?y": "http://a/b/c/g?y", "#s": "http://a/b/c/d;p?q#s", "g#s": "http://a/b/c/g#s",
    "g?y#s": "http://a/b/c/g?y#s", ";x": "http://a/b/c/;x", "g;x": "http://a/b/c/g;x",
    "g;x?y#s": "http://a/b/c/g;x?y#s", "": "http://a/b/c/d;p?q", ".": "http://a/b/c/",
    "./": "http://a/b/c/", "..": "http://a/b/", "../": "http://a/b/", "../g": "http://a/b/g",
    "../..": "http://a/", "../../": "http://a/", "../../g": "http://a/g",
    # §5.4.2 abnormal examples
    "../../../g": "http://a/g", "../../../../g": "http://a/g", "/./g": "http://a/g",
    "/../g": "http://a/g", "g.": "http://a/b/c/g.", ".g": "http://a/b/c/.g",
    "g..": "http://a/b/c/g..", "..g": "http://a/b/c/..g", "./../g": "http://a/b/g",
    "./g/.": "http://a/b/c/g/", "g/./h": "http://a/b/c/g/h", "g/../h": "http://a/b/c/h",
    "g;x=1/./y": "http://a/b/c/g;x=1/y", "g;x=1/../y": "http://a/b/c/y",
    "g?y/./x": "http://a/b/c/g?y/./x", "g?y/../x": "http://a/b/c/g?y/../x",
    "g#s/./x": "http://a/b/c/g#s/./x", "g#s/../x": "http://a/b/c/g#s/../x",
    "http:g": "http:g",  # strict parsers (§5.4.2)
}


@pytest.mark.parametrize(("reference", "target"), EXAMPLES.items())
def test_a_reference_resolves_as_rfc_3986_says(reference: str, target: str) -> None:
    assert resolve(reference, BASE) == target


def test_an_empty_reference_drops_the_bases_fragment() -> None:
    """§5.2.2: the target takes the base's path and query, the reference's
    fragment (none): ``<>`` against ``…#f`` is the base without ``#f``."""
    assert resolve("", "http://ex/a?q#f") == "http://ex/a?q"
    assert resolve("#g", "http://ex/a#f") == "http://ex/a#g"

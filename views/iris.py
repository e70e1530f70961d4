"""Relative IRI references resolved against a base, by RFC 3986 §5.2 (the
algorithm SPARQL 1.1 §4.1.1.1 and the IRI function §17.4.2.8 name).
Python's ``urljoin`` is not it: ``urljoin("http://ex/a#f", "")`` keeps the
fragment, and schemes outside its list are not resolved at all.

>>> resolve("../c", "http://ex/a/b")
'http://ex/c'
>>> resolve("", "http://ex/a?q#f")
'http://ex/a?q'
>>> resolve("#g", "http://ex/a?q#f"), resolve("?y", "http://ex/a/b?q")
('http://ex/a?q#g', 'http://ex/a/b?y')
>>> resolve("//h/./x/../y", "urn:ex:a"), resolve("b", "tag:ex,2020:a/z")
('urn://h/y', 'tag:ex,2020:a/b')
"""

from __future__ import annotations

import re

_PARTS = re.compile(r"^(?:([^:/?#]+):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$", re.DOTALL)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")


def is_absolute(iri: str) -> bool:
    """``iri`` has a scheme (RFC 3986 §4.3)."""
    return _SCHEME.match(iri) is not None


# what SPARQL's IRIREF (§19.8) and RFC 3987 keep out of an IRI
_NOT_IN_IRI = re.compile(r'[\x00-\x20<>"{}|^`\\]')


def is_absolute_iri(text: str) -> bool:
    """``text`` is an absolute IRI: a scheme, and none of the characters no
    IRI holds (controls, space, ``<>"{}|^``` `` and backslash).

    >>> is_absolute_iri("http://ex/a"), is_absolute_iri("http://ex/a b"), is_absolute_iri("rel")
    (True, False, False)
    """
    return is_absolute(text) and _NOT_IN_IRI.search(text) is None


def resolve(reference: str, base: str) -> str:
    """``reference`` resolved against the absolute ``base`` (RFC 3986
    §5.2.2, strict); a reference with a scheme is only normalised of its
    dot segments."""
    r_scheme, r_auth, r_path, r_query, r_frag = _PARTS.match(reference).groups()  # type: ignore[union-attr]
    if r_scheme is not None and is_absolute(reference):
        return _compose(r_scheme, r_auth, _remove_dots(r_path), r_query, r_frag)
    b_scheme, b_auth, b_path, b_query, _ = _PARTS.match(base).groups()  # type: ignore[union-attr]
    if r_auth is not None:
        return _compose(b_scheme, r_auth, _remove_dots(r_path), r_query, r_frag)
    if r_path == "":
        return _compose(b_scheme, b_auth, b_path, b_query if r_query is None else r_query, r_frag)
    if r_path.startswith("/"):
        path = r_path
    elif b_auth is not None and b_path == "":
        path = "/" + r_path
    else:
        path = b_path[:b_path.rfind("/") + 1] + r_path
    return _compose(b_scheme, b_auth, _remove_dots(path), r_query, r_frag)


def _remove_dots(path: str) -> str:
    """RFC 3986 §5.2.4: ``.`` and ``..`` segments removed."""
    out: list[str] = []
    while path:
        if path.startswith("../"):
            path = path[3:]
        elif path.startswith("./"):
            path = path[2:]
        elif path.startswith("/./") or path == "/.":
            path = "/" + path[3:]
        elif path.startswith("/../") or path == "/..":
            path = "/" + path[4:]
            if out:
                out.pop()
        elif path in (".", ".."):
            path = ""
        else:
            cut = path.find("/", 1)
            cut = len(path) if cut < 0 else cut
            out.append(path[:cut])
            path = path[cut:]
    return "".join(out)


def _compose(scheme: str | None, auth: str | None, path: str, query: str | None,
             frag: str | None) -> str:
    """RFC 3986 §5.3."""
    return "".join((f"{scheme}:" if scheme is not None else "",
                    f"//{auth}" if auth is not None else "", path,
                    f"?{query}" if query is not None else "",
                    f"#{frag}" if frag is not None else ""))

"""XPath regular expressions (F&O 3.1 §5.6.1, on XSD 1.1 Part 2 Appendix G)
translated to RE2's syntax, which REGEX and REPLACE run (linear time,
design note 53).

RE2 reads most of the syntax alike but not its classes: XPath's ``\\w`` is
every character but punctuation, separators and others (``é`` and ``$``
are word characters, ``_`` is not), ``\\d`` is every decimal digit
(``٣``), ``\\s`` is four characters, ``.`` stops at ``\\r`` too, ``\\i``
and ``\\c`` are XML's name characters, and ``[a-z-[aeiou]]`` subtracts.
So every class is computed here as a set of code point ranges and written
out whole; the rest is parsed and checked, so that a text XPath refuses
(``a{,2}``, ``a{``, ``\\b``) is an error, not a different pattern.

>>> print(translate("a.c", ""), translate("a.c", "s"), translate("[a-c-[b]]", "i"))
\\x{61}[^\\n\\r]\\x{63} \\x{61}(?s:.)\\x{63} [\\x{41}\\x{43}\\x{61}\\x{63}]
"""

from __future__ import annotations

import unicodedata
from bisect import bisect_left, bisect_right
from functools import cache

from views.terms import ExprError

Ranges = tuple[tuple[int, int], ...]  # disjoint, sorted, inclusive

_MAX = 0x10FFFF
_SURROGATES = ((0xD800, 0xDFFF),)
_META = set(".\\?*+{}()|[]^$")  # never a character of their own (NormalChar, with XPath's anchors)
_SINGLE = {"n": "\n", "r": "\r", "t": "\t"} | {c: c for c in "\\|.?*+(){}-[]^$"}
_SPACE = " \t\n\r"  # XPath's whitespace: \s, and what the x flag removes
# XML 1.0 (5th ed.) NameStartChar and NameChar: \i and \c (XSD 1.1 §G.4.2.5)
_NAME_START: Ranges = (
    (0x3A, 0x3A), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A), (0xC0, 0xD6), (0xD8, 0xF6),
    (0xF8, 0x2FF), (0x370, 0x37D), (0x37F, 0x1FFF), (0x200C, 0x200D), (0x2070, 0x218F),
    (0x2C00, 0x2FEF), (0x3001, 0xD7FF), (0xF900, 0xFDCF), (0xFDF0, 0xFFFD), (0x10000, 0xEFFFF))
_NAME_MORE: Ranges = ((0x2D, 0x2E), (0x30, 0x39), (0xB7, 0xB7), (0x300, 0x36F), (0x203F, 0x2040))


def union(*sets: Ranges) -> Ranges:
    """The ranges of every set, merged.

    >>> union(((1, 3),), ((4, 6), (9, 9)))
    ((1, 6), (9, 9))
    """
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(r for s in sets for r in s):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(hi, out[-1][1]))
        else:
            out.append((lo, hi))
    return tuple(out)


def complement(s: Ranges) -> Ranges:
    """The code points not in ``s``.

    >>> complement(((0, 9), (20, 0x10FFFF)))
    ((10, 19),)
    """
    out, start = [], 0
    for lo, hi in s:
        if lo > start:
            out.append((start, lo - 1))
        start = hi + 1
    if start <= _MAX:
        out.append((start, _MAX))
    return tuple(out)


def minus(a: Ranges, b: Ranges) -> Ranges:
    return complement(union(complement(a), b))


@cache
def _categories() -> dict[str, Ranges]:
    """Each Unicode general category's ranges, from Python's database (one
    pass over the code points, the first time a category is used)."""
    spans: dict[str, list[tuple[int, int]]] = {}
    start, current = 0, unicodedata.category("\x00")
    for cp in range(1, _MAX + 2):
        cat = unicodedata.category(chr(cp)) if cp <= _MAX else ""
        if cat != current:
            spans.setdefault(current, []).append((start, cp - 1))
            start, current = cp, cat
    found = {k: tuple(v) for k, v in spans.items()}
    for major in "LMNPSZC":
        found[major] = union(*(v for k, v in found.items() if k[0] == major and len(k) == 2))
    return found


def category(name: str) -> Ranges:
    if name.startswith("Is"):
        raise ExprError(f"regex block escape \\p{{{name}}} is not supported")
    found = _categories().get(name)
    if found is None:
        raise ExprError(f"regex: unknown category \\p{{{name}}}")
    return found


@cache
def _cased() -> tuple[list[int], dict[int, Ranges]]:
    """The code points with case variants, sorted, and each one's variants
    (itself included): F&O 3.1 §5.6.1.1's flag ``i`` matches a character
    and each character that shares its upper case or its lower case (one
    pass over the code points, the first time the flag is used)."""
    by_upper: dict[str, list[int]] = {}
    by_lower: dict[str, list[int]] = {}
    cased: list[int] = []
    for cp in range(_MAX + 1):
        c = chr(cp)
        upper, lower = c.upper(), c.lower()
        if upper == c and lower == c:
            continue
        cased.append(cp)
        for key, groups in ((upper, by_upper), (lower, by_lower)):
            groups.setdefault(key, []).append(cp)
    for cp in list(cased):  # a mapping's target ("i" of "I") shares its keys
        for target in (chr(cp).upper(), chr(cp).lower()):
            if len(target) == 1 and ord(target) not in by_upper.get(target.upper(), ()):
                by_upper.setdefault(target.upper(), []).append(ord(target))
                by_lower.setdefault(target.lower(), []).append(ord(target))
                cased.append(ord(target))
    variants = {cp: union(*(((v, v),) for v in {*by_upper.get(chr(cp).upper(), ()),
                                                 *by_lower.get(chr(cp).lower(), ()), cp}))
                for cp in cased}
    return sorted(variants), variants


def folded(s: Ranges) -> Ranges:
    """``s`` and every case variant of its characters (flag ``i``).

    >>> folded(((ord("a"), ord("b")),)) == ((0x41, 0x42), (0x61, 0x62))
    True
    """
    order, variants = _cased()
    out = [s]
    for lo, hi in s:
        for cp in order[bisect_left(order, lo):bisect_right(order, hi)]:
            out.append(variants[cp])
    return union(*out)


def _multi(c: str) -> Ranges | None:
    """The set of a multi-character escape ``\\c`` (and its complement for
    the upper case), None when ``c`` names none."""
    sets = {"s": lambda: union(*(((ord(x), ord(x)),) for x in _SPACE)),
            "i": lambda: _NAME_START, "c": lambda: union(_NAME_START, _NAME_MORE),
            "d": lambda: category("Nd"),
            "w": lambda: complement(union(category("P"), category("Z"), category("C")))}
    make = sets.get(c.lower())
    if make is None:
        return None
    return make() if c.islower() else complement(make())


def _write(s: Ranges) -> str:
    s = minus(s, _SURROGATES)  # RE2 runs on UTF-8, which has none
    if not s:
        return f"[^\\x{{0}}-\\x{{{_MAX:X}}}]"
    body = "".join(f"\\x{{{lo:X}}}" if lo == hi else f"\\x{{{lo:X}}}-\\x{{{hi:X}}}"
                   for lo, hi in s)
    return f"[{body}]"


def _char(c: str) -> str:
    return f"\\x{{{ord(c):X}}}"


class _Parser:
    def __init__(self, text: str, flags: str) -> None:
        self.text, self.i = text, 0
        self.dotall, self.extended = "s" in flags, "x" in flags
        self.fold = "i" in flags  # a pattern's own characters match their case variants

    def char(self, c: str) -> str:
        """A character of the pattern, as an atom."""
        return _write(folded(((ord(c), ord(c)),))) if self.fold else _char(c)

    def chars(self, lo: str, hi: str) -> Ranges:
        """A character or a range in a class, before negation or subtraction
        (F&O 3.1 §5.6.1.1: ``[^a]`` with ``i`` matches neither a nor A)."""
        s = ((ord(lo), ord(hi)),)
        return folded(s) if self.fold else s

    def fail(self, why: str) -> ExprError:
        return ExprError(f"regex {self.text!r} at {self.i}: {why}")

    def peek(self, in_class: bool = False) -> str | None:
        if self.extended and not in_class:
            while self.i < len(self.text) and self.text[self.i] in _SPACE:
                self.i += 1
        return self.text[self.i] if self.i < len(self.text) else None

    def take(self, in_class: bool = False) -> str:
        c = self.peek(in_class)
        if c is None:
            raise self.fail("unexpected end")
        self.i += 1
        return c

    def regexp(self, depth: int = 0) -> str:
        branches = [self.branch(depth)]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.branch(depth))
        return "|".join(branches)

    def branch(self, depth: int) -> str:
        out = []
        while (c := self.peek()) is not None and c != "|" and not (c == ")" and depth):
            out.append(self.atom(depth) + self.quantifier())
        return "".join(out)

    def quantifier(self) -> str:
        c = self.peek()
        if c in ("?", "*", "+"):
            self.i += 1
            q = c
        elif c == "{":
            self.i += 1
            q = "{" + self.quantity() + "}"
        else:
            return ""
        if self.peek() == "?":  # reluctant
            self.i += 1
            q += "?"
        return q

    def quantity(self) -> str:
        lo = self.digits()
        if lo is None:
            raise self.fail("a quantifier needs a lower bound")
        text = str(lo)
        if self.peek() == ",":
            self.i += 1
            hi = self.digits()
            if hi is not None and hi < lo:
                raise self.fail("a quantifier's upper bound is below its lower")
            text += "," + ("" if hi is None else str(hi))
        if self.take() != "}":
            raise self.fail("a quantifier ends with }")
        return text

    def digits(self) -> int | None:
        start = self.i
        while (c := self.peek()) is not None and c.isascii() and c.isdigit():
            self.i += 1
        return int(self.text[start:self.i]) if self.i > start else None

    def atom(self, depth: int) -> str:
        c = self.take()
        if c == "(":
            head = "("
            if self.text.startswith("?:", self.i):
                self.i += 2
                head = "(?:"
            inner = self.regexp(depth + 1)
            if self.take() != ")":
                raise self.fail("unclosed group")
            return head + inner + ")"
        if c in ("^", "$"):
            return c
        if c == ".":
            return "(?s:.)" if self.dotall else "[^\\n\\r]"
        if c == "[":
            return _write(self.group())
        if c == "\\":
            escaped = self.escape()
            return _char(escaped) if isinstance(escaped, str) else _write(escaped)
        if c in _META:
            raise self.fail(f"{c} must be escaped")
        return self.char(c)

    def escape(self) -> str | Ranges:
        """After a backslash: a character, or a set of them."""
        c = self.take(in_class=True)
        if c in _SINGLE:
            return _SINGLE[c]
        if c in "pP":
            if self.take(in_class=True) != "{":
                raise self.fail("\\p needs {")
            end = self.text.find("}", self.i)
            if end < 0:
                raise self.fail("unclosed \\p{")
            name, self.i = self.text[self.i:end], end + 1
            s = category(name)
            return s if c == "p" else complement(s)
        if c.isdigit():
            raise self.fail("back-references are not supported (RE2 runs in linear time)")
        multi = _multi(c)
        if multi is None:
            raise self.fail(f"unknown escape \\{c}")
        return multi

    def group(self) -> Ranges:
        """After ``[``: a character class expression, through its ``]``."""
        negated = self.text.startswith("^", self.i)
        self.i += negated
        parts: list[Ranges] = []
        first = True
        while True:
            c = self.take(in_class=True)
            if c == "]":
                if first:
                    raise self.fail("an empty class")
                break
            if c == "-" and self.peek(in_class=True) == "[" and not first:
                self.i += 1
                subtracted = self.group()
                if self.take(in_class=True) != "]":
                    raise self.fail("a subtraction ends its class")
                s = union(*parts)
                return minus(complement(s) if negated else s, subtracted)
            lo = self.class_char(c)
            first = False
            if isinstance(lo, tuple):
                parts.append(lo)
                continue
            if self.peek(in_class=True) == "-" and self.text[self.i + 1:self.i + 2] not in ("[", "]"):
                self.i += 1
                hi = self.class_char(self.take(in_class=True))
                if isinstance(hi, tuple) or ord(hi) < ord(lo):
                    raise self.fail("bad range")
                parts.append(self.chars(lo, hi))
            else:
                parts.append(self.chars(lo, lo))
        s = union(*parts)
        return complement(s) if negated else s

    def class_char(self, c: str) -> str | Ranges:
        if c == "\\":
            return self.escape()
        if c == "[":
            raise self.fail("[ must be escaped in a class")
        return c


def translate(pattern: str, flags: str) -> str:
    """RE2's text for the XPath ``pattern`` under ``flags`` (checked:
    ``ismxq``); an ExprError for a text XPath refuses or RE2 cannot run."""
    parser = _Parser(pattern, flags)
    if "q" in flags:
        body = "".join(parser.char(c) for c in pattern)
    else:
        body = parser.regexp()
        if parser.peek() is not None:
            raise parser.fail("unbalanced )")
    # no (?i): RE2 would fold escapes and complemented classes too (\p{Lu}, [^a])
    return ("(?m)" if "m" in flags else "") + body

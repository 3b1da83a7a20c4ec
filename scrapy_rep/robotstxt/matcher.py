"""Longest-match rule sets, compiled once per product token (RFC 9309 §2.2.2-3).

Theory of operation: every pattern is cut at its first ``*``. The literal
part before it (the *prefix*) indexes the rule in a dict, so a path only
ever looks at rules whose prefix it starts with: one dict probe per distinct
prefix length, longest first, stopping as soon as no shorter prefix can hold
a longer rule. The rest of a wildcard pattern is matched segment by segment
with ``str.find``, leftmost first, which is exact for ``*``-only globs and
linear in the path: a hostile pattern of many ``*`` cannot backtrack.

A rule's weight is the octet length of its normalised pattern, ``*`` and
``$`` included (Google's choice; the RFC says "most octets"). Equal
weights: allow wins.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from scrapy_rep.robotstxt.parser import Rule

_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_HEX = frozenset(b"0123456789abcdefABCDEF")
_NEEDS_NORMALISING = re.compile(r"[^\x21-\x7e]|%")
_ROBOTS_TXT = "/robots.txt"


def normalise(text: str) -> str:
    """Put a path or pattern in one canonical percent-encoding (RFC 3986 §6.2.2).

    Octets outside printable ASCII are encoded (UTF-8), ``%XX`` of an
    unreserved character is decoded, other escapes get upper-case hex, and a
    ``%`` that starts no escape becomes ``%25``. Idempotent.
    """
    if _NEEDS_NORMALISING.search(text) is None:
        return text
    try:
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate that stands for no octet
        data = text.encode("utf-8", "surrogatepass")
    out: list[str] = []
    i, n = 0, len(data)
    while i < n:
        octet = data[i]
        if octet == 0x25:  # '%'
            if i + 2 < n and data[i + 1] in _HEX and data[i + 2] in _HEX:
                value = int(data[i + 1 : i + 3], 16)
                out.append(chr(value) if value in _UNRESERVED else f"%{value:02X}")
                i += 3
                continue
            out.append("%25")
        elif 0x21 <= octet <= 0x7E:
            out.append(chr(octet))
        else:
            out.append(f"%{octet:02X}")
        i += 1
    return "".join(out)


def path_of(url: str) -> str:
    """Path, params and query of an absolute URL or a path; never empty."""
    if not url.startswith("/"):
        scheme_end = url.find("://")
        if scheme_end >= 0:
            start = scheme_end + 3
            ends = [i for i in (url.find(c, start) for c in "/?#") if i >= 0]
            url = url[min(ends) :] if ends else ""
    hash_at = url.find("#")
    if hash_at >= 0:
        url = url[:hash_at]
    if not url.startswith("/"):
        url = "/" + url
    return url


@dataclass(frozen=True, slots=True)
class _Entry:
    weight: int
    rule: Rule
    anchored: bool
    #: ``None`` for a literal pattern; else the segments after the prefix
    segments: tuple[str, ...] | None


def _entries(rule: Rule) -> Iterable[tuple[str, _Entry]]:
    pattern = normalise(rule.pattern)
    if not pattern or pattern[0] not in "/*":
        return  # matches nothing: empty, or no leading '/' (see parser)
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    prefix, star, rest = body.partition("*")
    segments = tuple(rest.split("*")) if star else None
    yield prefix, _Entry(len(pattern), rule, anchored, segments)
    # Google: "Allow: /d/index.html" also allows "/d/" itself.
    slash = body.rfind("/")
    if rule.allow and body.startswith("/index.htm", slash):
        directory = body[: slash + 1]
        # The directory keeps its wildcards: "/a*/index.html" allows "/ab/".
        d_prefix, d_star, d_rest = directory.partition("*")
        d_segments = tuple(d_rest.split("*")) if d_star else None
        yield d_prefix, _Entry(len(directory) + 1, rule, True, d_segments)


def _matches(entry: _Entry, path: str, start: int) -> bool:
    segments = entry.segments
    if segments is None:
        return not entry.anchored or len(path) == start
    position = start
    for segment in segments[:-1]:
        found = path.find(segment, position)
        if found < 0:
            return False
        position = found + len(segment)
    last = segments[-1]
    if entry.anchored:
        return path.endswith(last) and len(path) - len(last) >= position
    return not last or path.find(last, position) >= 0


class RuleSet:
    """The merged rules of the groups that apply to one product token."""

    __slots__ = ("_bound", "_index", "_lengths")

    def __init__(self, rules: Iterable[Rule]) -> None:
        index: dict[str, list[_Entry]] = {}
        for rule in rules:
            for prefix, entry in _entries(rule):
                index.setdefault(prefix, []).append(entry)
        for entries in index.values():
            entries.sort(key=lambda e: (e.weight, e.rule.allow), reverse=True)
        self._index = index
        self._lengths = sorted({len(p) for p in index}, reverse=True)
        # _bound[i]: the heaviest rule whose prefix is no longer than _lengths[i]
        bound: list[int] = []
        heaviest_by_length: dict[int, int] = {}
        for prefix, entries in index.items():
            length = len(prefix)
            heaviest_by_length[length] = max(heaviest_by_length.get(length, 0), entries[0].weight)
        running = 0
        for length in reversed(self._lengths):
            running = max(running, heaviest_by_length[length])
            bound.append(running)
        self._bound = bound[::-1]

    def __len__(self) -> int:
        return sum(map(len, self._index.values()))

    def match(self, path: str) -> Rule | None:
        """The deciding rule for a normalised path, or None if none matches."""
        best: _Entry | None = None
        index, bound = self._index, self._bound
        size = len(path)
        for i, length in enumerate(self._lengths):
            if length > size:
                continue
            if best is not None and (
                best.weight > bound[i] or (best.weight == bound[i] and best.rule.allow)
            ):
                break
            entries = index.get(path[:length])
            if entries is None:
                continue
            for entry in entries:
                if best is not None and (
                    entry.weight < best.weight
                    or (entry.weight == best.weight and not entry.rule.allow)
                ):
                    break
                if _matches(entry, path, length):
                    best = entry
                    break
        return None if best is None else best.rule


def is_robots_txt(path: str) -> bool:
    """RFC 9309 §2.2.2: ``/robots.txt`` is implicitly allowed."""
    return path == _ROBOTS_TXT

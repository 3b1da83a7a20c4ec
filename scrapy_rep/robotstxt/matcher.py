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

from scrapy_rep.robotstxt.parser import Rule

_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
#: two hex digits (any case) -> their canonical form: the character if unreserved
_ESCAPES = {
    f"{a}{b}": chr(int(a + b, 16)) if int(a + b, 16) in _UNRESERVED else f"%{a}{b}".upper()
    for a in "0123456789abcdefABCDEF"
    for b in "0123456789abcdefABCDEF"
}
#: octets outside printable ASCII (as latin-1 characters) -> %XX
_PRINTABLE_BUT_PERCENT = bytes(range(0x21, 0x7F)).replace(b"%", b"")
_ENCODE = {octet: f"%{octet:02X}" for octet in (*range(0x21), *range(0x7F, 0x100))}
_SCHEME_AUTHORITY = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*").match
ROBOTS_TXT = "/robots.txt"


def normalise(text: str) -> str:
    """Put a path or pattern in one canonical percent-encoding (RFC 3986 §6.2.2).

    Octets outside printable ASCII are encoded (UTF-8), ``%XX`` of an
    unreserved character is decoded, other escapes get upper-case hex, and a
    ``%`` that starts no escape becomes ``%25``. Idempotent.
    """
    plain = False
    if text.isascii():
        # bytes.translate deletes the printable octets in one C pass (str.isprintable
        # is ~50 times slower); what is left says what there is to do.
        leftover = text.encode("ascii").translate(None, _PRINTABLE_BUT_PERCENT)
        if not leftover:
            return text  # the common case
        plain = not leftover.strip(b"%")
    if not plain:
        try:
            data = text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:  # a lone surrogate that stands for no octet
            data = text.encode("utf-8", "surrogatepass")
        text = data.decode("latin-1").translate(_ENCODE)
    head, *escapes = text.split("%")
    out = [head]
    for part in escapes:
        canonical = _ESCAPES.get(part[:2])
        if canonical is None:
            out.append("%25" + part)
        else:
            out.append(canonical + part[2:])
    return "".join(out)


def path_of(url: str) -> str:
    """Path, params and query of an absolute URL or a path; never empty."""
    if url[:1] != "/":
        authority = _SCHEME_AUTHORITY(url)
        if authority is not None:
            url = url[authority.end() :]
    fragment = url.find("#")
    if fragment >= 0:
        url = url[:fragment]
    return url if url[:1] == "/" else "/" + url


#: (weight, allow, rule, anchored, segments after the prefix or None if literal)
_Entry = tuple[int, bool, Rule, bool, "tuple[str, ...] | None"]


def _entries(rule: Rule) -> Iterable[tuple[str, _Entry]]:
    pattern = normalise(rule.pattern)
    if not pattern or pattern[0] not in "/*":
        return  # matches nothing: empty, or no leading '/' (see parser)
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    prefix, star, rest = body.partition("*")
    segments = tuple(rest.split("*")) if star else None
    yield prefix, (len(pattern), rule.allow, rule, anchored, segments)
    # Google: "Allow: /d/index.html" also allows "/d/" itself.
    slash = body.rfind("/")
    if rule.allow and body.startswith("/index.htm", slash):
        directory = body[: slash + 1]
        # The directory keeps its wildcards: "/a*/index.html" allows "/ab/".
        d_prefix, d_star, d_rest = directory.partition("*")
        d_segments = tuple(d_rest.split("*")) if d_star else None
        yield d_prefix, (len(directory) + 1, True, rule, True, d_segments)


def _glob(path: str, position: int, segments: tuple[str, ...], anchored: bool) -> bool:
    """Does ``path[position:]`` match the ``*``-separated segments? Leftmost-first, linear."""
    last = segments[-1]
    # The last segment is the cheapest test to fail on (one C scan); hostile
    # patterns of many stars then fail before the per-segment loop.
    if anchored:
        if not path.endswith(last):
            return False
    elif last and path.find(last, position) < 0:
        return False
    for segment in segments[:-1]:
        found = path.find(segment, position)
        if found < 0:
            return False
        position = found + len(segment)
    if anchored:
        return path.endswith(last) and len(path) - len(last) >= position
    return not last or path.find(last, position) >= 0


class RuleSet:
    """The merged rules of the groups that apply to one product token."""

    __slots__ = ("_index", "_plan", "_size")

    def __init__(self, rules: Iterable[Rule]) -> None:
        buckets: dict[str, list[_Entry]] = {}
        for rule in rules:
            for prefix, entry in _entries(rule):
                buckets.setdefault(prefix, []).append(entry)
        index: dict[str, tuple[_Entry, ...]] = {}
        heaviest: dict[int, int] = {}
        for prefix, entries in buckets.items():
            entries.sort(key=lambda e: (e[0], e[1]), reverse=True)
            index[prefix] = tuple(entries)
            heaviest[len(prefix)] = max(heaviest.get(len(prefix), 0), entries[0][0])
        # The plan: prefix lengths, longest first, each with the heaviest rule
        # a prefix of that length or shorter can hold (to stop early).
        plan: list[tuple[int, int]] = []
        running = 0
        for length in sorted(heaviest):
            running = max(running, heaviest[length])
            plan.append((length, running))
        plan.reverse()
        self._index = index
        self._plan = tuple(plan)
        self._size = sum(map(len, index.values()))

    def __len__(self) -> int:
        return self._size

    def match(self, path: str) -> Rule | None:
        """The deciding rule for a normalised path, or None if none matches."""
        index = self._index
        size = len(path)
        best: Rule | None = None
        best_weight, best_allow = -1, False
        for length, bound in self._plan:
            if length > size:
                continue
            if best_weight > bound or (best_weight == bound and best_allow):
                break
            entries = index.get(path[:length])
            if entries is None:
                continue
            for weight, allow, rule, anchored, segments in entries:
                if weight < best_weight or (weight == best_weight and (best_allow or not allow)):
                    break
                if segments is None:
                    if anchored and size != length:
                        continue
                elif not _glob(path, length, segments, anchored):
                    continue
                best, best_weight, best_allow = rule, weight, allow
                break
        return best


def is_robots_txt(path: str) -> bool:
    """RFC 9309 §2.2.2: ``/robots.txt`` is implicitly allowed."""
    return path == ROBOTS_TXT

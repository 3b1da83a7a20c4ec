"""Longest-match rule sets, compiled once per product token (RFC 9309 §2.2.2-3).

Theory of operation: every pattern is cut at its first ``*``. The literal
part before it (the *prefix*) indexes the rule in a dict, so a path only
ever looks at rules whose prefix it starts with: one dict probe per distinct
prefix length, longest first, stopping as soon as no shorter prefix can hold
a longer rule. Only the lengths that can match are probed: a rule set with
many lengths keeps a *plan* (its lengths) per *head*, the first :data:`HEAD`
characters that prefixes at least that long begin with, plus the shorter
prefixes the head starts with; a path takes its head's plan. The rest of a
wildcard pattern is matched segment by segment with ``str.find``, leftmost
first, which is exact for ``*``-only globs and linear in the path: a hostile
pattern of many ``*`` cannot backtrack.

A rule's weight is the octet length of its normalised pattern, ``*`` and
``$`` included (Google's choice; the RFC says "most octets"). Equal
weights: allow wins.

Patterns and paths are compared in one canonical percent-encoding
(:func:`normalise`). In a pattern, a raw ``*`` and a trailing ``$`` are
special and ``%2A`` / ``%24`` are the literal characters (RFC 9309 §2.2.3),
so the matcher turns those escapes back into ``*`` / ``$`` inside literal
pieces and reads URLs the same way (:func:`normalise_path`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from scrapy_rep.robotstxt.parser import Rule

_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
#: What RFC 3986 allows unencoded in a path or query: unreserved, sub-delims,
#: ':', '@', '/' and '?' (§3.3, §3.4). Everything else -- controls, space,
#: ``" < > [ \\ ] ^ ` { | }``, '#' and non-ASCII -- is compared as its %XX
#: escape, the form Scrapy (w3lib's safe_url_string) sends.
_ALLOWED = bytes(_UNRESERVED) + b"!$&'()*+,;=:@/?"
#: two hex digits (any case) -> their canonical form: the character if unreserved
_ESCAPES = {
    f"{a}{b}": chr(int(a + b, 16)) if int(a + b, 16) in _UNRESERVED else f"%{a}{b}".upper()
    for a in "0123456789abcdefABCDEF"
    for b in "0123456789abcdefABCDEF"
}
#: octets (as latin-1 characters) that are neither allowed nor '%' -> %XX
_ENCODE = {octet: f"%{octet:02X}" for octet in range(256) if octet not in _ALLOWED + b"%"}
#: scheme and authority (RFC 3986 §3.1-3.2: it ends at '/', '?' or '#'), if
#: any, then the path and query up to the fragment
_PATH = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*)?([^#]*)").match
_AUTHORITY = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*)?").match
#: a character outside _ALLOWED ('%', '#', space, non-ASCII, ...): a path without one
#: is in normal form already (one C scan, cheaper than encoding and translating)
NOT_PLAIN = re.compile(r"[^A-Za-z0-9\-._~!$&'()*+,;=:@/?]").search
#: the same, '%' allowed
_NOT_PLAIN_OR_ESCAPE = re.compile(r"[^A-Za-z0-9\-._~!$&'()*+,;=:@/?%]").search
#: an escape :func:`normalise_path` changes: not two upper-case hex digits, one of an
#: unreserved octet (A-Z a-z 0-9 - . _ ~), or %2A / %24 (read as '*' and '$')
_CHANGED_ESCAPE = re.compile(r"%(?![0-9A-F]{2})|%(?:[46][1-9A-F]|[57][0-9A]|3[0-9]|2[ADE4]|5F|7E)")
#: up to this length, one regex call splits a URL fastest
SHORT_URL = 512
ROBOTS_TXT = "/robots.txt"


def normalise(text: str) -> str:
    """Put a path or pattern in one canonical percent-encoding (RFC 3986 §6.2.2).

    Octets that RFC 3986 does not allow in a path or query (non-ASCII as
    UTF-8, controls, space, ``" < > [ \\ ] ^ ` { | }``) are encoded, ``%XX`` of
    an unreserved character is decoded, other escapes get upper-case hex, and
    a ``%`` that starts no escape becomes ``%25``. Idempotent. Reserved
    characters (``/ ? : @ ! $ & ' ( ) * + , ; =``) stay as written, and so do
    their escapes: ``%2F`` is not ``/``.
    """
    plain = False
    if text.isascii():
        # bytes.translate deletes the allowed octets in one C pass (str.isprintable
        # is ~50 times slower); what is left says what there is to do.
        leftover = text.encode("ascii").translate(None, _ALLOWED)
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
    if len(url) <= SHORT_URL:
        path: str = _PATH(url)[1]  # type: ignore[index]  # one C call; always matches
    else:  # the regex reads long URLs slower than str.find
        end = _AUTHORITY(url).end()  # type: ignore[union-attr]  # always matches
        fragment = url.find("#", end)
        path = url[end:fragment] if fragment >= 0 else url[end:]
    return path if path[:1] == "/" else "/" + path


def normalise_path(text: str) -> str:
    """A URL's path as rules are matched against it: :func:`normalise`, then
    ``%2A`` and ``%24`` read as ``*`` and ``$``.

    In a URL, ``*`` and ``$`` are plain characters; RFC 9309 §2.2.3 has a
    pattern match them literally with ``%2A`` and ``%24`` (a pattern's raw
    ``*`` and trailing ``$`` are the special characters), so both spellings
    of the URL are the same here. Idempotent.
    """
    if not _NOT_PLAIN_OR_ESCAPE(text) and not _CHANGED_ESCAPE.search(text):
        return text  # escapes as Scrapy sends them (UTF-8, upper-case hex): nothing changes
    text = normalise(text)
    if "%" in text:  # one memchr; most paths have no escape at all
        text = text.replace("%2A", "*").replace("%24", "$")
    return text


def _literal(text: str) -> str:
    """A piece of a normalised pattern between its special characters, in path form."""
    if "%" in text:
        text = text.replace("%2A", "*").replace("%24", "$")
    return text


#: (weight, allow, rule, anchored, segments after the prefix or None if literal)
_Entry = tuple[int, bool, Rule, bool, "tuple[str, ...] | None"]


def _split(body: str) -> tuple[str, tuple[str, ...] | None]:
    """A pattern without its anchor -> literal prefix, and the pieces after each ``*``."""
    prefix, star, rest = body.partition("*")
    if not star:
        return _literal(prefix), None
    return _literal(prefix), tuple(map(_literal, rest.split("*")))


def _entries(rule: Rule, pattern: str) -> Iterable[tuple[str, _Entry | Rule]]:
    """(prefix, entry) pairs of a rule and its normalised pattern (which starts
    with '/' or '*'); the entry of a plain literal rule is the rule itself."""
    anchored = pattern[-1] == "$"
    body = pattern[:-1] if anchored else pattern
    prefix, segments = _split(body)
    weight = len(pattern)
    if segments is None and not anchored and len(prefix) == weight:
        yield prefix, rule  # weight is its length, no entry needed
    else:
        yield prefix, (weight, rule.allow, rule, anchored, segments)
    # Google: "Allow: /d/index.html" also allows "/d/" itself.
    slash = body.rfind("/")
    if rule.allow and body.startswith("/index.htm", slash):
        directory = body[: slash + 1]
        # The directory keeps its wildcards: "/a*/index.html" allows "/ab/".
        d_prefix, d_segments = _split(directory)
        yield d_prefix, (len(directory) + 1, True, rule, True, d_segments)


def _plain(prefix: str, rule: Rule) -> _Entry:
    """The entry of a plain rule, where a prefix holds more than that rule."""
    return (len(prefix), rule.allow, rule, False, None)


def _rank(entry: _Entry) -> tuple[int, bool]:
    return entry[0], entry[1]


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


#: (length, bound) pairs shared by every rule set: the same small pairs come up
#: in most files, and a shared tuple costs a rule set 8 bytes instead of 64.
_PAIRS: dict[tuple[int, int], tuple[int, int]] = {}
_MAX_PAIRS = 50_000


def _share(pair: tuple[int, int]) -> tuple[int, int]:
    """Keep a new pair for other rule sets, while the table has room."""
    if len(_PAIRS) < _MAX_PAIRS and pair[1] < 1024:
        _PAIRS[pair] = pair
    return pair


#: characters of a path that choose its plan (see :class:`RuleSet`)
HEAD = 4
#: up to this many distinct prefix lengths, a rule set has one plan for every path
SMALL_PLAN = 3
#: the plans by head of every small rule set: none
_NO_HEADS: dict[str, tuple[tuple[int, int], ...]] = {}


#: heads and plans shared by every rule set (``/wp-`` and its plan come up in many files)
_SHARED: dict[Any, Any] = {}
_MAX_SHARED = 50_000


def _shared(value: Any) -> Any:
    """The copy of ``value`` other rule sets hold, else ``value`` (kept while there is room)."""
    found = _SHARED.get(value)
    if found is None:
        found = value
        if len(_SHARED) < _MAX_SHARED:
            _SHARED[value] = value
    return found


def _plan(weights: dict[str, int]) -> tuple[tuple[int, int], ...]:
    """Prefix lengths, longest first, each with the heaviest rule a prefix of that
    length or shorter can hold (to stop early)."""
    heaviest: dict[int, int] = {}
    for prefix, weight in weights.items():
        length = len(prefix)
        if heaviest.get(length, -1) < weight:
            heaviest[length] = weight
    plan: list[tuple[int, int]] = []
    running = 0
    shared = _PAIRS.get
    for length in sorted(heaviest):
        weight = heaviest[length]
        if weight > running:
            running = weight
        pair = (length, running)
        plan.append(shared(pair) or _share(pair))
    plan.reverse()
    return tuple(plan)


class RuleSet:
    """The merged rules of the groups that apply to one product token.

    The index maps a literal prefix to the one plain rule with that pattern
    (the usual case: no tuple, no copy of the pattern) or to the sorted
    entries of the rules that start with it. :mod:`scrapy_rep.robotstxt.reference`
    is its specification.
    """

    __slots__ = ("_index", "_plans", "_short", "_size")

    def __init__(self, rules: Iterable[Rule]) -> None:
        # prefix -> the plain rule that decides for it, or a list of entries
        index: dict[str, Any] = {}
        size = 0
        for rule in rules:
            pattern = normalise(rule.pattern)
            if not pattern or pattern[0] not in "/*":
                continue  # matches nothing: empty, or no leading '/' (see parser)
            size += 1
            items: Iterable[tuple[str, _Entry | Rule]]
            if (
                "*" not in pattern
                and pattern[-1] != "$"
                and "%" not in pattern
                and not (rule.allow and "/index.htm" in pattern)
            ):
                # The usual rule: a plain prefix, usually new.
                if pattern not in index:
                    index[pattern] = rule
                    continue
                items = ((pattern, rule),)
            else:
                items = _entries(rule, pattern)
            for prefix, item in items:
                found = index.get(prefix)
                if found is None:
                    index[prefix] = item if item.__class__ is Rule else [item]
                elif found.__class__ is Rule:
                    if item.__class__ is not Rule:
                        index[prefix] = [_plain(prefix, found), item]
                    elif item.allow and not found.allow:
                        # Plain rules of one pattern weigh the same: the
                        # first allow (else the first rule) decides.
                        index[prefix] = item
                elif item.__class__ is Rule:
                    found.append(_plain(prefix, item))
                else:
                    found.append(item)
        weights: dict[str, int] = {}  # prefix -> the heaviest entry it holds
        for prefix, kept in index.items():
            if kept.__class__ is Rule:
                weights[prefix] = len(prefix)
            else:
                kept.sort(key=_rank, reverse=True)
                index[prefix] = tuple(kept)
                weights[prefix] = kept[0][0]
        # One plan per head (the first HEAD characters of the prefixes at least that
        # long), with the shorter prefixes that head starts with; the short ones alone
        # for any other head. A path probes only the lengths its head can match.
        # A few lengths in all: one plan, no heads (a dict would cost more than it saves).
        plans: dict[str, tuple[tuple[int, int], ...]] = _NO_HEADS
        short = weights
        if len({len(p) for p in weights}) > SMALL_PLAN:
            short = {p: w for p, w in weights.items() if len(p) < HEAD}
            by_head: dict[str, dict[str, int]] = {}
            for prefix, weight in weights.items():
                if len(prefix) >= HEAD:
                    by_head.setdefault(prefix[:HEAD], {})[prefix] = weight
            plans = {}
            for head, own in by_head.items():
                own.update((p, w) for p, w in short.items() if head.startswith(p))
                plans[_shared(head)] = _shared(_plan(own))
        self._index: dict[str, tuple[_Entry, ...] | Rule] = index
        self._plans = plans
        self._short = _plan(short)
        self._size = size

    def __len__(self) -> int:
        return self._size

    def match(self, path: str) -> Rule | None:
        """The deciding rule for a path in :func:`normalise_path` form, or None."""
        index = self._index
        size = len(path)
        best: Rule | None = None
        best_weight, best_allow = -1, False
        for length, bound in self._plans.get(path[:HEAD], self._short):
            if length > size:
                continue
            if best_weight > bound or (best_weight == bound and best_allow):
                break
            entries = index.get(path[:length])
            if entries is None:
                continue
            if entries.__class__ is Rule:  # a plain rule: weight = length
                allow = entries.allow
                if length > best_weight or (length == best_weight and allow and not best_allow):
                    best, best_weight, best_allow = entries, length, allow
                continue
            for weight, allow, rule, anchored, segments in entries:  # type: ignore[union-attr]
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

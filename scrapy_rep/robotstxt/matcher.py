"""Longest-match rule sets, compiled once per product token (RFC 9309 §2.2.2-3).

Theory of operation: every pattern is cut at its first ``*``; the literal
part before it (the *key*) is kept once, in a sorted tuple. The keys that are
prefixes of a path are found longest first by bisection (see :class:`RuleSet`),
stopping as soon as no shorter key can hold a heavier rule. The rest of a
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
from array import array
from bisect import bisect_right
from collections.abc import Iterable

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


#: a key with no plain rule of its own (only wildcard, anchored or index.html entries)
_NO_RULE = 0xFFFFFFFF


def _is_plain(pattern: str) -> bool:
    """Is a normalised pattern a literal prefix whose weight is its length?"""
    return (
        "*" not in pattern and pattern[-1] != "$" and "%2A" not in pattern and "%24" not in pattern
    )


def _prefix(pattern: str) -> str:
    """The literal part of a normalised pattern before its first ``*``, in path form."""
    body = pattern[:-1] if pattern[-1] == "$" else pattern
    return _literal(body.partition("*")[0])


def _directory(pattern: str) -> str | None:
    """Google: "Allow: /d/index.html" also allows "/d/" itself; the pattern that does.

    The directory keeps its wildcards: "/a*/index.html" allows "/ab/".
    """
    body = pattern[:-1] if pattern[-1] == "$" else pattern
    slash = body.rfind("/")
    return body[: slash + 1] + "$" if body.startswith("/index.htm", slash) else None


def _rest_matches(path: str, position: int, pattern: str) -> bool:
    """Does ``path[position:]`` match what follows the pattern's literal prefix?"""
    anchored = pattern[-1] == "$"
    body = pattern[:-1] if anchored else pattern
    star = body.find("*")
    if star < 0:
        return not anchored or len(path) == position
    # The last segment is the cheapest test to fail on: no split for most patterns.
    last = body[body.rfind("*") + 1 :]
    if "%" in last:
        last = _literal(last)
    if anchored:
        if not path.endswith(last):
            return False
    elif last and path.find(last, position) < 0:
        return False
    segments = body[star + 1 :].split("*")
    if "%" in body:
        segments = [_literal(segment) for segment in segments]
    return _glob(path, position, segments, anchored)


def _glob(path: str, position: int, segments: list[str], anchored: bool) -> bool:
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


def _below(
    keys: list[str], plain: dict[str, int], entries: dict[str, list[tuple[int, bool, int]]]
) -> array[int]:
    """Per sorted key: (1 + the heaviest rule of the keys that are proper prefixes of
    it, 0 if none) << 1, | 1 if entries start with the key itself.

    When a key is a prefix of a path, the shorter keys that are too are prefixes of
    that key: what they can weigh says whether the search may stop there.
    """
    below = array("I")
    chain: list[tuple[str, int]] = []  # the keys that are prefixes of this one, heaviest so far
    for key in keys:
        while chain and not key.startswith(chain[-1][0]):
            chain.pop()
        heaviest = chain[-1][1] if chain else -1
        found = entries.get(key)
        below.append((heaviest + 1) << 1 | (found is not None))
        own = len(key) if key in plain else -1
        for weight, _, _ in found or ():
            own = max(own, weight)
        chain.append((key, max(own, heaviest)))
    return below


class RuleSet:
    """The merged rules of the groups that apply to one product token, packed.

    Every rule is cut at its first ``*``; the literal part (its *key*) is kept
    once, in one sorted tuple of strings. The keys that are prefixes of a
    path are found longest first by bisecting that tuple (in C): the key just
    before the path in sorted order is the longest prefix of it, if any key
    is; if it is not a prefix, the answer is a prefix of what the two have in
    common, and the search goes on with that. A key stands for its plain
    rule (a literal pattern, whose weight is its length: the usual rule) and
    for the few wildcard, anchored or index.html patterns that start with it
    (*entries*, heaviest first); the rest of such a pattern is matched segment
    by segment with ``str.find``, leftmost first, which is exact for
    ``*``-only globs and linear in the path, so a hostile pattern of many
    ``*`` cannot backtrack.

    No :class:`Rule` object is kept: a rule is its number, with its line and
    kind in one array (``line << 1 | allow``), the normalised pattern of an
    entry, and the pattern as written only where it differs. :meth:`match`
    makes the deciding rule when asked (once per rule), unless ``keep`` is
    true, in which case the given rules themselves are returned (for callers
    that key on their identity). The state is tuples, strings, ints and
    arrays: nothing the garbage collector walks per rule.
    :mod:`scrapy_rep.robotstxt.reference` is the specification.
    """

    __slots__ = (
        "_below",
        "_codes",
        "_entries",
        "_kept",
        "_keys",
        "_lines",
        "_made",
        "_patterns",
        "_written",
    )

    def __init__(self, rules: Iterable[Rule], keep: bool = True) -> None:
        plain: dict[str, int] = {}  # key -> number of the plain rule that decides it
        # key -> (weight, allow, code): code n is rule n's pattern, -n-1 its directory
        entries: dict[str, list[tuple[int, bool, int]]] = {}
        patterns: dict[int, str] = {}
        lines: list[int] = []
        written: dict[int, str] = {}
        kept: list[Rule] = []
        for rule in rules:
            pattern = normalise(rule.pattern)
            if not pattern or pattern[0] not in "/*":
                continue  # matches nothing: empty, or no leading '/' (see parser)
            number = len(lines)
            allow = rule.allow
            lines.append(rule.line << 1 | allow)
            if keep:
                kept.append(rule)
            if pattern != rule.pattern:
                written[number] = rule.pattern
            if _is_plain(pattern):
                # The usual rule: a plain prefix. Plain rules of one pattern weigh
                # the same: the first allow (else the first rule) decides.
                found = plain.get(pattern)
                if found is None or (allow and not lines[found] & 1):
                    plain[pattern] = number
            else:
                patterns[number] = pattern
                entries.setdefault(_prefix(pattern), []).append((len(pattern), allow, number))
            directory = _directory(pattern) if allow and "/index.htm" in pattern else None
            if directory is not None:
                patterns[number] = pattern
                dir_key = _prefix(directory)
                entries.setdefault(dir_key, []).append((len(directory), True, -1 - number))
        keys = sorted(plain.keys() | entries.keys())
        self._keys: tuple[str, ...] = tuple(keys)
        get = plain.get
        # per key: its plain rule as number << 1 | allow, or _NO_RULE
        self._codes = array(
            "I", [_NO_RULE if (n := get(key)) is None else n << 1 | lines[n] & 1 for key in keys]
        )
        self._lines = array("I", lines)
        self._below = _below(keys, plain, entries)
        self._entries: dict[str, int | tuple[int, ...]] | None = None
        if entries:
            self._entries = {}
            for prefix, found_entries in entries.items():
                found_entries.sort(reverse=True)
                codes = tuple(code for _, _, code in found_entries)
                self._entries[prefix] = codes[0] if len(codes) == 1 else codes
        self._patterns = patterns or None
        self._written = written or None
        self._kept: tuple[Rule, ...] | None = tuple(kept) if keep else None
        self._made: dict[int, Rule] | None = None

    def __len__(self) -> int:
        return len(self._lines)

    def best(self, path: str) -> int:
        """The deciding rule for ``path`` as ``number << 1 | allow``, or -1 if none."""
        keys = self._keys
        at = bisect_right(keys, path)
        if at:
            key = keys[at - 1]
            if path.startswith(key):
                code = self._codes[at - 1]
                below = self._below[at - 1]
                if code != _NO_RULE and not below & 1:
                    # The usual case: the longest key that is a prefix of the path has a
                    # plain rule, no entry, and outweighs every shorter key's rules.
                    length, heaviest = len(key), (below >> 1) - 1
                    if length > heaviest or (length == heaviest and code & 1):
                        return code
        return self._search(path, at)

    def _search(self, path: str, at: int) -> int:
        """:meth:`best` the whole way, from the first bisection (``at``)."""
        keys = self._keys
        best, best_weight, best_allow = -1, -1, False
        probe = path
        while at:
            key = keys[at - 1]
            if not path.startswith(key):
                # Every key that is a prefix of the path is a prefix of the
                # part this key and the probe have in common (often short).
                common, most = 0, min(len(key), len(probe))
                while common < most and key[common] == probe[common]:
                    common += 1
                probe = probe[:common]
                at = bisect_right(keys, probe, 0, at - 1)
                continue
            length = len(key)
            below = self._below[at - 1]
            if below & 1:  # entries start with this key
                codes = self._entries[key]  # type: ignore[index]
                for code in codes if isinstance(codes, tuple) else (codes,):
                    if code >= 0:
                        pattern = self._patterns[code]  # type: ignore[index]
                        allow = self._lines[code] & 1 == 1
                    else:
                        code = -1 - code
                        pattern = _directory(self._patterns[code]) or ""  # type: ignore[index]
                        allow = True
                    weight = len(pattern)
                    if weight < best_weight or (
                        weight == best_weight and (best_allow or not allow)
                    ):
                        break
                    if _rest_matches(path, length, pattern):
                        best, best_weight, best_allow = code << 1 | allow, weight, allow
                        break
            code = self._codes[at - 1]
            if code != _NO_RULE:
                allow = code & 1 == 1
                if length > best_weight or (length == best_weight and allow and not best_allow):
                    best, best_weight, best_allow = code, length, allow
            # What the shorter keys that are prefixes of this one can still weigh.
            heaviest = (below >> 1) - 1
            if best_weight > heaviest or (best_weight == heaviest and best_allow) or heaviest < 0:
                break
            probe = key[:-1]
            at = bisect_right(keys, probe, 0, at - 1)
        return best

    def allows(self, path: str) -> bool:
        """Is a path in :func:`normalise_path` form allowed (no rule, or an allow rule)?"""
        code = self.best(path)
        return code < 0 or code & 1 == 1

    def match(self, path: str) -> Rule | None:
        """The deciding rule for a path in :func:`normalise_path` form, or None."""
        code = self.best(path)
        if code < 0:
            return None
        number = code >> 1
        if self._kept is not None:
            return self._kept[number]
        made = self._made
        if made is None:
            made = self._made = {}
        rule = made.get(number)
        if rule is None:
            rule = made[number] = self._rule(number, path)
        return rule

    def _rule(self, number: int, path: str) -> Rule:
        """The rule with this number: its pattern as written, its line and kind."""
        code = self._lines[number]
        pattern = self._written.get(number) if self._written is not None else None
        if pattern is None and self._patterns is not None:
            pattern = self._patterns.get(number)
        if pattern is None:  # a plain rule written as its key, a prefix of the path
            pattern = self._key_of(number, path)
        return Rule(code & 1 == 1, pattern, code >> 1)

    def _key_of(self, number: int, path: str) -> str:
        """The key of the plain rule ``number``, a prefix of ``path``."""
        keys = self._keys
        for length in range(len(path), -1, -1):
            at = bisect_right(keys, path[:length]) - 1
            if at >= 0 and keys[at] == path[:length] and self._codes[at] >> 1 == number:
                return keys[at]
        raise LookupError(number)  # pragma: no cover - the rule decided the path


def is_robots_txt(path: str) -> bool:
    """RFC 9309 §2.2.2: ``/robots.txt`` is implicitly allowed."""
    return path == ROBOTS_TXT

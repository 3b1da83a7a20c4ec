"""Longest-match rule sets, compiled once per product token (RFC 9309 §2.2.2-3).

Theory of operation: every pattern is cut at its first ``*``; the literal
part before it (the *key*) is kept once, in a sorted tuple with, for each
key, the first string past every path that starts with it. Those bounds cut
the paths into intervals in which the same keys are prefixes, so what each
interval's rules answer is worked out once, at compile time, and a path
takes one bisection (see :class:`RuleSet`). The rest of a wildcard pattern
is matched segment by segment with ``str.find``, leftmost first, which is
exact for ``*``-only globs and linear in the path: a hostile pattern of many
``*`` cannot backtrack.

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
from typing import TypeAlias

from scrapy_rep.robotstxt.parser import Rule

_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
#: What RFC 3986 allows unencoded in a path or query: unreserved, sub-delims,
#: ':', '@', '/' and '?' (§3.3, §3.4). Everything else -- controls, space,
#: ``" < > [ \\ ] ^ ` { | }``, '#' and non-ASCII -- is compared as its %XX
#: escape, the form Scrapy (w3lib's safe_url_string) sends.
_ALLOWED = bytes(_UNRESERVED) + b"!$&'()*+,;=:@/?"
#: the same, for ``bytes.translate(None, PLAIN_OCTETS)``: what is left of an ASCII path
#: is what normalising would change or escape
PLAIN_OCTETS = _ALLOWED
#: the same, and the newline that joins patterns for one pass over them all
_ALLOWED_LINES = _ALLOWED + b"\n"
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
#: a character outside _ALLOWED but for "%" ("#", space, non-ASCII, ...)
_NOT_PLAIN_OR_ESCAPE = re.compile(r"[^A-Za-z0-9\-._~!$&'()*+,;=:@/?%]").search
#: an escape :func:`normalise_path` changes: not two upper-case hex digits, one of an
#: unreserved octet (A-Z a-z 0-9 - . _ ~), or %2A / %24 (read as '*' and '$')
_CHANGED_ESCAPE = re.compile(r"%(?![0-9A-F]{2})|%(?:[46][1-9A-F]|[57][0-9A]|3[0-9]|2[ADE4]|5F|7E)")
#: a character an escape is written with (normalised: upper-case hex)
_HEX = re.compile(r"[%0-9A-F]")
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


#: one wildcard, anchored or index.html rule: (weight, allow, minus its rule number, where its
#: key ends in the path, anchored, what follows the key: None if nothing (a literal
#: pattern), the piece after the one ``*`` (the usual wildcard), else all the pieces)
_Entry = tuple[int, bool, int, int, bool, "str | tuple[str, ...] | None"]
#: an interval's answer: allowed or not, or (the plain rule's answer, entries to try)
_Answer: TypeAlias = "bool | tuple[bool, tuple[_Entry, ...]]"
#: an interval's answer not worked out yet (:meth:`RuleSet.settle`)
PENDING: _Answer = (False, ())
#: a key open over an interval: (key, the heaviest plain rule as ``number << 1 | allow``
#: or -1, its weight or -1, the entries of the key and those above it, heaviest first)
_Frame = tuple[str, int, int, tuple[_Entry, ...]]


def _open(frame: _Frame) -> bool:
    """Can an entry outweigh the frame's plain rule (then the first, the heaviest, can)?"""
    _, code, weight, found = frame
    if not found:
        return False
    first = found[0]
    return first[0] > weight or (first[0] == weight and first[1] and not code & 1)


#: greater than every ASCII character (a normalised path is printable ASCII; a raw
#: path is matched as it is only when ASCII): ``key + END`` is past every such path
#: that starts with ``key``
END = "\x80"
#: the first and the last bound of a rule set, around every path (they all start
#: with '/', and "0" follows "/"): before the first or past the last is another
#: origin's URL (see :meth:`RuleSet.rebase`)
FIRST, LAST = "/", "0"
#: just past ``/robots.txt`` and nothing else: the bound that ends its own interval
#: (always allowed, RFC 9309 §2.2.2) in a rule set whose rules cover it
ROBOTS_TXT_END = ROBOTS_TXT + "\x00"


def _directory(pattern: str) -> str | None:
    """Google: "Allow: /d/index.html" also allows "/d/" itself; the pattern that does.

    The directory keeps its wildcards: "/a*/index.html" allows "/ab/".
    """
    body = pattern[:-1] if pattern[-1] == "$" else pattern
    slash = body.rfind("/")
    return body[: slash + 1] + "$" if body.startswith("/index.htm", slash) else None


def _entry(pattern: str, allow: bool, number: int) -> tuple[str, _Entry]:
    """A wildcard, anchored or %2A/%24 pattern: its key, and the entry to match the rest."""
    anchored = pattern[-1] == "$"
    body = pattern[:-1] if anchored else pattern
    head, star, rest = body.partition("*")
    escaped = "%" in body
    key = _literal(head) if escaped else head
    after: str | tuple[str, ...] | None = None
    if star:
        segments = tuple(map(_literal, rest.split("*")) if escaped else rest.split("*"))
        after = segments[0] if len(segments) == 1 else segments
    return key, (len(pattern), allow, -number, len(key), anchored, after)


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
        return len(path) - len(last) >= position
    return not last or path.find(last, position) >= 0


def first_entry(path: str, entries: tuple[_Entry, ...]) -> _Entry | None:
    """The first of the entries (whose keys are prefixes of ``path``) that matches it."""
    for entry in entries:
        _, _, _, start, anchored, after = entry
        if after is None:  # a literal pattern: the key is a prefix of the path
            if anchored and len(path) != start:
                continue
        elif after.__class__ is str:  # one '*': one C scan
            if anchored:
                if not path.endswith(after) or len(path) - len(after) < start:
                    continue
            elif path.find(after, start) < 0:
                continue
        elif not _glob(path, start, after, anchored):  # type: ignore[arg-type]
            continue
        return entry
    return None


def _heaviest_first(entries: Iterable[_Entry]) -> tuple[_Entry, ...]:
    """Heavier first, allow first among equals, then file order: the entries sorted as
    they are, in reverse (a rule's number is kept negated for this; no two entries
    have the same weight, kind and rule)."""
    return tuple(sorted(entries, reverse=True))


class RuleSet:
    """The merged rules of the groups that apply to one product token, packed.

    Every rule is cut at its first ``*``; the literal part is its *key*.
    The keys and, for each key, ``key + END`` (the first string past every
    path that starts with it) cut the sorted space of paths into intervals
    (``bounds``): the keys that are prefixes of a path are the same for
    every path of an interval. So one bisection (in C) finds a path's
    interval, and what the interval's keys say is worked out when the set
    is compiled: the heaviest plain rule among them (a literal pattern,
    whose weight is its length: the usual rule) and, where a wildcard,
    anchored or index.html pattern (an *entry*) under one of them could
    outweigh it, those entries, heaviest first. ``answers`` has one item
    per interval: True / False when every path in it gets that answer (the
    entries that may outweigh the plain rule, if any, say the same), else
    the plain answer and the entries to try first; an entry's rest is
    matched segment by segment with ``str.find``, leftmost first, which is
    exact for ``*``-only globs and linear in the path, so a hostile pattern
    of many ``*`` cannot backtrack.

    The bounds lie between :data:`FIRST` and :data:`LAST` (every path starts
    with '/'), ``/robots.txt`` alone in an interval when rules cover it, and
    each starts with ``prefix``: none at first, then (:meth:`rebase`) the
    ``scheme://authority`` of the origin whose URLs the set judges, so that
    :meth:`RobotsTxt.allowed <scrapy_rep.robotstxt.RobotsTxt.allowed>` bisects
    a URL as it comes, without cutting its path out.

    No :class:`Rule` object is kept: a rule is its number, with its line and
    kind in one array (``line << 1 | allow``), the normalised pattern of an
    entry, and the pattern as written only where it differs. :meth:`match`
    makes the deciding rule when asked (once per rule), unless ``keep`` is
    true, in which case the given rules themselves are returned (for callers
    that key on their identity). :mod:`scrapy_rep.robotstxt.reference` is
    the specification.
    """

    __slots__ = (
        "_kept",
        "_lines",
        "_made",
        "_missed",
        "_misses",
        "_patterns",
        "_pending",
        "_plain",
        "_settled",
        "_undecided",
        "_written",
        "answers",
        "bounds",
        "cut",
        "escaped",
        "hexes",
        "prefix",
    )

    def __init__(self, rules: Iterable[Rule], keep: bool = True) -> None:
        given = list(rules)
        written_all = [rule.pattern for rule in given]
        if "" in written_all:  # an empty pattern matches nothing (see parser)
            given = [rule for rule in given if rule.pattern]
            written_all = [rule.pattern for rule in given]
        text = "\n".join(written_all)
        # Nothing to normalise in any pattern (one C pass over them all): no '%' either.
        clean = text.isascii() and not text.encode().translate(None, _ALLOWED_LINES)
        self._made: dict[int, Rule] | None = None
        #: what every bound starts with before its path: "" or a URL's scheme://authority
        #: (:meth:`rebase`), and its length
        self.prefix = ""
        self.cut = 0
        #: the prefix of the URLs judged last outside the bounds, and how many in a row
        #: (see :meth:`adopt`)
        self._missed: str | None = None
        self._misses = 0
        self._written: dict[int, str] | None = None
        self._patterns: dict[int, str] | None = None
        self._kept: tuple[Rule, ...] | None = tuple(given) if keep else None
        if (
            clean
            and "*" not in text
            and "$" not in text
            and "/index.htm" not in text
            and text[:1] == "/"
            and text.count("\n/") == len(given) - 1
        ):
            # The usual file: every rule a plain prefix of paths, as written, numbered in
            # file order; unless a pattern comes twice (then the loop below decides).
            lines = [rule.line << 1 | rule.allow for rule in given]
            numbers = [n << 1 | (code & 1) for n, code in enumerate(lines)]
            plain = dict(zip(written_all, numbers, strict=True))
            if len(plain) == len(lines):
                self._lines = array("I", lines)
                self.escaped = self.hexes = False
                keys = sorted(plain)
                if keys[0] != "/" and not any(map(str.startswith, keys[1:], keys)):
                    # and no key is a prefix of another: FIRST, key, its end, key...,
                    # LAST, every interval but the keys' without a rule (_intervals'
                    # first case, without its root)
                    count = len(keys)
                    bounds = [FIRST] * (2 * count + 2)
                    bounds[1:-1:2] = keys
                    bounds[2:-1:2] = [key + END for key in keys]
                    bounds[-1] = LAST
                    own_codes = [plain[key] for key in keys]
                    codes = [-1] * (2 * count + 3)
                    codes[2:-1:2] = own_codes
                    answers: list[_Answer | None] = [True] * (2 * count + 3)
                    answers[0] = answers[-1] = None
                    answers[2:-1:2] = [code & 1 == 1 for code in own_codes]
                    self._frame(bounds, codes, answers, {})
                else:
                    self._intervals(plain, {})
                return
        plain = {}  # key -> its plain rule as number << 1 | allow
        entries: dict[str, list[_Entry]] = {}
        patterns: dict[int, str] = {}
        lines = []
        written: dict[int, str] = {}
        kept: list[Rule] = []
        # else no rule is an index.html one (normalising may decode one: "/%69ndex.htm")
        index_html = not clean or "/index.htm" in text
        number = -1
        for rule in given:
            pattern = rule.pattern
            if not clean:
                # normalise, its common case inlined: a pattern with nothing to change
                if not pattern.isascii() or pattern.encode().translate(None, _ALLOWED):
                    pattern = normalise(pattern)
                if pattern[0] not in "/*":
                    continue  # matches nothing: no leading '/' (see parser)
                if pattern != rule.pattern:
                    written[number + 1] = rule.pattern
            elif pattern[0] not in "/*":
                continue
            number += 1
            allow = rule.allow
            lines.append(rule.line << 1 | allow)
            if keep:
                kept.append(rule)
            if (
                "*" not in pattern
                and pattern[-1] != "$"
                and (clean or "%" not in pattern or ("%2A" not in pattern and "%24" not in pattern))
            ):
                # The usual rule: a plain prefix, whose weight is its length. Plain
                # rules of one pattern weigh the same: the first allow (else the
                # first rule) decides.
                found = plain.get(pattern)
                if found is None or (allow and not found & 1):
                    plain[pattern] = number << 1 | allow
            else:
                patterns[number] = pattern
                key, entry = _entry(pattern, allow, number)
                entries.setdefault(key, []).append(entry)
            if index_html and allow and "/index.htm" in pattern:
                directory = _directory(pattern)
                if directory is not None:
                    patterns[number] = pattern
                    key, entry = _entry(directory, True, number)
                    entries.setdefault(key, []).append(entry)
        self._lines = array("I", lines)
        self._patterns = patterns or None
        self._written = written or None
        if keep:
            self._kept = tuple(kept)
        #: whether a key or an entry's piece has a %XX escape. If none has, a path's
        #: raw ' ', '|', ... (ASCII octets that normalise escapes) cannot change which
        #: keys are its prefixes: a key has no such octet, and the escaped path has
        #: '%' there. So its interval, and the answer of a decided one, is that of
        #: its normalised form, and only the entries need the normalised path.
        pieces = "\n".join(
            after if isinstance(after, str) else "".join(after)
            for found in entries.values()
            for *_, after in found
            if after is not None
        )
        self.escaped = not clean and (
            any("%" in key for key in plain) or any("%" in key for key in entries) or "%" in pieces
        )
        #: whether an entry's piece has a character an escape is written with ('%', a
        #: digit, 'A'-'F'). If none has, a path's raw ' ', '|', ... cannot change what
        #: the entries match either: no piece has it or any character its escape
        #: puts in its place, and the other characters keep their order.
        self.hexes = bool(_HEX.search(pieces))
        self._intervals(plain, entries)

    def _intervals(self, plain: dict[str, int], entries: dict[str, list[_Entry]]) -> None:
        """Cut the paths into intervals at every key and ``key + END``; say what each
        interval's keys decide.

        The keys "" and "/" are prefixes of every path: their rules are the root's,
        which every interval inherits. Bounds run from :data:`FIRST`: interval 0,
        before it, and the last, past :data:`LAST`, hold no path (their answer is
        None). Where entries may outweigh the plain rule, the interval's answer is
        :data:`PENDING` until first asked (:meth:`settle`): most intervals never are.
        """
        everywhere = [*entries.pop("", ()), *entries.pop("/", ())]
        root_code = plain.pop("/", -1)  # -1 & 1 is 1: no rule allows
        root: _Frame = (
            "/",
            root_code,
            1 if root_code >= 0 else -1,
            _heaviest_first(everywhere) if everywhere else (),
        )
        root_answer: _Answer = PENDING if _open(root) else root_code & 1 == 1
        #: per pending interval: its frame (key, plain rule, weight, entries)
        pending: dict[int, _Frame] = {}
        keys = sorted(plain.keys() | entries.keys()) if entries else sorted(plain)
        if not any(map(str.startswith, keys[1:], keys)):
            # No key is a prefix of another (then none is a prefix of the key after it):
            # root, key, its end, root, key, its end... made by slices, in C (most files).
            count = len(keys)
            bounds = [FIRST] * (2 * count + 2)
            bounds[1:-1:2] = keys
            bounds[2:-1:2] = [key + END for key in keys]
            bounds[-1] = LAST
            codes = [root_code] * (2 * count + 3)
            answers: list[_Answer | None] = [root_answer] * (2 * count + 3)
            codes[0] = codes[-1] = -1
            answers[0] = answers[-1] = None
            if not entries and root_answer is not PENDING:
                own_codes = [plain[key] for key in keys]
                codes[2:-1:2] = own_codes
                answers[2:-1:2] = [code & 1 == 1 for code in own_codes]
            else:
                if root_answer is PENDING:
                    pending = dict.fromkeys(range(1, 2 * count + 2, 2), root)
                # each key's frame (_open_key and _open, inlined: a call a key costs)
                _, _, root_weight, root_found = root
                at = 2
                for key in keys:
                    code = plain.get(key)
                    if code is None:
                        code, weight = root_code, root_weight
                    else:
                        weight = len(key)
                    own = entries.get(key)
                    found = root_found if own is None else _heaviest_first((*root_found, *own))
                    codes[at] = code
                    if found and (
                        found[0][0] > weight
                        or (found[0][0] == weight and found[0][1] and not code & 1)
                    ):
                        pending[at] = (key, code, weight, found)
                        answers[at] = PENDING
                    else:
                        answers[at] = code & 1 == 1
                    at += 2
        else:
            # A sweep over the sorted keys with a stack of the keys open (those that
            # are prefixes of the current one): a key opens its interval, its end
            # closes it and goes back to the interval of the key open under it.
            bounds = [FIRST]
            codes = [-1, root_code]
            answers = [None, root_answer]
            if root_answer is PENDING:
                pending[1] = root
            stack: list[_Frame] = []
            at = 0
            while at < len(keys) or stack:
                if at < len(keys) and (not stack or keys[at].startswith(stack[-1][0])):
                    key = keys[at]
                    at += 1
                    frame = self._open_key(key, stack[-1] if stack else root, plain, entries)
                    stack.append(frame)
                    bounds.append(key)
                else:  # the keys under the open one are done: close it
                    bounds.append(stack.pop()[0] + END)
                    frame = stack[-1] if stack else root
                codes.append(frame[1])
                if _open(frame):
                    pending[len(answers)] = frame
                    answers.append(PENDING)
                else:
                    answers.append(frame[1] & 1 == 1)
            bounds.append(LAST)
            codes.append(-1)
            answers.append(None)
        self._frame(bounds, codes, answers, pending)

    @staticmethod
    def _open_key(
        key: str, under: _Frame, plain: dict[str, int], entries: dict[str, list[_Entry]]
    ) -> _Frame:
        """The frame of ``key``, a prefix of paths inside the key ``under`` is for: its
        plain rule (else the one above it) and weight, and the entries of both."""
        _, code, weight, found = under
        own_code = plain.get(key)
        if own_code is not None:
            code, weight = own_code, len(key)
        own = entries.get(key)
        if own is not None:
            found = _heaviest_first((*found, *own))
        return (key, code, weight, found)

    def _frame(
        self,
        bounds: list[str],
        codes: list[int],
        answers: list[_Answer | None],
        pending: dict[int, _Frame],
    ) -> None:
        """Keep the intervals, with ``/robots.txt`` in one of its own whose answer is
        True (when a rule covers it).

        So a URL is bisected as it is (once the rule set is rebased on its origin)
        and its interval says all: another origin's URL falls outside, and
        ``/robots.txt`` needs no test of its own.
        """
        if self._lines:
            at = bisect_right(bounds, ROBOTS_TXT)
            if answers[at] is not True:
                # cut its interval at /robots.txt (unless a key is that) and just past it
                cuts = (
                    [ROBOTS_TXT_END]
                    if bounds[at - 1] == ROBOTS_TXT
                    else [ROBOTS_TXT, ROBOTS_TXT_END]
                )
                count = len(cuts)
                bounds[at:at] = cuts
                answers[at:at] = [answers[at]] * count
                answers[at + count - 1] = True
                codes[at:at] = [codes[at]] * count
                split = pending.get(at)
                if pending:
                    pending = {n + count if n > at else n: frame for n, frame in pending.items()}
                if split is not None:  # the pieces try what the interval did
                    pending.update(dict.fromkeys(range(at, at + count + 1), split))
        else:  # no rule: every URL allowed, whatever its origin
            bounds, codes, answers = [], [-1], [True]
        #: the sorted interval bounds, each ``prefix`` + a path (but for an empty set:
        #: no bound); a path's interval is ``bisect_right(bounds, prefix + path)``
        self.bounds: tuple[str, ...] = tuple(bounds)
        #: per interval: True / False when every URL in it gets that answer, else
        #: (the plain rule's answer, the entries to try first, heaviest first: the
        #: first that matches decides, see :func:`first_entry`), or PENDING until
        #: :meth:`settle` works that out; None before the first bound and past the
        #: last (another origin's URL)
        self.answers = answers
        #: per interval: the heaviest plain rule as ``number << 1 | allow``, or -1
        self._plain = array("i", codes)
        #: per interval where entries may outweigh the plain rule and that has been
        #: asked: those entries, heaviest first
        self._undecided: dict[int, tuple[_Entry, ...]] = {}
        self._pending = pending or None
        #: per frame settled (by its id; the frame is kept with it): its entries, answer
        self._settled: dict[int, tuple[_Frame, tuple[_Entry, ...], _Answer]] | None = None

    def settle(self, at: int) -> _Answer:
        """Work out what the interval ``at`` answers (its entries), when first asked."""
        pending = self._pending
        assert pending is not None
        frame = pending.pop(at)
        # intervals under the same keys share their frame: worked out once for them all
        settled = self._settled.get(id(frame)) if self._settled is not None else None
        if settled is None:
            _, code, weight, found = frame
            plain_answer = code & 1 == 1
            cut = 0
            for entry in found:
                if entry[0] > weight or (entry[0] == weight and entry[1] and not plain_answer):
                    cut += 1
                else:
                    break
            beats = found if cut == len(found) else found[:cut]
            # For allowed(), the entries up to the last that says otherwise than the
            # plain rule (none: the plain rule's answer stands).
            last = cut
            while last and beats[last - 1][1] is plain_answer:
                last -= 1
            answer: _Answer = plain_answer
            if last:
                answer = (plain_answer, beats if last == cut else beats[:last])
            if self._settled is None:
                self._settled = {}
            self._settled[id(frame)] = settled = (frame, beats, answer)  # the frame kept
        _, beats, answer = settled
        self._undecided[at] = beats
        if self.answers[at] is PENDING:  # (not the interval of /robots.txt alone)
            self.answers[at] = answer
        return self.answers[at]  # type: ignore[return-value]  # settled: not None

    def rebase(self, prefix: str) -> None:
        """Start every bound with ``prefix``, a URL's ``scheme://authority`` (before
        its path's '/'), so that the URLs of that origin are bisected whole.

        Any string between ``prefix + FIRST`` and ``prefix + LAST`` starts with
        ``prefix + "/"``, so its path is what follows ``prefix``; another origin's
        URL falls before the first bound or past the last.
        """
        if self.bounds:
            cut = self.cut
            self.bounds = tuple([prefix + bound[cut:] for bound in self.bounds])
            self.prefix, self.cut, self._missed = prefix, len(prefix), None

    def adopt(self, url: str) -> int:
        """Rebase on ``url``'s origin once its URLs keep coming: 8 in a row judged
        outside the bounds (rebasing costs a string per bound). Origins sharing the
        file in turn, as a broad crawl asks its hosts, are judged by their paths:
        rebasing at every turn would cost more than the paths do.

        Where the URL's path starts, or -1 if it has none (nothing after its
        authority, or a query or fragment right after it).
        """
        end = _AUTHORITY(url).end()  # type: ignore[union-attr]  # always matches
        if url[end : end + 1] != "/":
            return -1
        prefix = url[:end]
        if prefix != self._missed:
            self._missed, self._misses = prefix, 0
        self._misses += 1
        if self._misses >= 8:
            self.rebase(prefix)
        return end

    def __len__(self) -> int:
        return len(self._lines)

    def best(self, path: str, at: int = -1) -> int:
        """The deciding rule for ``path`` as ``number << 1 | allow``, or -1 if none.

        ``at`` is the path's interval, if the caller has bisected already.
        """
        if at < 0:
            at = bisect_right(self.bounds, self.prefix + path)
        undecided = self._undecided.get(at)
        if undecided is None and self._pending is not None and at in self._pending:
            self.settle(at)
            undecided = self._undecided[at]
        if undecided is not None:
            entry = first_entry(path, undecided)
            if entry is not None:
                return -entry[2] << 1 | entry[1]
        return self._plain[at]

    def allows(self, path: str) -> bool:
        """Is a path in :func:`normalise_path` form allowed (no rule, or an allow rule)?"""
        code = self.best(path)
        return code < 0 or code & 1 == 1

    def match(self, path: str, at: int = -1) -> Rule | None:
        """The deciding rule for a path in :func:`normalise_path` form, or None.

        ``at`` is the path's interval, if the caller has bisected already.
        """
        code = self.best(path, at)
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
        """The key of the plain rule ``number``, a prefix of ``path``: the shortest key
        that is a prefix of the path and whose interval that rule decides."""
        bounds = self.bounds
        for length in range(1, len(path) + 1):  # a plain key starts with '/'
            bound = self.prefix + path[:length]
            at = bisect_right(bounds, bound) - 1  # the last of equal bounds (FIRST is one)
            if at >= 0 and bounds[at] == bound and self._plain[at + 1] >> 1 == number:
                return path[:length]
        raise LookupError(number)  # pragma: no cover - the rule decided the path


def is_robots_txt(path: str) -> bool:
    """RFC 9309 §2.2.2: ``/robots.txt`` is implicitly allowed."""
    return path == ROBOTS_TXT

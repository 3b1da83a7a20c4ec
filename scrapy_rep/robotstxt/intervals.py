"""Compiling a token's merged rules into intervals of paths (docs/engine.md), each with
its heaviest plain rule and the wildcard, anchored or index.html entries that could
outweigh it (:data:`UNSETTLED` until first asked, ``RuleSet.settle``)."""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from typing import NamedTuple, Protocol, TypeAlias

from scrapy_rep.robotstxt.paths import PLAIN_OCTETS, ROBOTS_TXT, literal, normalise

#: one wildcard, anchored or index.html rule: (weight, allow, minus its rule number,
#: where its key ends in the path, anchored, what follows the key: None if nothing (a
#: literal pattern), the piece after the one ``*`` (the usual wildcard), else all pieces)
Entry = tuple[int, bool, int, int, bool, "str | tuple[str, ...] | None"]
#: a key open over an interval: (key, the heaviest plain rule as ``number << 1 | allow``
#: or -1, its weight or -1, the key's own entries, heaviest first, the frame above it
#: (None at the root), the heaviest entry of the key and those above it (or None), and
#: how many entries and pieces the key and those above it have).
#:
#: A frame never copies the entries of the frames above it (the root's wildcards would
#: be copied into every key: O(root × keys)); the chain of frames is walked instead
#: (:class:`~scrapy_rep.robotstxt.matcher.Chain`), or merged when it is small
#: (:data:`MERGE_LIMIT`). Compiling stays linear in the rules.
Frame = tuple[str, int, int, tuple[Entry, ...], "Frame | None", "Entry | None", int]


class Walk(Protocol):
    """Entries too many to merge, walked frame by frame for each path
    (:class:`~scrapy_rep.robotstxt.matcher.Chain`)."""

    def first(self, path: str) -> Entry | None:
        """The heaviest entry that matches ``path`` and outweighs the plain rule."""


#: an interval's answer: allowed or not, or (the plain rule's answer, entries to try:
#: a tuple, heaviest first, or a :class:`Walk` of them)
Answer: TypeAlias = "bool | tuple[bool, tuple[Entry, ...] | Walk]"
#: an interval's answer not worked out yet
#: (:meth:`RuleSet.settle <scrapy_rep.robotstxt.matcher.RuleSet.settle>`)
UNSETTLED: Answer = (False, ())

#: the octets of a clean pattern, and the newline that joins patterns for one C pass
_ALLOWED_LINES = PLAIN_OCTETS + b"\n"
#: a character an escape is written with (normalised: upper-case hex)
_HEX = re.compile(r"[%0-9A-F]")

#: a frame's chain is merged into one tuple of entries when it has at most this many
#: entries and pieces (:meth:`RuleSet.settle`); else it is walked, with a budget
MERGE_LIMIT = 64


def _open(frame: Frame) -> bool:
    """Can an entry outweigh the frame's plain rule (then the heaviest can)?"""
    _, code, weight, _, _, first, _ = frame
    if first is None:
        return False
    return first[0] > weight or (first[0] == weight and first[1] and not code & 1)


def _cost(entries: tuple[Entry, ...]) -> int:
    """Entries and the pieces they match, what a chain's size is counted in."""
    return sum(1 if after.__class__ is not tuple else len(after) for *_, after in entries)


def _under(key: str, up: Frame, plain: dict[str, int], entries: dict[str, list[Entry]]) -> Frame:
    """The frame of ``key``, a prefix of paths inside ``up``'s: its plain rule (else
    ``up``'s) and weight, and its own entries (those above are reached through it)."""
    code, weight = up[1], up[2]
    own_code = plain.get(key)
    if own_code is not None:
        code, weight = own_code, len(key)
    link = up if up[3] else up[4]  # the chain skips frames without entries of their own
    top, cost = up[5], up[6]
    own = entries.get(key)
    if own is None:
        return (key, code, weight, (), link, top, cost)
    found = _heaviest_first(own)
    first = found[0]
    top = first if top is None or first > top else top
    return (key, code, weight, found, link, top, cost + _cost(found))


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


def _entry(pattern: str, allow: bool, number: int) -> tuple[str, Entry]:
    """A wildcard, anchored or %2A/%24 pattern: its key, and the entry to match the rest."""
    anchored = pattern[-1] == "$"
    body = pattern[:-1] if anchored else pattern
    head, star, rest = body.partition("*")
    escaped = "%" in body
    key = literal(head) if escaped else head
    after: str | tuple[str, ...] | None = None
    if star:
        pieces = rest.split("*")
        if "" in pieces:  # '**' is one '*'; a last '*' (or '*$') matches what is before it
            anchored = anchored and pieces[-1] != ""
            pieces = [piece for piece in pieces if piece] or [""]
        segments = tuple(map(literal, pieces) if escaped else pieces)
        after = segments[0] if len(segments) == 1 else segments
    return key, (len(pattern), allow, -number, len(key), anchored, after)


def _enter(entered: dict[str, bool], pattern: str, allow: bool) -> bool:
    """Does the rule ``pattern`` (an Allow if ``allow``) need an entry of its own? Not if
    an earlier rule of the same pattern and kind has one, nor a Disallow whose pattern
    an Allow has (equal weights: the Allow wins); noted in ``entered`` if it does."""
    had = entered.get(pattern)
    if had is not None and (had or not allow):
        return False
    entered[pattern] = allow
    return True


def _heaviest_first(entries: Iterable[Entry]) -> tuple[Entry, ...]:
    """Heavier first, allow first among equals, then file order: the entries sorted as
    they are, in reverse (a rule's number is kept negated for this; no two entries
    have the same weight, kind and rule)."""
    return tuple(sorted(entries, reverse=True))


class Intervals(NamedTuple):
    """A token's rules, compiled: what a ``RuleSet`` is made of."""

    #: per rule (by number, in file order): ``line << 1 | allow``
    lines: array[int]
    #: rule number -> the normalised pattern of an entry (wildcard, anchored, index.html)
    patterns: dict[int, str] | None
    #: rule number -> the pattern as written, where normalising changed it
    written: dict[int, str] | None
    #: whether a key or an entry's piece has a %XX escape
    escaped: bool
    #: whether an entry's piece has a character an escape is written with
    hexes: bool
    #: the sorted interval bounds
    bounds: list[str]
    #: per interval: the heaviest plain rule as ``number << 1 | allow``, or -1
    codes: list[int]
    #: per interval: its answer, UNSETTLED until worked out, None outside every bound
    answers: list[Answer | None]
    #: per pending interval: its frame
    pending: dict[int, Frame]


def compile_rules(written_rules: Sequence[str], codes: Sequence[int]) -> Intervals:
    """The intervals of a token's merged rules (patterns as written, and beside them
    ``line << 1 | allow``, in file order)."""
    written_all = written_rules
    given = codes
    if "" in written_all:  # an empty pattern matches nothing (see parser)
        given = [code for code, pattern in zip(codes, written_rules, strict=True) if pattern]
        written_all = [pattern for pattern in written_rules if pattern]
    text = "\n".join(written_all)
    # Nothing to normalise in any pattern (one C pass over them all): no '%' either.
    clean = text.isascii() and not text.encode().translate(None, _ALLOWED_LINES)
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
        lines = list(given)
        numbers = [n << 1 | (code & 1) for n, code in enumerate(lines)]
        plain = dict(zip(written_all, numbers, strict=True))
        if len(plain) == len(lines):
            framed = _intervals(plain, {})
            return Intervals(array("I", lines), None, None, False, False, *framed)
    plain = {}  # key -> its plain rule as number << 1 | allow
    entries: dict[str, list[Entry]] = {}
    patterns: dict[int, str] = {}
    lines = []
    written: dict[int, str] = {}
    # else no rule is an index.html one (normalising may decode one: "/%69ndex.htm")
    index_html = not clean or "/index.htm" in text
    # pattern -> whether an Allow entry has it (else a Disallow entry does): identical
    # rules are one rule (the first; and an Allow beats its twin Disallow), so a file of
    # 16,000 copies of one line has one entry to try, not 16,000
    entered: dict[str, bool] = {}
    number = -1
    for index, pattern in enumerate(written_all):
        as_written = pattern
        if not clean:
            # normalise, its common case inlined: a pattern with nothing to change
            if not pattern.isascii() or pattern.encode().translate(None, PLAIN_OCTETS):
                pattern = normalise(pattern)
            if pattern[0] not in "/*":
                continue  # matches nothing: no leading '/' (see parser)
            if pattern != as_written:
                written[number + 1] = as_written
        elif pattern[0] not in "/*":
            continue
        number += 1
        code = given[index]
        allow = code & 1 == 1
        lines.append(code)
        if (
            "*" not in pattern
            and pattern[-1] != "$"
            and (clean or "%" not in pattern or ("%2A" not in pattern and "%24" not in pattern))
        ):
            # The usual rule: a plain prefix, weighing its length; of twins, the first
            # allow (else the first rule) decides.
            found = plain.get(pattern)
            if found is None or (allow and not found & 1):
                plain[pattern] = number << 1 | allow
        elif _enter(entered, pattern, allow):
            patterns[number] = pattern
            key, entry = _entry(pattern, allow, number)
            entries.setdefault(key, []).append(entry)
        if index_html and allow and "/index.htm" in pattern:
            directory = _directory(pattern)
            if directory is not None and _enter(entered, directory, True):
                patterns[number] = pattern
                key, entry = _entry(directory, True, number)
                entries.setdefault(key, []).append(entry)
    # If no key or piece has a %XX escape, a path's raw ' ', '|'... (which normalising
    # escapes) cannot change which keys are its prefixes: only entries need the
    # normalised path. If no piece has '%', a digit or 'A'-'F' (``hexes``), a raw
    # octet cannot change what the entries match either.
    pieces = "\n".join(
        after if isinstance(after, str) else "".join(after)
        for found in entries.values()
        for *_, after in found
        if after is not None
    )
    escaped = not clean and (
        any("%" in key for key in plain) or any("%" in key for key in entries) or "%" in pieces
    )
    return Intervals(
        array("I", lines),
        patterns or None,
        written or None,
        escaped,
        bool(_HEX.search(pieces)),
        *_intervals(plain, entries),
    )


def _intervals(
    plain: dict[str, int], entries: dict[str, list[Entry]]
) -> tuple[list[str], list[int], list[Answer | None], dict[int, Frame]]:
    """Cut the paths into intervals at every key and ``key + END``; say what each
    interval's keys decide (:data:`UNSETTLED` where entries may outweigh the plain rule:
    most such intervals are never asked).

    The keys "" and "/" are the root's, which every interval inherits. Interval 0,
    before :data:`FIRST`, and the last, past :data:`LAST`, hold no path (answer None).
    ``/robots.txt`` has an interval of its own, allowed, when a rule covers it: a URL's
    interval says all once the set is rebased on its origin.
    """
    if not plain and not entries:  # no rule: every URL allowed, whatever its origin
        return [], [-1], [True], {}
    everywhere = [*entries.pop("", ()), *entries.pop("/", ())]
    root_code = plain.pop("/", -1)  # -1 & 1 is 1: no rule allows
    root_found = _heaviest_first(everywhere) if everywhere else ()
    root: Frame = (
        "/",
        root_code,
        1 if root_code >= 0 else -1,
        root_found,
        None,
        root_found[0] if root_found else None,
        _cost(root_found),
    )
    root_answer: Answer = UNSETTLED if _open(root) else root_code & 1 == 1
    pending: dict[int, Frame] = {}
    keys = sorted(plain.keys() | entries.keys()) if entries else sorted(plain)
    if (
        not entries
        and root_answer is not UNSETTLED
        and not any(map(str.startswith, keys[1:], keys))
    ):
        # Plain rules only, no key a prefix of another (then none is a prefix of the key
        # after it): root, key, its end, root, key... made by slices, in C (most files).
        count = len(keys)
        bounds = [FIRST] * (2 * count + 2)
        bounds[1:-1:2] = keys
        bounds[2:-1:2] = [key + END for key in keys]
        bounds[-1] = LAST
        codes = [root_code] * (2 * count + 3)
        answers: list[Answer | None] = [root_answer] * (2 * count + 3)
        codes[0] = codes[-1] = -1
        answers[0] = answers[-1] = None
        own_codes = [plain[key] for key in keys]
        codes[2:-1:2] = own_codes
        answers[2:-1:2] = [code & 1 == 1 for code in own_codes]
    else:
        # A sweep over the sorted keys with a stack of the keys open (those that are
        # prefixes of the current one): a key opens its interval, its end closes it and
        # goes back to the interval of the key open under it.
        bounds = [FIRST]
        codes = [-1, root_code]
        answers = [None, root_answer]
        if root_answer is UNSETTLED:
            pending[1] = root
        stack: list[Frame] = []
        at = 0
        while at < len(keys) or stack:
            if at < len(keys) and (not stack or keys[at].startswith(stack[-1][0])):
                key = keys[at]
                at += 1
                frame = _under(key, stack[-1] if stack else root, plain, entries)
                stack.append(frame)
                bounds.append(key)
            else:  # the keys under the open one are done: close it
                bounds.append(stack.pop()[0] + END)
                frame = stack[-1] if stack else root
            codes.append(frame[1])
            if _open(frame):
                pending[len(answers)] = frame
                answers.append(UNSETTLED)
            else:
                answers.append(frame[1] & 1 == 1)
        bounds.append(LAST)
        codes.append(-1)
        answers.append(None)
    at = bisect_right(bounds, ROBOTS_TXT)
    if answers[at] is not True:
        # cut its interval at /robots.txt (unless a key is that) and just past it
        cuts = [ROBOTS_TXT_END] if bounds[at - 1] == ROBOTS_TXT else [ROBOTS_TXT, ROBOTS_TXT_END]
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
    return bounds, codes, answers, pending

"""Longest-match rule sets, compiled once per product token (RFC 9309 §2.2.2-3).

A path takes one bisection into intervals worked out at compile time; ``*`` is matched
with ``str.find``, leftmost first, so no pattern can backtrack (docs/engine.md). Weight:
the octets of the normalised pattern, ``*`` and ``$`` included (Google's); ties: allow.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Iterable, Sequence

from scrapy_rep.robotstxt import intervals
from scrapy_rep.robotstxt.intervals import UNSETTLED, Answer, Entry, Frame, Walk, compile_rules
from scrapy_rep.robotstxt.parser import Rule
from scrapy_rep.robotstxt.paths import AUTHORITY
from scrapy_rep.robotstxt.sieve import Sieve, path_grams


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


def first_entry(path: str, entries: tuple[Entry, ...]) -> Entry | None:
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


#: What judging one URL against a :class:`Chain` may cost (a character scanned is one
#: unit): about 1.5 ms of CPU whatever the file. Past it the untried Allow entries are
#: *assumed* not to match and the Disallow entries are still tried: the answer can only
#: be stricter, and a URL is dropped only by a Disallow rule that matches it.
MATCH_BUDGET = 1_000_000
#: the cost of a step of the loop, in characters scanned
_STEP = 100
#: a frame with more entries than this (plus a quarter of the path's length, unless the
#: path's grams are made) is sieved before it is walked: below, trying each costs less
SIEVE_MIN = 24


class Chain:
    """The entries of an interval's keys, walked frame by frame, never merged.

    The deciding entry is the heaviest of each frame's first match. Used where the chain
    is too large to merge (``MERGE_LIMIT``): memory stays one reference per interval,
    the work per URL capped by :data:`MATCH_BUDGET`.
    """

    __slots__ = ("disallows", "frame", "sieves")

    def __init__(
        self,
        frame: Frame,
        disallows: dict[int, tuple[Entry, ...]],
        sieves: dict[int, Sieve],
    ) -> None:
        self.frame = frame
        #: per frame (by id; the rule set's, shared by its chains): its Disallow entries
        self.disallows = disallows
        #: per frame of many entries (by id; shared like ``disallows``): its sieve
        self.sieves = sieves

    def first(self, path: str) -> Entry | None:
        """The heaviest entry that matches ``path`` and outweighs the plain rule."""
        weight, plain = self.frame[2], self.frame[1] & 1 == 1
        left = MATCH_BUDGET
        spent = False  # the budget: once spent, Allow entries are no longer tried
        scan = len(path) + _STEP
        best: Entry | None = None
        frame: Frame | None = self.frame
        grams: set[str] | None = None  # the path's, made for the first sieve that asks
        sieved = SIEVE_MIN + len(path) // 4  # entries past which they cost more than grams
        while frame is not None:
            found: tuple[Entry, ...] | list[Entry] = frame[3]
            left -= _STEP
            if len(found) > SIEVE_MIN:
                sieve = self.sieves.get(id(frame))
                if sieve is None:
                    sieve = self.sieves[id(frame)] = Sieve(frame[3])
                if sieve.useful:
                    if grams is None and sieve.filed and len(found) > sieved:
                        left -= 2 * scan  # the path's grams cost less than trying each entry
                        grams = path_grams(path)
                    if grams is not None or not sieve.filed:
                        found = sieve.among(path, grams)
            if spent and found is frame[3]:  # its Disallow entries, listed once per rule set
                found = self.disallows.get(id(frame))  # type: ignore[assignment]
                if found is None:
                    found = self.disallows[id(frame)] = tuple([e for e in frame[3] if not e[1]])
            for entry in found:
                heft = entry[0]
                if heft < weight or (heft == weight and (plain or not entry[1])):
                    break  # this and the lighter ones cannot outweigh the plain rule
                if best is not None and entry < best:
                    break
                if spent and entry[1]:
                    continue  # an Allow entry out of budget: assumed not to match
                after = entry[5]
                if after is None:  # a literal pattern: anchored (else it would be plain)
                    left -= _STEP
                    matched = not entry[4] or len(path) == entry[3]
                elif after.__class__ is str:  # one '*': one C scan
                    left -= scan
                    if entry[4]:
                        matched = path.endswith(after) and len(path) - len(after) >= entry[3]
                    else:
                        matched = path.find(after, entry[3]) >= 0
                else:
                    # the last piece first (one C scan): most entries fail on it
                    left -= scan
                    last = after[-1]
                    matched = path.endswith(last) if entry[4] else path.find(last, entry[3]) >= 0
                    if matched:
                        left -= scan + _STEP * len(after)
                        matched = _glob(path, entry[3], after, entry[4])  # type: ignore[arg-type]
                if matched:
                    best = entry
                    break
                if left < 0:
                    spent = True
            frame = frame[4]
        return best


#: bytes per interval bound: the str rebased on an origin, its slots in the arrays, and
#: the settled answer shared by its frame
BOUND_BYTES = 160
#: bytes per pending interval: its dict slots and, at worst, its frame's merged entries
UNSETTLED_BYTES = 120 + 8 * 64
#: bytes per wildcard/anchored entry (its tuple, pieces, pattern, frame and sieve slots),
#: plus 6 per octet of its pattern
ENTRY_BYTES = 530
#: bytes per rule: its line in an array, a rule made when asked for (by few)
RULE_BYTES = 8
#: a rule set's fixed cost
SET_BYTES = 600


def first_of(path: str, tried: tuple[Entry, ...] | Walk) -> Entry | None:
    """The entry that decides ``path`` among an interval's entries (a tuple or a chain)."""
    if tried.__class__ is tuple:
        return first_entry(path, tried)
    return tried.first(path)  # type: ignore[union-attr]


class RuleSet:
    """The merged rules of the groups that apply to one product token, packed.

    One bisection (in C) finds a path's interval; ``answers`` has per interval True /
    False, or the plain rule's answer and the entries that may outweigh it
    (:data:`UNSETTLED` until first asked). Each bound starts with ``prefix`` (after
    :meth:`rebase`, an origin's ``scheme://authority``), so a URL is bisected as it comes.
    A rule is kept as its number (``line << 1 | allow``), made a :class:`Rule` when asked.
    """

    __slots__ = (
        "_lines",
        "_made",
        "_missed",
        "_misses",
        "_patterns",
        "_pending",
        "_plain",
        "_settled",
        "_undecided",
        "_walks",
        "_written",
        "answers",
        "bounds",
        "cut",
        "escaped",
        "footprint",
        "hexes",
        "prefix",
    )

    def __init__(
        self,
        rules: Iterable[Rule] = (),
        *,
        parsed: tuple[Sequence[str], Sequence[int]] | None = None,
    ) -> None:
        if parsed is None:  # Rule objects: their fields
            given = list(rules)
            parsed = (
                [rule.pattern for rule in given],
                [rule.line << 1 | rule.allow for rule in given],
            )
        (
            self._lines,
            self._patterns,
            self._written,
            self.escaped,
            self.hexes,
            bounds,
            codes,
            self.answers,
            pending,
        ) = compile_rules(*parsed)
        #: each bound is ``prefix`` + a path
        self.bounds: tuple[str, ...] = tuple(bounds)
        self.prefix = ""
        self.cut = 0
        self._plain = array("i", codes)
        #: per interval asked where entries may outweigh the plain rule: those entries
        self._undecided: dict[int, tuple[Entry, ...] | Chain] = {}
        self._pending = pending or None
        #: an upper estimate of the bytes the set may come to hold, however it is asked
        #: (checked with tracemalloc on hostile files); linear in what was compiled
        size = SET_BYTES + BOUND_BYTES * len(bounds) + sum(map(len, bounds))
        size += UNSETTLED_BYTES * len(pending) + RULE_BYTES * len(self._lines)
        if self._patterns:
            values = self._patterns.values()
            size += ENTRY_BYTES * len(values) + 6 * sum(map(len, values))
        if self._written:
            size += 80 * len(self._written) + sum(map(len, self._written.values()))
        self.footprint = size
        #: per frame settled (by id, the frame kept with it): its entries and answer,
        #: shared by the intervals under the same keys (made when first asked)
        self._settled: dict[int, tuple[Frame, tuple[Entry, ...] | Chain, Answer]] | None = None
        #: per frame walked as a :class:`Chain` (by id): its Disallow entries, its sieve
        self._walks: tuple[dict[int, tuple[Entry, ...]], dict[int, Sieve]] | None = None
        #: the rules made when asked for (:meth:`match`), by number
        self._made: dict[int, Rule] | None = None
        #: the prefix of the URLs judged last outside the bounds, and how many in a row
        self._missed: str | None = None
        self._misses = 0

    def settle(self, at: int) -> Answer:
        """Work out what the interval ``at`` answers (its entries), when first asked."""
        assert self._pending is not None
        frame = self._pending.pop(at)
        if self._settled is None:
            self._settled = {}
        settled = self._settled.get(id(frame))
        if settled is None:
            settled = self._settled[id(frame)] = (frame, *self._work_out(frame))
        self._undecided[at] = settled[1]
        if self.answers[at] is UNSETTLED:  # (not the interval of /robots.txt alone)
            self.answers[at] = settled[2]
        return self.answers[at]  # type: ignore[return-value]  # settled: not None

    def _work_out(self, frame: Frame) -> tuple[tuple[Entry, ...] | Chain, Answer]:
        """The entries that may outweigh the frame's plain rule, heaviest first, and the
        answer of its intervals. A small chain is merged into one tuple; a larger one
        stays a :class:`Chain` (merging would copy the root's entries into every key)."""
        _, code, weight, found, up, _, cost = frame
        plain_answer = code & 1 == 1
        if cost > intervals.MERGE_LIMIT:
            if self._walks is None:
                self._walks = ({}, {})
            chain = Chain(frame, *self._walks)
            return chain, (plain_answer, chain)
        if up is not None:
            merged = list(found)
            while up is not None:
                merged += up[3]
                up = up[4]
            found = tuple(sorted(merged, reverse=True))
        cut = 0
        for entry in found:
            if entry[0] > weight or (entry[0] == weight and entry[1] and not plain_answer):
                cut += 1
            else:
                break
        beats = found if cut == len(found) else found[:cut]
        # For allowed(), the entries up to the last that says otherwise than the plain
        # rule (none: the plain rule's answer stands).
        last = cut
        while last and beats[last - 1][1] is plain_answer:
            last -= 1
        if not last:
            return beats, plain_answer
        return beats, (plain_answer, beats if last == cut else beats[:last])

    def rebase(self, prefix: str) -> None:
        """Start every bound with ``prefix``, a URL's ``scheme://authority``, so that the
        URLs of that origin are bisected whole (another's fall outside the bounds)."""
        if self.bounds:
            cut = self.cut
            self.bounds = tuple([prefix + bound[cut:] for bound in self.bounds])
            self.prefix, self.cut, self._missed = prefix, len(prefix), None

    def adopt(self, url: str) -> int:
        """Rebase on ``url``'s origin once its URLs keep coming (8 in a row outside the
        bounds; 2 if never rebased): origins sharing a file in turn would cost more
        rebased at every turn than judged by their paths. Where the URL's path starts,
        or -1 if it has none."""
        end = AUTHORITY(url).end()  # type: ignore[union-attr]  # always matches
        if url[end : end + 1] != "/":
            return -1
        prefix = url[:end]
        if prefix != self._missed:
            self._missed, self._misses = prefix, 0
        self._misses += 1
        # never rebased: at the second URL (a file judged once would pay for nothing)
        if self._misses >= 8 or (self._misses >= 2 and prefix and not self.prefix):
            self.rebase(prefix)
        return end

    def __len__(self) -> int:
        return len(self._lines)

    def best(self, path: str, at: int = -1) -> int:
        """The deciding rule for ``path`` as ``number << 1 | allow``, or -1; ``at``: the
        path's interval, if the caller has bisected already."""
        if at < 0:
            at = bisect_right(self.bounds, self.prefix + path)
        undecided = self._undecided.get(at)
        if undecided is None and self._pending is not None and at in self._pending:
            self.settle(at)
            undecided = self._undecided[at]
        if undecided is not None:
            entry = first_of(path, undecided)
            if entry is not None:
                return -entry[2] << 1 | entry[1]
        return self._plain[at]

    def allows(self, path: str) -> bool:
        """Is a path in :func:`normalise_path` form allowed (no rule, or an allow rule)?"""
        code = self.best(path)
        return code < 0 or code & 1 == 1

    def match(self, path: str, at: int = -1) -> Rule | None:
        """The deciding rule for a path in :func:`normalise_path` form, or None."""
        code = self.best(path, at)
        if code < 0:
            return None
        number = code >> 1
        made = self._made
        if made is None:
            made = self._made = {}
        rule = made.get(number)
        if rule is None:  # the pattern as written, else as normalised, else the key
            pattern = self._written.get(number) if self._written is not None else None
            if pattern is None and self._patterns is not None:
                pattern = self._patterns.get(number)
            if pattern is None:  # a plain rule written as its key, a prefix of the path
                pattern = self._key_of(number, path)
            code = self._lines[number]
            rule = made[number] = Rule(code & 1 == 1, pattern, code >> 1)
        return rule

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

"""TDMRep (W3C TDM Reservation Protocol, CG final report): who reserves text and data mining.

Pure: bytes and strings in, answers out. Three places say it, later ones
overriding earlier ones for one response (absence never resets a value):

1. ``/.well-known/tdmrep.json`` (:func:`parse_tdmrep`), read before crawling:
   a JSON array of ``{"location", "tdm-reservation", "tdm-policy"}``. A
   ``location`` is a robots.txt path pattern (``*``, a trailing ``$``),
   matched case-sensitively with the robots.txt matcher; the most specific
   (longest) matching location decides;
2. the ``tdm-reservation`` response header;
3. ``<meta name="tdm-reservation" content="...">`` in an HTML page.

``tdm-reservation`` is ``1`` (rights reserved: refuses ``train-ai``) or ``0``
(not reserved: allows it); any other value is no value at all. ``tdm-policy``
(a URL to the publisher's licence offer) is kept, not fetched.

What scrapy-rep decides where the report is silent:

- an entry whose ``location`` is not a string starting with ``/`` or ``*``, or
  whose ``tdm-reservation`` is not the JSON number ``0`` or ``1`` (``"1"``,
  ``true`` and ``2`` are not), is skipped with a diagnostic: a less specific
  entry then decides;
- two entries with the same location: ``1`` wins (the cautious reading, as
  aipref combines ``n`` and ``y``);
- a file that is not JSON, not an array, or :data:`MAX_BYTES` or more gives no
  rules and a diagnostic: the file then says nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from scrapy_rep.core.origin import robots_url
from scrapy_rep.core.uses import UseAnswer
from scrapy_rep.robotstxt.matcher import RuleSet
from scrapy_rep.robotstxt.parser import MAX_BYTES as ROBOTS_MAX_BYTES
from scrapy_rep.robotstxt.parser import MAX_DIAGNOSTICS, Rule
from scrapy_rep.robotstxt.paths import normalise, normalise_path, path_of
from scrapy_rep.robotstxt.text import clip, printable

#: where the file lives on every origin
WELL_KNOWN = "/.well-known/tdmrep.json"
#: the use TDMRep speaks about
USE = "train-ai"
#: the file is read up to this size (as robots.txt is); a longer one says nothing
MAX_BYTES = ROBOTS_MAX_BYTES
#: entries kept; the rest are counted in one diagnostic
MAX_RULES = 10_000
#: bytes per kept entry beside its text (TdmRules.footprint)
ENTRY_BYTES = 400
#: a diagnostic keeps this much of what it quotes
_QUOTE = 80


@dataclass(frozen=True, slots=True)
class TdmRule:
    """One entry of tdmrep.json, as written (``index`` counts from 0)."""

    location: str
    reservation: int
    policy: str | None
    index: int

    @property
    def answer(self) -> UseAnswer:
        # the site's text, as long as its file: escaped, and clipped as every quoted source
        shown = printable(clip(self.location))
        return reservation_answer(self.reservation, f"tdmrep.json location {shown}")


class TdmRules:
    """A parsed tdmrep.json: :meth:`answer` for a URL or path."""

    __slots__ = ("__weakref__", "_by_line", "_rules", "diagnostics", "footprint", "rules")

    def __init__(self, rules: Iterable[TdmRule] = (), diagnostics: Iterable[str] = ()) -> None:
        #: the entries that count, the first of each location (``1`` winning a tie)
        self.rules: tuple[TdmRule, ...] = tuple(rules)
        #: what was not understood, one sentence each
        self.diagnostics: tuple[str, ...] = tuple(diagnostics)
        self._by_line = {rule.index: rule for rule in self.rules}
        # matched as Disallow lines: longest pattern wins, no Allow-only quirks (index.html)
        self._rules = RuleSet(Rule(False, rule.location, rule.index) for rule in self.rules)
        #: an upper estimate of the bytes held (a cache counts it with its origin): the
        #: compiled set, ``ENTRY_BYTES`` per entry (the TdmRule, its Rule, a dict slot)
        #: and the text of its entries and diagnostics
        self.footprint = (
            self._rules.footprint
            + ENTRY_BYTES * len(self.rules)
            + sum(len(r.location) + len(r.policy or "") for r in self.rules)
            + sum(80 + len(d) for d in self.diagnostics)
        )

    def __len__(self) -> int:
        return len(self.rules)

    def rule(self, url: str) -> TdmRule | None:
        """The most specific entry whose location matches ``url`` (absolute, or a path)."""
        if not self.rules:
            return None
        found = self._rules.match(normalise_path(path_of(url)))
        return self._by_line[found.line] if found is not None else None

    def answer(self, url: str) -> UseAnswer | None:
        """``train-ai`` refused (``1``) or allowed (``0``) for ``url``; None if no entry matches."""
        rule = self.rule(url)
        return rule.answer if rule is not None else None


#: a file that says nothing (4xx, or never fetched)
NO_RULES = TdmRules()


def tdmrep_url(origin: str) -> str:
    """Where an origin's tdmrep.json lives (the default port left out, as for robots.txt)."""
    return robots_url(origin)[: -len("/robots.txt")] + WELL_KNOWN


def reservation_answer(reservation: int, source: str) -> UseAnswer:
    return UseAnswer(USE, "refused" if reservation == 1 else "allowed", source)


def parse_tdmrep(body: bytes) -> TdmRules:
    """tdmrep.json bytes -> :class:`TdmRules`; never raises."""
    if len(body) >= MAX_BYTES:  # the fetch cuts a longer file here: what is left is no JSON
        return TdmRules(diagnostics=[f"{MAX_BYTES // 1024} KiB or more: not read"])
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError
        return TdmRules(diagnostics=[f"not JSON: {_quote(str(exc))}"])
    if not isinstance(data, list):
        return TdmRules(diagnostics=[f"not a JSON array but {type(data).__name__}"])
    diagnostics = _Diagnostics()
    kept: dict[str, TdmRule] = {}  # normalised location -> its entry
    for index, entry in enumerate(data):
        if len(kept) >= MAX_RULES:
            diagnostics.append(f"more than {MAX_RULES} entries: the rest ignored")
            break
        rule = _rule(index, entry, diagnostics)
        if rule is None:
            continue
        key = normalise(rule.location)
        old = kept.get(key)
        if old is None or (rule.reservation == 1 and old.reservation == 0):
            kept[key] = rule
    return TdmRules(sorted(kept.values(), key=lambda r: r.index), diagnostics.kept())


class _Diagnostics(list[str]):
    """The first ``MAX_DIAGNOSTICS`` diagnostics of a file, the rest counted, as robots.txt's.

    A file of 255,000 bad entries (``[1,1,1,…]``) gave a diagnostic each: 21 MB kept
    with the origin's file, and an audit record of megabytes.
    """

    dropped = 0

    def append(self, text: str) -> None:
        if len(self) < MAX_DIAGNOSTICS:
            super().append(text)
        else:
            self.dropped += 1

    def kept(self) -> list[str]:
        more = [f"{self.dropped} more diagnostics not kept"] if self.dropped else []
        return [*self, *more]


def _rule(index: int, entry: object, diagnostics: list[str]) -> TdmRule | None:
    where = f"entry {index}"
    if not isinstance(entry, dict):
        diagnostics.append(f"{where}: not an object")
        return None
    location = entry.get("location")
    if not isinstance(location, str) or location[:1] not in ("/", "*"):
        diagnostics.append(f"{where}: location {_quote(repr(location))} is no path pattern")
        return None
    reservation = entry.get("tdm-reservation")
    if type(reservation) is not int or reservation not in (0, 1):  # bool is no number here
        diagnostics.append(
            f"{where}: tdm-reservation {_quote(repr(reservation))} is neither 0 nor 1; ignored"
        )
        return None
    policy = entry.get("tdm-policy")
    if policy is not None and not isinstance(policy, str):
        diagnostics.append(f"{where}: tdm-policy {_quote(repr(policy))} is no URL; ignored")
        policy = None
    return TdmRule(location, reservation, policy, index)


def reservation_value(values: Iterable[str | bytes]) -> int | None:
    """``tdm-reservation`` header values or meta contents -> 1, 0 or None (no value).

    Several values (repeated headers, comma-separated, several tags): any ``1``
    reserves; else any ``0`` lifts; anything else is no value.
    """
    found: int | None = None
    for value in values:
        text = value.decode("latin-1") if isinstance(value, bytes) else value
        for part in text.split(","):
            part = part.strip()
            if part == "1":
                return 1
            if part == "0":
                found = 0
    return found


def _quote(text: str) -> str:
    return text if len(text) <= _QUOTE else text[: _QUOTE - 1] + "…"

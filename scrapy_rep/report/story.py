"""What an audit log says happened, per origin and per request: the HTML report's model.

Pure: it takes the audit log's records (dicts, in the order they were written)
and never reads a file. Every value may come from a hostile site (URLs, rules,
robots.txt reasons), so nothing here interprets text; the renderer escapes it.
Records of an unknown type, or missing fields, are skipped or left blank, never
an error: an audit log from another version still gives a report.

What it keeps does not grow with the log: requests are counted (per origin, per
action and reason), and of the records a page lists one by one (drops, held
requests, an origin's pauses) it keeps the first and the last :data:`EXAMPLES` of
each reason (:class:`Examples`), saying how many it left out. What still grows is
per origin (its counts, its robots.txt and tdmrep.json fetches, bounded by their
lifetime), and the requests held when the log ends, bounded by the crawl's parking
lot: a held request is forgotten once its fate is read.
"""

from __future__ import annotations

import re
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from scrapy_rep.core.identity import IDENTITY_CHANGED, TOKEN_MISSING

#: the uses answer a decision record carries (``uses``: use -> {answer, source})
REFUSED = "refused"
#: the fate of a held request handed over at close: by its decision's ``action``, and by
#: the ``requeued`` / ``kept`` records that said it before decisions did (older logs)
HANDED_OVER = {
    "requeue": "requeued into the shared queue",
    "keep": "kept in the JOBDIR for the resumed crawl",
}
_HANDED_OVER_RECORDS = {"requeued": HANDED_OVER["requeue"], "kept": HANDED_OVER["keep"]}
#: every record type this story reads (``reference/records.py`` RECORDS, and older logs' ``kept``);
#: any other is counted in :attr:`AuditStory.unknown`
KNOWN_TYPES = frozenset(
    {
        "fetch",
        "decision",
        "parked",
        "released",
        "requeued",
        "kept",
        "response",
        "identity",
        "subrequest",
        "page_use",
        "item_dropped",
        "tdmrep",
        "origin",
    }
)
#: how a drop's decision record names the use and the source that refused it
_USE_REFUSED = "use-refused"
#: records of one reason listed at most from the start of the log, and again from its end
EXAMPLES = 50
#: reasons with examples of their own at most (a log from a hostile source may invent
#: any number); the records of further reasons are counted, not listed
MAX_KINDS = 100
#: an origin's pauses listed at most from the start of the log, and again from its end
PAUSE_EXAMPLES = 20
#: responses refusing a use kept at most (one per URL and use); the rest are counted
MAX_PAGE_REFUSALS = 5_000

T = TypeVar("T")
#: drops that overrule a ``download`` answer already recorded for the same request
OVERRULING = frozenset({TOKEN_MISSING, IDENTITY_CHANGED})


class Examples(Generic[T]):
    """The first and the last ``keep`` items of each kind, in the order they came, and
    how many came: what a page lists of records a log may hold millions of."""

    def __init__(self, keep: int = EXAMPLES, kinds: int = MAX_KINDS) -> None:
        self.keep, self.kinds = keep, kinds
        #: every item added, kept or not
        self.total = 0
        self._first: dict[str, list[tuple[int, T]]] = {}
        self._last: dict[str, deque[tuple[int, T]]] = {}

    def add(self, kind: str, item: T) -> None:
        self.total += 1
        first = self._first.get(kind)
        if first is None:
            if len(self._first) >= self.kinds:
                return  # counted, not listed
            first = self._first[kind] = []
            self._last[kind] = deque(maxlen=self.keep)
        if len(first) < self.keep:
            first.append((self.total, item))
        else:
            self._last[kind].append((self.total, item))

    def __iter__(self) -> Iterator[T]:
        """The items kept, in the order they were added."""
        kept = [pair for kind, first in self._first.items() for pair in (*first, *self._last[kind])]
        return (item for _, item in sorted(kept, key=lambda pair: pair[0]))

    def __len__(self) -> int:
        """How many items are kept (at most ``2 * keep`` of each kind)."""
        return sum(len(first) + len(self._last[kind]) for kind, first in self._first.items())

    @property
    def left_out(self) -> int:
        return self.total - len(self)


@dataclass
class PageRefusal:
    """A response that refused a declared use itself (its ``page_use`` record), and what
    was dropped for it (its ``item_dropped`` records)."""

    url: str
    origin: str
    use: str
    source: str
    at: float | None
    items_dropped: int = 0
    #: a media pipeline's download of this URL failed for it
    media_failed: bool = False


@dataclass
class Held:
    """One request held (parked) at least once, and what became of it."""

    url: str
    origin: str
    held_at: float | None
    reason: str
    released_at: float | None = None
    #: the final answer after it was held: ``download``, ``drop (reason)``, one of
    #: :data:`HANDED_OVER`'s; "" while held
    fate: str = ""
    fate_at: float | None = None


@dataclass
class OriginStory:
    origin: str
    #: robots.txt fetch records, in order: the policy's history
    fetches: list[dict[str, Any]] = field(default_factory=list)
    downloaded: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    parked: int = 0
    released: int = 0
    #: use -> the sources that refused it (robots.txt lines, headers)
    refused: dict[str, set[str]] = field(default_factory=dict)
    browser: Counter[str] = field(default_factory=Counter)
    #: tdmrep.json fetch records, in order
    tdmrep: list[dict[str, Any]] = field(default_factory=list)
    #: pauses for what its pages said (``page_pause`` records: 429, 503, a block), in
    #: order: the first and the last few
    pauses: Examples[dict[str, Any]] = field(
        default_factory=lambda: Examples(PAUSE_EXAMPLES, kinds=1)
    )
    #: ``licence_wall`` records: how many walls were met there, the last one, and whether
    #: any of them walled the origin off
    walls: int = 0
    last_wall: dict[str, Any] = field(default_factory=dict)
    walled: bool = False

    @property
    def status(self) -> str:
        return str(self.fetches[-1].get("status") or "") if self.fetches else ""


@dataclass
class AuditStory:
    origins: dict[str, OriginStory] = field(default_factory=dict)
    #: (action, reason) -> decision records; a request judged twice counts twice
    decisions: Counter[tuple[str, str]] = field(default_factory=Counter)
    #: (action, reason) -> browser sub-request records
    subrequests: Counter[tuple[str, str]] = field(default_factory=Counter)
    #: decision records that dropped a request: the first and last few of each reason
    drops: Examples[dict[str, Any]] = field(default_factory=Examples)
    #: requests held (parked): the first and last few of each reason they were held for
    holds: Examples[Held] = field(default_factory=Examples)
    #: held requests whose fate the log does not tell
    still_held: int = 0
    tokens: set[str] = field(default_factory=set)
    first_at: float | None = None
    last_at: float | None = None
    records: int = 0
    #: records of a type this version does not know (counted, not shown)
    unknown: int = 0
    #: responses refusing a declared use themselves, one per (URL, use): latest answer
    page_refusals: dict[tuple[str, str], PageRefusal] = field(default_factory=dict)
    #: items dropped for what their page said, by reason; media downloads failed, by reason
    items_dropped: Counter[str] = field(default_factory=Counter)
    media_failed: Counter[str] = field(default_factory=Counter)
    #: ``page_use`` refusals past :data:`MAX_PAGE_REFUSALS` (counted, not kept)
    page_refusals_left_out: int = 0
    #: URL -> its first page refusal (what its dropped items are counted on)
    refusal_of: dict[str, PageRefusal] = field(default_factory=dict)

    @property
    def dropped(self) -> list[dict[str, Any]]:
        """The decision records of drops kept (:attr:`drops`), in the log's order."""
        return list(self.drops)

    @property
    def held(self) -> list[Held]:
        """The held requests kept (:attr:`holds`), in the log's order."""
        return list(self.holds)

    def origin(self, key: Any) -> OriginStory:
        name = str(key or "")
        story = self.origins.get(name)
        if story is None:
            story = self.origins[name] = OriginStory(name)
        return story

    @property
    def downloaded(self) -> int:
        return sum(o.downloaded for o in self.origins.values())

    @property
    def handed_over(self) -> int:
        """Decision records of held requests requeued or kept at close."""
        return sum(n for (action, _), n in self.decisions.items() if action in HANDED_OVER)

    @property
    def fetch_count(self) -> int:
        return sum(len(o.fetches) for o in self.origins.values())


_ROBOTS_LINE = re.compile(r"robots\.txt line (\d+)")


def dropped_by(record: dict[str, Any]) -> tuple[str, int | None, str]:
    """(rule, line, group) that dropped a request, from its decision record.

    For ``use-refused`` that is the source refusing the use (a robots.txt
    ``Content-Usage`` / ``Content-Signal`` line, a policy token's group,
    tdmrep.json), not the rule the request passed; otherwise the matched rule.
    """
    group = str(record.get("group") or "")
    line = record.get("matched_line")
    number = line if isinstance(line, int) and not isinstance(line, bool) else None
    if record.get("reason") != _USE_REFUSED:
        return str(record.get("matched_rule") or ""), number, group
    detail = str(record.get("detail") or "")
    uses = record.get("uses")
    refused = [
        (str(use), str(said.get("source") or ""))
        for use, said in (uses.items() if isinstance(uses, dict) else ())
        if isinstance(said, dict) and said.get("answer") == REFUSED
    ]
    if not refused:
        return detail, None, ""
    use, source = next(
        ((u, src) for u, src in refused if detail.endswith(f"{u} by {src}")), refused[0]
    )
    found = _ROBOTS_LINE.match(source)
    if found is None:  # tdmrep.json, ...: no robots.txt line, no group
        return f"{use} refused by {source}", None, ""
    return f"{use} refused by {source}", int(found.group(1)), group


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def story_of(records: Iterable[dict[str, Any]]) -> AuditStory:
    """Fold the records into per-origin histories, counts, drops and held requests."""
    story = AuditStory()
    held_by_url: dict[str, Held] = {}  # the latest hold of each URL
    for record in records:
        story.records += 1
        at = _number(record.get("at"))
        if at is not None:
            story.first_at = at if story.first_at is None else min(story.first_at, at)
            story.last_at = at if story.last_at is None else max(story.last_at, at)
        kind = record.get("type")
        url = str(record.get("url") or "")
        if kind == "fetch":
            story.origin(record.get("origin")).fetches.append(record)
        elif kind == "decision":
            held = held_by_url.get(url)
            _decision(story, record, held, at)
            if held is not None and held.fate:  # its fate is told: no longer followed
                del held_by_url[url]
        elif kind == "parked":
            origin = story.origin(record.get("origin"))
            origin.parked += 1
            if url not in held_by_url:  # a new hold (or held again after an answer)
                held = Held(url, origin.origin, at, str(record.get("reason") or ""))
                held_by_url[url] = held
                story.holds.add(held.reason, held)
        elif kind == "released":
            story.origin(record.get("origin")).released += 1
            held = held_by_url.get(url)
            if held is not None:
                held.released_at = at
        elif kind == "subrequest":
            action, reason = str(record.get("action") or ""), str(record.get("reason") or "")
            story.subrequests[(action, reason)] += 1
            story.origin(record.get("origin")).browser[reason if action != "download" else ""] += 1
        elif kind == "page_pause":
            story.origin(record.get("origin")).pauses.add("", record)
        elif kind == "page_resume":
            pass  # the pause's end is in its page_pause record
        elif kind == "licence_wall":
            origin = story.origin(record.get("origin"))
            origin.walls += 1
            origin.last_wall = record
            origin.walled = origin.walled or bool(record.get("walled"))
        elif kind in _HANDED_OVER_RECORDS:  # a dead worker's, or an older log's
            held = held_by_url.pop(url, None)
            if held is not None:
                held.fate, held.fate_at = _HANDED_OVER_RECORDS[str(kind)], at
        elif kind == "page_use":
            _page_use(story, record, url, at)
        elif kind == "item_dropped":
            _item_dropped(story, record, url, at)
        elif kind == "tdmrep":
            story.origin(record.get("origin")).tdmrep.append(record)
        elif kind not in KNOWN_TYPES:
            story.unknown += 1
    story.still_held = len(held_by_url)
    return story


def _page_use(story: AuditStory, record: dict[str, Any], url: str, at: float | None) -> None:
    uses = record.get("uses")
    if not isinstance(uses, dict):
        return
    origin = str(record.get("origin") or "")
    for use, said in uses.items():
        if not isinstance(said, dict):
            continue
        key = (url, str(use))
        if said.get("answer") == REFUSED:
            found = story.page_refusals.get(key)
            source = str(said.get("source") or "")
            if found is None and len(story.page_refusals) >= MAX_PAGE_REFUSALS:
                story.page_refusals_left_out += 1
            elif found is None:
                found = story.page_refusals[key] = PageRefusal(url, origin, str(use), source, at)
                story.refusal_of.setdefault(url, found)
            else:
                found.source, found.at = source, at
            story.origin(origin).refused.setdefault(str(use), set()).add(source)


def _item_dropped(story: AuditStory, record: dict[str, Any], url: str, at: float | None) -> None:
    reason = str(record.get("reason") or "")
    media = bool(record.get("media"))
    (story.media_failed if media else story.items_dropped)[reason] += 1
    refusal = story.refusal_of.get(url)
    if refusal is not None:
        if media:
            refusal.media_failed = True
        elif reason == _USE_REFUSED:
            refusal.items_dropped += 1


def _decision(
    story: AuditStory, record: dict[str, Any], held: Held | None, at: float | None
) -> None:
    action, reason = str(record.get("action") or ""), str(record.get("reason") or "")
    story.decisions[(action, reason)] += 1
    if record.get("product_token"):
        story.tokens.add(str(record["product_token"]))
    origin = story.origin(record.get("origin"))
    if action == "download":
        origin.downloaded += 1
    elif action == "drop":
        origin.dropped[reason] += 1
        story.drops.add(reason, record)
        if reason in OVERRULING and origin.downloaded > 0:  # its download record came first
            origin.downloaded -= 1
    uses = record.get("uses")
    if isinstance(uses, dict):
        for use, answer in uses.items():
            if isinstance(answer, dict) and answer.get("answer") == REFUSED:
                origin.refused.setdefault(str(use), set()).add(str(answer.get("source") or ""))
    if held is None or held.fate:
        return
    if action in HANDED_OVER:
        held.fate, held.fate_at = HANDED_OVER[action], at
    elif action in ("download", "drop"):
        held.fate = action if action == "download" else f"drop ({reason})"
        held.fate_at = at

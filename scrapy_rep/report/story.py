"""What an audit log says happened, per origin and per request: the HTML report's model.

Pure: it takes the audit log's records (dicts, in the order they were written)
and never reads a file. Every value may come from a hostile site (URLs, rules,
robots.txt reasons), so nothing here interprets text; the renderer escapes it.
Records of an unknown type, or missing fields, are skipped or left blank, never
an error: an audit log from another version still gives a report.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from scrapy_rep.core.identity import OVERRULING

#: the uses answer a decision record carries (``uses``: use -> {answer, source})
REFUSED = "refused"
#: the fate of a held request handed over at close: by its decision's ``action``, and by
#: the ``requeued`` / ``kept`` records that said it before decisions did (older logs)
HANDED_OVER = {
    "requeue": "requeued into the shared queue",
    "keep": "kept in the JOBDIR for the resumed crawl",
}
_HANDED_OVER_RECORDS = {"requeued": HANDED_OVER["requeue"], "kept": HANDED_OVER["keep"]}
#: every record type this story reads (``runtime/audit.py`` RECORDS, and older logs' ``kept``);
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
    #: pauses for what its pages said (``page_pause`` records: 429, 503, a block), in order
    pauses: list[dict[str, Any]] = field(default_factory=list)
    #: ``licence_wall`` records: the licence and payment walls met there
    walls: list[dict[str, Any]] = field(default_factory=list)

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
    #: decision records that dropped a request
    dropped: list[dict[str, Any]] = field(default_factory=list)
    held: list[Held] = field(default_factory=list)
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
    #: URL -> its first page refusal (what its dropped items are counted on)
    refusal_of: dict[str, PageRefusal] = field(default_factory=dict)

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
            _decision(story, record, held_by_url.get(url), at)
        elif kind == "parked":
            origin = story.origin(record.get("origin"))
            origin.parked += 1
            held = held_by_url.get(url)
            if held is None or held.fate:  # a new hold (or held again after an answer)
                held = Held(url, origin.origin, at, str(record.get("reason") or ""))
                held_by_url[url] = held
                story.held.append(held)
        elif kind == "released":
            story.origin(record.get("origin")).released += 1
            held = held_by_url.get(url)
            if held is not None and not held.fate:
                held.released_at = at
        elif kind == "subrequest":
            action, reason = str(record.get("action") or ""), str(record.get("reason") or "")
            story.subrequests[(action, reason)] += 1
            story.origin(record.get("origin")).browser[reason if action != "download" else ""] += 1
        elif kind == "page_pause":
            story.origin(record.get("origin")).pauses.append(record)
        elif kind == "page_resume":
            pass  # the pause's end is in its page_pause record
        elif kind == "licence_wall":
            story.origin(record.get("origin")).walls.append(record)
        elif kind in _HANDED_OVER_RECORDS:  # a dead worker's, or an older log's
            held = held_by_url.get(url)
            if held is not None and not held.fate:
                held.fate, held.fate_at = _HANDED_OVER_RECORDS[str(kind)], at
        elif kind == "page_use":
            _page_use(story, record, url, at)
        elif kind == "item_dropped":
            _item_dropped(story, record, url, at)
        elif kind == "tdmrep":
            story.origin(record.get("origin")).tdmrep.append(record)
        elif kind not in KNOWN_TYPES:
            story.unknown += 1
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
            if found is None:
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
        story.dropped.append(record)
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

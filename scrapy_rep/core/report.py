"""Per-origin counters kept during a crawl, and the summary logged at spider close.

Bounded like the policy cache (the least recently used origins are folded away) while
the totals stay exact, so a crawl of millions of origins keeps a small report.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from scrapy_rep.robotstxt.text import printable

#: origins shown in the report; the rest only count in the totals
TOP = 10


@dataclass
class OriginCounts:
    """What happened to one origin's requests."""

    downloaded: int = 0
    dropped: dict[str, int] = field(default_factory=dict)  # reason -> count
    parked: int = 0
    released: int = 0
    fetches: int = 0
    #: policies adopted without fetching here (another crawler's fetch, the shared store)
    reused: int = 0
    status: str = "pending"  # the latest policy status
    crawl_delay: float | None = None  # seconds applied to the download slot
    #: browser sub-requests (scrapy-playwright renders) allowed, and aborted by reason
    browser_allowed: int = 0
    browser_aborted: dict[str, int] = field(default_factory=dict)
    #: judged requests robots.txt refused for a use, by use
    uses_refused: dict[str, int] = field(default_factory=dict)
    #: pauses for what its pages said (429, 503, 401/403 in a row), by cause
    page_pauses: dict[str, int] = field(default_factory=dict)
    #: licence or payment walls met (responses), and what the last one asked
    walls: int = 0
    wall: str = ""

    @property
    def dropped_total(self) -> int:
        return sum(self.dropped.values())

    @property
    def requests(self) -> int:
        """Requests that reached a final answer (a parked one counts once, when it ends)."""
        return self.downloaded + self.dropped_total

    def to_dict(self) -> dict[str, Any]:
        return {
            "downloaded": self.downloaded,
            "dropped": dict(self.dropped),
            "parked": self.parked,
            "released": self.released,
            "fetches": self.fetches,
            "reused": self.reused,
            "status": self.status,
            "crawl_delay": self.crawl_delay,
            "browser_allowed": self.browser_allowed,
            "browser_aborted": dict(self.browser_aborted),
            "uses_refused": dict(self.uses_refused),
            "page_pauses": dict(self.page_pauses),
            "walls": self.walls,
            "wall": self.wall,
        }


class CrawlCounts:
    """Counters per origin (at most ``max_origins``, LRU) plus exact totals."""

    def __init__(self, max_origins: int = 100_000) -> None:
        self.max_origins = max(1, max_origins)
        self.origins: OrderedDict[str, OriginCounts] = OrderedDict()
        self.total = OriginCounts()
        self.seen = 0  # distinct origins ever counted (evicted ones too)
        self.evicted = 0
        #: waits for the cluster's shared Crawl-delay: how many, how long in all (s)
        self.delay_waits = 0
        self.delay_waited_s = 0.0
        #: held requests of dead workers this worker moved back into the shared queue
        self.requeued_from_dead = 0
        #: items dropped for what their page says, by reason (``use-refused``,
        #: ``page-noindex``); media pipeline downloads failed for it, by reason
        self.items_dropped: dict[str, int] = {}
        self.media_dropped_by: dict[str, int] = {}
        # hashes of the origins folded away: one that comes back is not counted again
        # (a set of ints, ~70 B an origin; two origins alike in 64 bits would count once)
        self._folded: set[int] = set()

    def of(self, origin: str) -> OriginCounts:
        counts = self.origins.get(origin)
        if counts is None:
            counts = self.origins[origin] = OriginCounts()
            if self._folded:
                key = hash(origin)
                if key in self._folded:
                    self._folded.discard(key)
                else:
                    self.seen += 1
            else:
                self.seen += 1
            while len(self.origins) > self.max_origins:
                folded, _ = self.origins.popitem(last=False)
                self._folded.add(hash(folded))
                self.evicted += 1
        else:
            self.origins.move_to_end(origin)
        return counts

    def downloaded(self, origin: str) -> None:
        self.of(origin).downloaded += 1
        self.total.downloaded += 1

    def undownloaded(self, origin: str) -> None:
        """A download counted, then overruled (a drop counts instead)."""
        for counts in (self.of(origin), self.total):
            counts.downloaded = max(0, counts.downloaded - 1)

    def dropped(self, origin: str | None, reason: str) -> None:
        for counts in (self.of(origin) if origin else None, self.total):
            if counts is not None:
                counts.dropped[reason] = counts.dropped.get(reason, 0) + 1

    def parked(self, origin: str) -> None:
        self.of(origin).parked += 1
        self.total.parked += 1

    def released(self, origin: str) -> None:
        self.of(origin).released += 1
        self.total.released += 1

    def fetched(self, origin: str, status: str) -> None:
        counts = self.of(origin)
        counts.fetches += 1
        counts.status = status
        self.total.fetches += 1

    def reused(self, origin: str, status: str) -> None:
        """A policy adopted without a fetch here (another crawler's, or the shared store's)."""
        counts = self.of(origin)
        counts.reused += 1
        counts.status = status
        self.total.reused += 1

    def subrequest(self, origin: str | None, aborted: str | None) -> None:
        """A browser sub-request allowed (``aborted`` None) or aborted for a reason."""
        for counts in (self.of(origin) if origin else None, self.total):
            if counts is None:
                continue
            if aborted is None:
                counts.browser_allowed += 1
            else:
                counts.browser_aborted[aborted] = counts.browser_aborted.get(aborted, 0) + 1

    def use_refused(self, origin: str, use: str) -> None:
        """A judged request robots.txt refuses for ``use`` (downloaded or not)."""
        for counts in (self.of(origin), self.total):
            counts.uses_refused[use] = counts.uses_refused.get(use, 0) + 1

    def page_paused(self, origin: str, cause: str) -> None:
        """An origin paused for what a page said (``cause``: rate-limited, ...)."""
        for counts in (self.of(origin), self.total):
            counts.page_pauses[cause] = counts.page_pauses.get(cause, 0) + 1

    def wall(self, origin: str, said: str) -> None:
        """A licence or payment wall met at ``origin`` (``said``: what it asked)."""
        self.total.walls += 1
        counts = self.of(origin)
        counts.walls += 1
        counts.wall = said

    def crawl_delay(self, origin: str, delay: float | None) -> None:
        self.of(origin).crawl_delay = delay

    def delay_waited(self, seconds: float) -> None:
        """A request waited ``seconds`` for its send time under the cluster's Crawl-delay."""
        self.delay_waits += 1
        self.delay_waited_s += seconds

    def requeued_dead(self, n: int) -> None:
        self.requeued_from_dead += n

    def item_dropped(self, reason: str) -> None:
        """An item a page's callback yielded, dropped for what the page says."""
        self.items_dropped[reason] = self.items_dropped.get(reason, 0) + 1

    def media_dropped(self, reason: str) -> None:
        """A media pipeline's download failed for what its own response says."""
        self.media_dropped_by[reason] = self.media_dropped_by.get(reason, 0) + 1


def _reasons(dropped: dict[str, int]) -> str:
    return ", ".join(f"{r} {n}" for r, n in sorted(dropped.items(), key=lambda x: -x[1])) or "-"


def report_lines(counts: CrawlCounts, top: int = TOP, who: str = "") -> list[str]:
    """The summary: a totals line, then the ``top`` origins by requests, as a table.

    ``who`` (``spider 'shop' as 'shopbot'``) ends the totals line, so the
    reports of crawlers sharing a process can be told apart.
    """
    t = counts.total
    lines = [
        f"scrapy-rep report: {counts.seen} origins, {t.requests} requests: "
        f"{t.downloaded} downloaded, {t.dropped_total} dropped ({_reasons(t.dropped)}), "
        f"{t.parked} parked, {t.released} released; {t.fetches} robots.txt fetches, "
        f"{t.reused} reused" + (f" ({who})" if who else "")
    ]
    items = sum(counts.items_dropped.values())
    media = sum(counts.media_dropped_by.values())
    if items or media:
        said = [f"{items} items dropped ({_reasons(counts.items_dropped)})"] if items else []
        if media:
            said.append(f"{media} media files failed ({_reasons(counts.media_dropped_by)})")
        lines.append(f"  for what pages said: {'; '.join(said)}")
    browser = t.browser_allowed + sum(t.browser_aborted.values())
    if browser:
        lines.append(
            f"  browser sub-requests: {browser}: {t.browser_allowed} allowed, "
            f"{browser - t.browser_allowed} aborted ({_reasons(t.browser_aborted)})"
        )
    if counts.delay_waits or counts.requeued_from_dead:
        lines.append(
            f"  cluster: {counts.delay_waits} waits for the shared Crawl-delay "
            f"({counts.delay_waited_s:.1f} s in all), {counts.requeued_from_dead} held requests "
            "of dead workers requeued"
        )
    ranked = [
        (printable(origin), c)  # a redirect's host can carry ESC, BEL, RLO, ...
        for origin, c in sorted(counts.origins.items(), key=lambda item: -item[1].requests)[
            : max(0, top)
        ]
    ]
    if not ranked:
        return lines + _sections(counts, top)
    width = max(len("origin"), *(len(origin) for origin, _ in ranked))
    lines.append(
        f"  {'origin':<{width}}  {'status':<11} {'fetch':>5} {'down':>5} {'drop':>5} "
        f"{'park':>5} {'rel':>5} {'delay':>5}  dropped by reason"
    )
    for origin, c in ranked:
        delay = f"{c.crawl_delay:g}" if c.crawl_delay else "-"
        lines.append(
            f"  {origin:<{width}}  {c.status:<11} {c.fetches:>5} {c.downloaded:>5} "
            f"{c.dropped_total:>5} {c.parked:>5} {c.released:>5} {delay:>5}  {_reasons(c.dropped)}"
        )
    hidden = counts.seen - len(ranked)
    if hidden > 0:
        lines.append(f"  ... and {hidden} more origins (in the totals above)")
    return lines + _sections(counts, top)


def _page_lines(counts: CrawlCounts, top: int) -> list[str]:
    """Per origin, its pauses for what its pages said (429, 503, 403s); none if none."""
    if not counts.total.page_pauses:
        return []
    lines = [f"  pauses for what pages said: {_reasons(counts.total.page_pauses)}"]
    ranked = sorted(
        ((origin, c.page_pauses) for origin, c in counts.origins.items() if c.page_pauses),
        key=lambda item: -sum(item[1].values()),
    )[: max(0, top)]
    width = max(len("pauses: origin"), *(len(origin) for origin, _ in ranked))
    lines.append(f"  {'pauses: origin':<{width}}  paused for")
    for origin, pauses in ranked:
        lines.append(f"  {origin:<{width}}  {_reasons(pauses)}")
    return lines


def _walls(counts: CrawlCounts, top: int) -> list[str]:
    """The origins behind licence or payment walls, most walls first; none if none."""
    if not counts.total.walls:
        return []
    ranked = sorted(
        ((printable(origin), c) for origin, c in counts.origins.items() if c.walls),
        key=lambda item: -item[1].walls,
    )[: max(0, top)]
    lines = [f"  licence and payment walls: {counts.total.walls} responses"]
    if ranked:
        width = max(len("walls: origin"), *(len(origin) for origin, _ in ranked))
        lines.append(f"  {'walls: origin':<{width}}  {'walls':>5}  the last asked")
        lines.extend(f"  {o:<{width}}  {c.walls:>5}  {printable(c.wall)}" for o, c in ranked)
    return lines


def _use_lines(counts: CrawlCounts, top: int) -> list[str]:
    """Per origin, the uses its robots.txt refused and for how many requests; none if none."""
    if not counts.total.uses_refused:
        return []
    lines = [f"  uses refused by robots.txt: {_reasons(counts.total.uses_refused)} (requests)"]
    ranked = sorted(
        ((origin, c.uses_refused) for origin, c in counts.origins.items() if c.uses_refused),
        key=lambda item: -sum(item[1].values()),
    )[: max(0, top)]
    if not ranked:
        return lines
    width = max(len("uses: origin"), *(len(origin) for origin, _ in ranked))
    lines.append(f"  {'uses: origin':<{width}}  refused for")
    for origin, refused in ranked:
        lines.append(f"  {origin:<{width}}  {_reasons(refused)}")
    return lines


def _sections(counts: CrawlCounts, top: int) -> list[str]:
    """The sections below the origins' table: renders, uses, pages, walls."""
    return (
        _browser_lines(counts, top)
        + _use_lines(counts, top)
        + _page_lines(counts, top)
        + _walls(counts, top)
    )


def _browser_lines(counts: CrawlCounts, top: int) -> list[str]:
    """Browser sub-requests per origin, the ``top`` origins by count; none without a browser."""
    ranked = sorted(
        (
            (origin, c.browser_allowed, c.browser_aborted)
            for origin, c in counts.origins.items()
            if c.browser_allowed or c.browser_aborted
        ),
        key=lambda item: -(item[1] + sum(item[2].values())),
    )[: max(0, top)]
    if not ranked:
        return []
    width = max(len("browser: origin"), *(len(origin) for origin, _, _ in ranked))
    lines = [f"  {'browser: origin':<{width}}  {'allow':>5} {'abort':>5}  aborted by reason"]
    for origin, allowed, aborted in ranked:
        lines.append(
            f"  {origin:<{width}}  {allowed:>5} {sum(aborted.values()):>5}  {_reasons(aborted)}"
        )
    return lines

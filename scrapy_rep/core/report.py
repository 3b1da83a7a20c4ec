"""Per-origin counters kept during a crawl, and the summary logged at spider close.

Bounded like the policy cache (the least recently used origins are folded away) while
the totals stay exact, so a crawl of millions of origins keeps a small report.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from operator import attrgetter
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
        return asdict(self)


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
            key = hash(origin)  # kept by the str: no cost again
            if key in self._folded:
                self._folded.remove(key)
            else:
                self.seen += 1
            while len(self.origins) > self.max_origins:
                folded, _ = self.origins.popitem(last=False)
                self._folded.add(hash(folded))
                self.evicted += 1
        else:
            self.origins.move_to_end(origin)
        return counts

    def add(self, origin: str | None, name: str, key: str | None = None) -> None:
        """One more ``name`` (of ``key``, in a count by key) at ``origin`` (None: only in the
        totals) and in the totals."""
        for counts in (self.total,) if origin is None else (self.of(origin), self.total):
            if key is None:
                setattr(counts, name, getattr(counts, name) + 1)
            else:
                tally = getattr(counts, name)
                tally[key] = tally.get(key, 0) + 1

    def downloaded(self, origin: str) -> None:  # once a request: spelt out (add: +0.2 µs)
        self.of(origin).downloaded += 1
        self.total.downloaded += 1

    def undownloaded(self, origin: str) -> None:
        """A download counted, then overruled (a drop counts instead)."""
        for counts in (self.of(origin), self.total):
            counts.downloaded = max(0, counts.downloaded - 1)

    def dropped(self, origin: str | None, reason: str) -> None:
        for counts in (self.of(origin), self.total) if origin else (self.total,):
            counts.dropped[reason] = counts.dropped.get(reason, 0) + 1

    def fetched(self, origin: str, status: str, *, reused: bool = False) -> None:
        """A new policy: fetched here, or ``reused`` (another crawler's, the shared store's)."""
        self.add(origin, "reused" if reused else "fetches")
        self.of(origin).status = status

    def wall(self, origin: str, said: str) -> None:
        """A licence or payment wall met at ``origin`` (``said``: what it asked)."""
        self.add(origin, "walls")
        self.of(origin).wall = said

    def crawl_delay(self, origin: str, delay: float | None) -> None:
        self.of(origin).crawl_delay = delay

    def delay_waited(self, seconds: float) -> None:
        """A request waited ``seconds`` for its send time under the cluster's Crawl-delay."""
        self.delay_waits += 1
        self.delay_waited_s += seconds

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
    ranked = _top(counts, top, lambda c: c.requests, every=True)
    lines += _table(
        "origin",
        f"{'status':<11} {'fetch':>5} {'down':>5} {'drop':>5} {'park':>5} {'rel':>5} "
        f"{'delay':>5}  dropped by reason",
        [
            (
                origin,
                f"{c.status:<11} {c.fetches:>5} {c.downloaded:>5} {c.dropped_total:>5} "
                f"{c.parked:>5} {c.released:>5} {f'{c.crawl_delay:g}' if c.crawl_delay else '-':>5}"
                f"  {_reasons(c.dropped)}",
            )
            for origin, c in ranked
        ],
    )
    hidden = counts.seen - len(ranked)
    if ranked and hidden > 0:
        lines.append(f"  ... and {hidden} more origins (in the totals above)")
    return lines + _sections(counts, top)


def _sections(counts: CrawlCounts, top: int) -> list[str]:
    """The sections below the origins' table: renders, uses, pages, walls; each only if
    it counted something."""
    lines = _table(
        "browser: origin",
        f"{'allow':>5} {'abort':>5}  aborted by reason",
        [
            (
                o,
                f"{c.browser_allowed:>5} {sum(c.browser_aborted.values()):>5}  "
                f"{_reasons(c.browser_aborted)}",
            )
            for o, c in _top(
                counts, top, lambda c: c.browser_allowed + sum(c.browser_aborted.values())
            )
        ],
    )
    lines += _by_key(
        counts, top, "uses_refused", "uses refused by robots.txt: {} (requests)", "uses", "refused"
    )
    lines += _by_key(
        counts, top, "page_pauses", "pauses for what pages said: {}", "pauses", "paused"
    )
    if counts.total.walls:
        lines.append(f"  licence and payment walls: {counts.total.walls} responses")
        lines += _table(
            "walls: origin",
            f"{'walls':>5}  the last asked",
            [
                (o, f"{c.walls:>5}  {printable(c.wall)}")
                for o, c in _top(counts, top, lambda c: c.walls)
            ],
        )
    return lines


def _by_key(counts: CrawlCounts, top: int, name: str, said: str, table: str, why: str) -> list[str]:
    """A count by key (``uses_refused``, ``page_pauses``): its totals, then its ``top``
    origins; none if it counted nothing."""
    tally: Callable[[OriginCounts], dict[str, int]] = attrgetter(name)
    if not tally(counts.total):
        return []
    ranked = _top(counts, top, lambda c: sum(tally(c).values()))
    rows = [(o, _reasons(tally(c))) for o, c in ranked]
    return [
        "  " + said.format(_reasons(tally(counts.total))),
        *_table(f"{table}: origin", f"{why} for", rows),
    ]


def _top(
    counts: CrawlCounts, top: int, weight: Callable[[OriginCounts], int], every: bool = False
) -> list[tuple[str, OriginCounts]]:
    """The ``top`` origins by ``weight``, heaviest first (``every``: those weighing 0 too),
    shown printable (a redirect's host can carry ESC, BEL, RLO, ...)."""
    ranked = sorted(
        ((origin, c) for origin, c in counts.origins.items() if every or weight(c)),
        key=lambda item: -weight(item[1]),
    )
    return [(printable(origin), c) for origin, c in ranked[: max(0, top)]]


def _table(name: str, head: str, rows: list[tuple[str, str]]) -> list[str]:
    """A table of origins: its header (``name`` over the origins), then a line a row;
    none without rows."""
    if not rows:
        return []
    width = max(len(name), *(len(origin) for origin, _ in rows))
    return [f"  {origin:<{width}}  {columns}" for origin, columns in [(name, head), *rows]]

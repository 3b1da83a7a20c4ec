"""The one pacing of sends: ``max(Crawl-delay, learnt pace)`` between an origin's sends.

Each send of a delayed or paced origin reserves its moment under the origin's one key, in
memory (:class:`~scrapy_rep.runtime.store.pacing.LocalPacing`) or for a cluster in Redis
(:class:`~scrapy_rep.runtime.store.redis_pacing.SharedPacing`), and waits for it in the
downloader. Crawl-delay is also a floor under Scrapy's download-slot delay, put back after
AutoThrottle rewrites it, in a slot of the origin's own (:func:`delay_slot`): the only code
touching ``downloader.slots``. The story: docs/status.md and docs/distributed.md.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.resolver import dnscache
from scrapy.utils.httpobj import urlparse_cached

from scrapy_rep.core.pace import NOT_SPACED, Spacing
from scrapy_rep.core.policy import Policy
from scrapy_rep.core.recent import Recent
from scrapy_rep.crawl import compat
from scrapy_rep.crawl.telemetry import Telemetry
from scrapy_rep.runtime.clock import sleep
from scrapy_rep.runtime.logs import Outage
from scrapy_rep.runtime.settings import RepSettings
from scrapy_rep.runtime.store.pacing import LocalPacing

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from scrapy_rep.runtime.store.redis_pacing import SharedPacing

logger = logging.getLogger(__name__)

#: added to a shared Crawl-delay: each worker's request leaves a little after its moment
SEND_MARGIN = 0.25
#: a request woken this late reserves again (sent now, it lands in the next one's gap)
LATE = SEND_MARGIN / 2
#: how many times a late request reserves again before it goes anyway
LATE_RETRIES = 3
#: the download slots a delayed origin's requests are sent in start with this
SLOT_PREFIX = "rep-delay:"


def delay_slot(origin: str) -> str:
    """The download slot of a delayed origin: its own, paced by its own Crawl-delay only."""
    return SLOT_PREFIX + origin


@dataclass(frozen=True, slots=True)
class Turn:
    """A send's reserved moment: :class:`~scrapy_rep.runtime.store.pacing.Reserved`'s
    ``others`` and ``told``, and the gap the cluster keeps that this worker ``joined``
    (0: none)."""

    others: tuple[float, ...] = ()
    joined: float = 0.0
    told: int = 0


def _named_by_user(request: Request) -> bool:
    """Whether the request's ``download_slot`` is its own choice, not the host's, IP's or a
    delayed origin's slot Scrapy wrote there (a retry or a redirect carries it over)."""
    named = request.meta.get("download_slot")
    if named is None or (isinstance(named, str) and named.startswith(SLOT_PREFIX)):
        return False
    host = urlparse_cached(request).hostname or ""
    return named not in (host, dnscache.get(host, host))


class CrawlDelay:
    """Keeps each download slot at least as slow as its origins' Crawl-delay, and each
    origin's sends ``max(Crawl-delay, learnt pace)`` apart."""

    def __init__(
        self,
        crawler: Crawler,
        cap: float,
        telemetry: Telemetry,
        asked_by: Callable[[Policy], float | None] | None,
        pacing: SharedPacing | None = None,
        *,
        remember: int = 1_000_000,
    ) -> None:
        """``asked_by``: the delay a policy asks for (None: Crawl-delay is not honoured,
        only a learnt pace is kept); ``pacing``: the cluster's send times."""
        self.crawler = crawler
        self.clock = RepSettings.of(crawler).clock  # waits for send times
        self.cap = cap
        self.telemetry = telemetry  # the one sink: stats and the close report
        #: the delay a policy's file asks of the crawl's token; read once per body
        self.asked_by = asked_by
        self.user_delay = float(crawler.settings.getfloat("DOWNLOAD_DELAY"))
        self._floors: dict[str, float] = {}  # download slot -> floor
        #: origin -> (digest, delay applied), for as many origins as the policy cache holds
        self._known: Recent[str, tuple[str | None, float | None]] = Recent(remember)
        #: the cluster's send times, with the shared store; and this worker's own
        self.pacing = pacing
        self.local = LocalPacing(self.clock.now, remember)
        self._turns: dict[str, asyncio.Lock] = {}  # key -> this worker's turn to reserve
        self._queued: dict[str, int] = {}  # key -> requests waiting for or holding a turn
        self._outage = Outage(
            logger,
            "scrapy-rep: the shared Crawl-delay failed (%(error)s)",
            "each worker paces its own sends meanwhile",
            "scrapy-rep: the shared Crawl-delay answers again",
        )

    def keep(
        self,
        request: Request,
        origin: str,
        policy: Policy,
        spacing: Spacing = NOT_SPACED,
    ) -> Coroutine[Any, Any, Turn] | None:
        """Before ``request`` is downloaded: a coroutine waiting for its send's moment
        (``spacing``: what the origin's learnt pace asks), or None (an unpaced origin, or a
        worker alone whose moment is now)."""
        delay = self._delay(origin, policy) if self.asked_by is not None else None
        key = self._apply(request, origin, delay) if delay else None
        asked = 0.0  # what the site and the slot ask: never stepped down
        if delay or spacing.gap:
            engine = self.crawler.engine
            assert engine is not None
            if key is None:
                key = str(engine.downloader.get_slot_key(request))
            # the slot's own delay (AutoThrottle's, when slower) is reserved too: else the
            # slot holds the request past its moment, into the next one's
            slot = engine.downloader.slots.get(key)
            asked = max(self.user_delay, float(slot.delay) if slot is not None else 0.0)
            if delay:  # a cluster keeps a site's delay as the site sees it: with a margin
                asked = max(delay, asked) + (SEND_MARGIN if self.pacing else 0.0)
        gap = max(spacing.gap, asked)
        turn = delay_slot(origin)  # the origin's, not its host's or IP's: never a neighbour's
        # asked once: a pace the cluster learns later comes with its pause
        pacing = self.pacing
        join = spacing.join and not spacing.gap and pacing is not None and pacing.first(turn)
        if not gap and not join:
            return None
        if pacing is None and turn not in self._queued and self.local.free(turn):
            self.local.reserve(turn, gap)
            return None
        floor = max(spacing.floor, asked)
        return self._pace(turn, replace(spacing, gap=gap, join=join, floor=floor))

    def reserving(self, origin: str) -> int:
        """How many of ``origin``'s requests wait for their moment (or their turn to ask)."""
        return self._queued.get(delay_slot(origin), 0)

    def _delay(self, origin: str, policy: Policy) -> float | None:
        """The Crawl-delay applied to ``origin`` under ``policy``: capped, decided once per
        body, for the ``remember`` origins decided last."""
        known = self._known
        entry = known.get(origin)
        if entry is not None and entry[0] == policy.digest:
            return entry[1]
        assert self.asked_by is not None
        delay = self.asked_by(policy)
        if delay is not None and delay > self.cap:
            self.telemetry.crawl_delay_capped(origin, delay, self.cap)
            delay = self.cap
        known.put(origin, (policy.digest, delay))  # the one decided longest ago goes
        self.telemetry.counts.crawl_delay(origin, delay)
        return delay

    async def _pace(self, key: str, spacing: Spacing) -> Turn:
        """Wait for this request's send time under ``key``, reserved for the whole cluster
        (or for this worker alone, without one or while its store fails)."""
        gap = spacing.gap
        turn = self._turns.setdefault(key, asyncio.Lock())
        self._queued[key] = self._queued.get(key, 0) + 1
        shared = self.pacing
        try:
            async with turn:
                for _ in range(1 + LATE_RETRIES):
                    if shared is None:
                        reserved = self.local.reserve(key, gap)
                    else:
                        try:
                            reserved = await shared.reserve_spaced(key, spacing)
                        except Exception as exc:  # each worker paces itself meanwhile
                            self._outage.failed(exc)
                            reserved = self.local.reserve(key, gap)
                        else:
                            self._outage.answered()
                            if reserved.wait > 0:
                                self.telemetry.delay_waited(reserved.wait)
                    wait = reserved.wait
                    if wait <= 0:
                        break
                    due = self.clock.now() + wait
                    await sleep(self.clock, wait)
                    if self.clock.now() - due <= LATE:
                        break
                joined = reserved.gap if reserved.gap > gap else 0.0
                return Turn(reserved.others, joined, reserved.told)
        finally:
            self._queued[key] -= 1
            if not self._queued[key]:
                del self._queued[key], self._turns[key]

    def _apply(self, request: Request, origin: str, delay: float) -> str:
        """Put the floor under the slot ``request`` will be downloaded in; the slot's key."""
        engine = self.crawler.engine
        assert engine is not None
        downloader = engine.downloader
        if not _named_by_user(request):
            # not the host's or the IP's slot, which other origins share
            request.meta["download_slot"] = delay_slot(origin)
        key = str(downloader.get_slot_key(request))
        # requests naming one slot themselves share it: the largest Crawl-delay among them wins
        floor = max(delay, self.user_delay, self._floors.get(key, 0.0))
        if self._floors.get(key) == floor:
            return key
        if not self._floors:  # listen only once there is a floor to keep (~9 µs a response)
            self.crawler.signals.connect(self._keep_floor, signal=signals.response_downloaded)
        self._floors[key] = floor
        self.telemetry.inc("rep/crawl_delay/applied")
        slot_settings = downloader.per_slot_settings.setdefault(key, {})
        slot_settings["delay"] = max(float(slot_settings.get("delay", 0)), floor)
        compat.no_jitter_slot_settings(slot_settings)
        slot = downloader.slots.get(key)
        if slot is not None:
            slot.delay = max(slot.delay, floor)
            compat.no_jitter_slot(slot)
        return key

    def _keep_floor(self, response: Response, request: Request, spider: Any = None) -> None:
        """Re-apply the floor after AutoThrottle (which adjusts on the same signal)."""
        engine = self.crawler.engine
        key = request.meta.get("download_slot")
        if engine is None or not isinstance(key, str):
            return
        floor = self._floors.get(key)
        slot = engine.downloader.slots.get(key) if floor is not None else None
        if slot is not None and floor is not None and slot.delay < floor:
            slot.delay = floor

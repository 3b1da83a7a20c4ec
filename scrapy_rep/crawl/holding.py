"""The Scrapy side of :class:`~scrapy_rep.core.gate.OriginGate`: where held requests wait.

The gate decides; this module parks requests in ``request_scheduled`` before the
scheduler sees them, keeps one timer per held origin, gives them back to the engine (or
up, past ``REP_PARK_TIMEOUT``), keeps the spider open while anything is held, and ends
or hands over what is held at close. A closing engine is handed nothing: it would be lost.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.exceptions import DontCloseSpider

from scrapy_rep.core.decision import withheld
from scrapy_rep.core.gate import Effects, OriginGate
from scrapy_rep.core.origin import origin_or_none
from scrapy_rep.core.parking import Held
from scrapy_rep.core.pushback import REASONS as PUSHBACK_REASONS
from scrapy_rep.crawl import compat, oneshot
from scrapy_rep.crawl import meta as M
from scrapy_rep.crawl.exceptions import ParkedRequest, RepIgnoreRequest
from scrapy_rep.crawl.telemetry import Telemetry
from scrapy_rep.robotstxt.text import printable
from scrapy_rep.runtime.clock import Clock, Timer
from scrapy_rep.runtime.resolver import Fetch, Resolver

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_rep.crawl.handover import Handover
    from scrapy_rep.crawl.held_records import HeldRecords

logger = logging.getLogger(__name__)


class Holding:
    """Parks, releases, gives up and, at close, ends the requests the gate holds."""

    def __init__(
        self,
        crawler: Crawler,
        gate: OriginGate[Request],
        resolver: Resolver,
        telemetry: Telemetry,
        fetch: Fetch,
        *,
        clock: Clock,
        token: str,
    ) -> None:
        self.crawler = crawler
        self.gate = gate
        self.resolver = resolver
        self.telemetry = telemetry
        self.clock = clock.now
        self.timers = clock  # a test's clock moves them
        self.token = token
        #: where held requests go at close (JOBDIR, a shared scrapy-redis queue): filled by
        #: ``components/handover.py``; None: they end at close
        self.handover: Handover | None = None
        #: held requests recorded in the shared queue's Redis (set once the spider is open)
        self.records: HeldRecords | None = None
        #: one timer per held origin
        self.wakes = Wakes(gate, resolver, fetch, clock)
        #: the one park-expiry timer, and when it is due (the earliest give-up time)
        self._expiry: tuple[Timer, float] | None = None
        self._listening = False  # to request_scheduled: see listen
        #: what the idle line said last, and when: a settled state is said once
        self._said: tuple[int, tuple[str, ...], int, int | None] | None = None
        self._said_at = -IDLE_LINE_EVERY
        self.closed = False

    def open(self) -> None:
        """The spider opened: what the last run handed over comes back to be judged."""
        if self.handover is not None:
            self.records = self.handover.open()

    def close_records(self) -> Awaitable[None] | None:
        return self.records.close() if self.records is not None else None

    def listen(self, on: bool) -> None:
        """Hear ``request_scheduled`` only while something may have to be parked: a receiver
        costs ~10 µs a request, a tenth of a lean crawl's CPU. A request unheard is judged
        in the downloader and handed back, which listens again."""
        if on and not self._listening:
            self.crawler.signals.connect(self.on_scheduled, signal=signals.request_scheduled)
        elif not on and self._listening:
            self.crawler.signals.disconnect(self.on_scheduled, signal=signals.request_scheduled)
        self._listening = on

    def on_scheduled(self, request: Request, spider: Any = None) -> None:
        """Park requests that cannot be judged now, before the scheduler takes them."""
        meta = request.meta
        if meta.get(M.DONT_OBEY) or meta.get(M.ROBOTS_REQUEST) or M.DROP in meta:
            return  # a request on its way to be dropped is dropped in the downloader
        handed_back = meta.pop(M.PARK, None)
        first = meta.pop(M.PARK_FIRST, False)
        origin = origin_or_none(request.url)
        if origin is None:
            return
        now = self.clock()
        reason = self.gate.hold_reason(
            origin,
            handed_back,
            self.resolver.current(origin),
            self.resolver.pending_since(origin),
            now,
        )
        if reason is None:
            return
        if handed_back is None and self._seen_before(request):
            return  # a duplicate: the scheduler's dupefilter drops it, as it would unparked
        since = meta.setdefault(M.PARKED_AT, now)
        parked = self.gate.park(origin, request, since, reason, first=first)
        if parked.displaced is not None:  # an origin holding more than its share gave way
            self._rejudge(parked.displaced, drop="park-overflow")
        if parked:
            pause = self.gate.held_by(origin, reason)
            self.telemetry.parked(origin, request.url, reason, pause)
            if self.records is not None:
                self.records.parked(request, origin, reason, self.resolver.current(origin))
            if reason not in PUSHBACK_REASONS:  # a page's pause or pace sets the timer itself
                self.wakes.plan(origin)
            self._plan_expiry(since + self.gate.park_timeout)
            raise ParkedRequest(reason)
        # the scheduler takes it (its dupefilter has seen it) and the downloader drops it
        meta[M.DROP] = "park-overflow"
        request.dont_filter = True

    def _seen_before(self, request: Request) -> bool:
        """Ask the scheduler's dupefilter before parking: released requests skip it."""
        dupefilter = getattr(compat.scheduler_of(self.crawler.engine), "df", None)
        if request.dont_filter or dupefilter is None:
            return False
        return bool(dupefilter.request_seen(request))

    def to_parking(self, request: Request, reason: str, *, refused: bool = False) -> Request:
        """From the downloader: give the request back to the engine, to be parked here (not
        filtered again: the dupefilter has seen it). ``refused``: its site refused it (429,
        503), and it is the first of its origin to go again: the retry the pause was for."""
        request = request.replace(dont_filter=True)
        request.meta[M.PARK] = reason
        if refused:
            request.meta[M.PARK_FIRST] = True
        self.listen(True)  # the engine schedules it next: be there to park it
        return request

    def drop_held(
        self, origin: str, request: Request, reason: str, detail: str = "", *, say: bool = False
    ) -> None:
        """In the downloader: drop a held request so its errback hears why (``say``: on
        stderr too, for a one-shot command)."""
        record = withheld(origin, self.token, request.url, self.resolver.current(origin), reason)
        if detail:
            record["detail"] = detail
        self.telemetry.answered_again(origin, request)
        request.meta[M.DECISION] = record
        self.telemetry.final(origin, record)
        if say:
            oneshot.say(record)
        raise RepIgnoreRequest(record)

    def _plan_expiry(self, due: float) -> None:
        """Give up what is parked longer than REP_PARK_TIMEOUT at ``due`` (one timer in all)."""
        if self._expiry is not None:
            if self._expiry[1] <= due:
                return
            self._expiry[0].cancel()
        # parked *longer* than the timeout: look a moment after the due instant
        delay = max(due - self.clock(), EXPIRY_STEP)
        self._expiry = (self.timers.call_later(delay, self._expire), due)

    def _expire(self) -> None:
        """The earliest give-up time came: drop what waited too long; plan the next."""
        self._expiry = None
        if self.closed:
            return
        for held in self.gate.expire(self.clock()):
            self._rejudge(held, drop="park-expired")
        due = self.gate.next_expiry()
        if due is not None:
            self._plan_expiry(due)

    def release(self, origin: str, count: int | None, drop: str = "") -> int:
        """Up to ``count`` (None: all) of ``origin``'s held requests back to be judged (or
        dropped for ``drop``); how many went."""
        taken = self.gate.release_some(origin, count)
        for held in taken:
            self._rejudge(held, drop=drop)
        self.listen(self.gate.watching)
        return len(taken)

    def give_up(self, origin: str, reason: str) -> int:
        return self.release(origin, None, drop=reason)

    def carry_out(self, origin: str, effects: Effects[Request], *, released: bool) -> None:
        if effects.wake_at is not None:
            self.wakes.at(origin, effects.wake_at)
        for held in effects.release:
            self._rejudge(held, released=released)
        self.listen(self.gate.watching)

    def _rejudge(self, held: Held[Request], *, released: bool = True, drop: str = "") -> None:
        """Hand a held request back to the engine, to be judged (or dropped: ``drop``)."""
        if closing(self.crawler):
            self._end(held)
            return
        request = held.item
        if self.records is not None:
            self.records.left(request)
        if drop:
            request.meta[M.DROP] = drop  # dropped in the downloader, where its errback hears it
        elif released:
            self.telemetry.released(held.origin, request.url, held.reason)
        engine = self.crawler.engine
        assert engine is not None
        engine.crawl(request.replace(dont_filter=True))  # the dupefilter has seen it already

    def _end(self, held: Held[Request], reason: str = "spider-closed") -> None:
        """A held request the engine can no longer take: its final answer, with a reason."""
        policy = self.resolver.current(held.origin)
        if reason == "spider-closed" and held.reason in PUSHBACK_REASONS:
            reason = held.reason  # why it was never sent: what the page said
        record = withheld(held.origin, self.token, held.item.url, policy, reason)
        held.item.meta[M.DECISION] = record
        self.telemetry.final(held.origin, record)

    def _say_idle(self) -> None:
        """The engine is idle but for held requests: say so, once for each settled state (a
        state changing fast, origins given up one by one, is said once it settles)."""
        waiting = self.gate.waiting(self.resolver.current, self.resolver.config)
        if waiting is None:
            return
        now = self.clock()
        what, until = self._waiting_for(waiting.origins, now)
        said = (waiting.held, waiting.origins, round(waiting.given_up_by), until)
        if said == self._said or now < self._said_at + IDLE_LINE_EVERY:
            return
        self._said, self._said_at = said, now
        shown = ", ".join(printable(o) for o in waiting.origins[:SHOWN_ORIGINS])
        more = len(waiting.origins) - SHOWN_ORIGINS
        if more > 0:
            shown += f" and {more} more"
        logger.info(
            "scrapy-rep: the spider is idle but for %(held)d held requests of %(n)d origins "
            "(%(origins)s), waiting for %(what)s; all are given up by %(when)s at the latest",
            {
                "held": waiting.held,
                "n": len(waiting.origins),
                "origins": shown,
                "what": what,
                "when": when(waiting.given_up_by, now),
            },
        )

    def _waiting_for(self, origins: tuple[str, ...], now: float) -> tuple[str, int | None]:
        """What the held requests wait for, in words (the page's pause ending last, their
        robots.txt, or both), and that pause's end (None: no page's pause)."""
        pauses = [state for origin in origins if (state := self.gate.pause(origin, now))]
        if not pauses:
            return "their robots.txt", None
        last = max(pauses, key=lambda state: state.until)
        what = (
            f"the pause a page asked for ({last.cause}: HTTP {last.status} to "
            f"{printable(last.url)}, Retry-After: {last.hint}) until {when(last.until, now)}"
        )
        if len(pauses) < len(origins):
            what += ", and for their robots.txt"
        return what, round(last.until)

    def on_idle(self, spider: Any = None) -> None:
        self.telemetry.flush()
        now = self.clock()
        for origin in self.gate.origins_without_wake():
            if self.gate.page_hold(origin, now) is None:  # a page's pause sets the timer itself
                self.wakes.plan(origin)
        if len(self.gate):
            self._say_idle()
            raise DontCloseSpider

    def close(self) -> int:
        """End all still held: handed over or dropped; the dropped count."""
        self.closed = True
        self.wakes.stop()
        if self._expiry is not None:
            self._expiry[0].cancel()
            self._expiry = None
        held = self.gate.close()
        if self.handover is not None:
            left = self.handover.take(held)
        else:
            left = [(each, "spider-closed") for each in held]
        for each, reason in left:
            self._end(each, reason)
        return len(left)


class Wakes:
    """One timer per origin, whatever it waits for (a refetch, a page pause's end, a pace);
    when it fires the gate says what is due."""

    def __init__(
        self, gate: OriginGate[Request], resolver: Resolver, fetch: Fetch, clock: Clock
    ) -> None:
        self.gate = gate
        self.resolver = resolver
        self.fetch = fetch
        self.timers = clock
        #: what a page's pause or pace does when the origin's timer finds it due
        self.page: Callable[[str], None] | None = None
        self._timers: dict[str, tuple[Timer, float]] = {}
        self._stopped = False

    def plan(self, origin: str) -> None:
        if self.resolver.pending_since(origin) is not None:
            return
        when = self.gate.wake_due(origin, self.resolver.current(origin), self.timers.now())
        if when is not None:
            self.at(origin, when)

    def at(self, origin: str, when: float) -> None:
        """Look at ``origin`` again at ``when`` at the latest."""
        old = self._timers.get(origin)
        if self._stopped or (old is not None and old[1] <= when):
            return
        if old is not None:
            old[0].cancel()
        delay = max(0.0, when - self.timers.now())
        self._timers[origin] = (self.timers.call_later(delay, self._wake, origin), when)

    def _wake(self, origin: str) -> None:
        self._timers.pop(origin, None)
        due = self.gate.wake(origin, self.timers.now())
        if due.refetch:
            self.resolver.resolve(origin, self.fetch)
        if due.page and self.page is not None:
            self.page(origin)
        if due.again is not None:
            self.at(origin, due.again)

    def stop(self) -> None:
        self._stopped = True
        for timer, _when in self._timers.values():
            timer.cancel()
        self._timers.clear()


#: seconds after its give-up time a request counts as parked longer than REP_PARK_TIMEOUT
EXPIRY_STEP = 0.001
#: origins named in the idle line; the rest are counted
SHOWN_ORIGINS = 3
#: seconds at least between two idle lines (Scrapy's engine is idle every 5 s)
IDLE_LINE_EVERY = 5.0


def when(timestamp: float, now: float) -> str:
    """A time to come, for a log line: ``08:36:05 (in 15 min)``, the date too past 12 h."""
    ahead = max(0.0, timestamp - now)
    shape = "%H:%M:%S" if ahead < 43_200 else "%Y-%m-%d %H:%M:%S"
    span = f"{ahead:.0f} s" if ahead < 120 else f"{ahead / 60:.0f} min"
    if ahead >= 7_200:
        span = f"{ahead / 3600:.0f} h"
    return f"{time.strftime(shape, time.localtime(timestamp))} (in {span})"


def closing(crawler: Crawler) -> bool:
    """Whether the engine is closing the spider (requests given to it now would be lost)."""
    engine = crawler.engine
    slot = compat.engine_slot(engine)
    return engine is None or slot is None or getattr(slot, "closing", None) is not None

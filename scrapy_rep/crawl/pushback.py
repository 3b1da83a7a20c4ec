"""The Scrapy side of :mod:`scrapy_rep.core.pushback`: what pages say while they are crawled.

:class:`PageSignals` (one per crawler, owned by the service) hears each page response
through :class:`PushbackMiddleware` (above Scrapy's ``RetryMiddleware``, so it sees a
429/503 first), asks the pure core whether it pushes back, and carries the answer out
through the gate and parking lot the robots.txt pause uses: the refused request and the
origin's queued ones are held (:func:`_unsend`), the origin's one timer ends the pause, and
its requests go again on the slow start's ramp and pace. A first contact ramps the same
way, its waiting requests unparked. The rules and their constants: docs/status.md ("What
pages say while they are crawled").
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from twisted.python.failure import Failure

from scrapy_rep.core.origin import origin_or_none
from scrapy_rep.core.pushback import (
    BLOCKED,
    GAVE_UP,
    Pause,
    PauseState,
    Pushback,
)
from scrapy_rep.crawl import compat
from scrapy_rep.crawl import meta as M
from scrapy_rep.crawl.exceptions import PushbackHeld
from scrapy_rep.crawl.oneshot import held_detail

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from scrapy_rep.core.gate import OriginGate
    from scrapy_rep.crawl.crawl_delay import Turn
    from scrapy_rep.crawl.holding import Holding
    from scrapy_rep.crawl.telemetry import Telemetry
    from scrapy_rep.runtime.clock import Clock

logger = logging.getLogger(__name__)

#: seconds between two looks at a first contact's waiting requests: a request counted in
#: flight that left the downloader telling nobody is counted back, so none waits for ever
RAMP_RECHECK = 1.0


class InFlight:
    """The requests counted in flight to a pushed-back origin, or one at first contact
    (:meth:`PageSignals.sending`), each counted back once, whatever takes its answer.

    Keyed by the request itself (a redirect's or a retry's copy is another request). A
    download's end (``request_left_downloader``) counts it back, whichever middleware then
    takes its response or error (a redirect, a meta refresh, a wall, an ``IgnoreRequest``);
    the pushback middleware counts back what never reached the network; :meth:`reconcile`
    what left the downloader's middlewares telling nobody.
    """

    def __init__(self, crawler: Crawler, core: Pushback) -> None:
        self.crawler = crawler
        self.core = core
        #: request -> the origin it was counted in
        self.origins: dict[Request, str] = {}
        crawler.signals.connect(self.back, signal=signals.request_left_downloader)

    def sent(self, request: Request, origin: str) -> None:
        self.origins[request] = origin

    def back(self, request: Request, spider: Any = None) -> str | None:
        """The origin ``request`` counted in, counted back once; None: not counted."""
        counted = self.origins.pop(request, None)
        if counted is not None:
            self.core.done(counted)
        return counted

    def reconcile(self) -> None:
        """Count back what is no longer in the downloader (``Downloader.active``)."""
        active = compat.downloading(self.crawler.engine)
        if active is not None:
            for request in [r for r in self.origins if r not in active]:
                self.back(request)

    def clear(self) -> None:
        self.origins.clear()


class PageSignals:
    """Pauses, slow starts and blocks an origin's pages asked for, carried out in Scrapy."""

    def __init__(
        self,
        crawler: Crawler,
        gate: OriginGate[Request],
        holding: Holding,
        telemetry: Telemetry,
        core: Pushback,
        *,
        clock: Clock,
        reserving: Callable[[str], int],
        share: Callable[[str, PauseState], None] | None = None,
        one_shot: str | None = None,
    ) -> None:
        """``core``: the pure side, which ``gate`` asks too; ``reserving``: how many of an
        origin's requests wait for their moment (the Crawl-delay's, the pace's);
        ``share``: called with each pause this worker saw (the shared store)."""
        self.crawler = crawler
        self.core = core
        self.gate = gate
        self.holding = holding
        self.telemetry = telemetry
        self.clock = clock.now
        self.timers = clock
        holding.wakes.page = self._woken  # the origin's timer: its pause's end, its pace
        self.share = share
        self.reserving = reserving
        #: ``scrapy fetch`` and the like: a pushback drops the request, saying why
        self.one_shot = one_shot
        #: the requests counted in flight, until they are back
        self.out = InFlight(crawler, core)
        #: whether PushbackMiddleware hears the answers (else no first contact ramps: nothing
        #: would widen it)
        self.heard = False
        #: origin -> the requests waiting for room in its first contact's ramp, oldest first
        self._waiting: dict[str, list[asyncio.Future[str | None]]] = {}

    # -- a request leaves, a response comes back --------------------------------

    def room(self, origin: str) -> asyncio.Future[str | None] | None:
        """A future to await while ``origin``'s first contact has no room (it says a reason
        to hold the request if the origin paused meanwhile), else None. Asked before a send's
        moment is reserved: a request waiting for room holds no Crawl-delay turn, and one
        waiting for its moment keeps its room (the next reserves none it has no room for;
        in a cluster, it would go unpaced while the first joins the cluster's pace)."""
        core = self.core
        if not (core.contact(origin) if self.heard else origin in core):
            return None
        if self._first_room(origin) == 0 and not self._queued(origin):
            return self._wait(origin)
        return None

    def sending(
        self, request: Request, origin: str, turn: Turn | None = None
    ) -> str | asyncio.Future[str | None] | None:
        """Right before the download: a reason to hold it after all, a future to await
        first (:meth:`room`: taken while it waited for its moment; then its moment comes
        again), else None and it is counted.

        ``turn``: it waited for its reserved moment
        (:meth:`CrawlDelay.keep <scrapy_rep.crawl.crawl_delay.CrawlDelay.keep>`)."""
        core = self.core
        waiting = self.room(origin)
        if waiting is not None or origin not in core:
            return waiting
        now = self.clock()
        if turn is not None:  # what the cluster's pacing said: its pace, the site's bucket
            core.told(origin, turn.joined, turn.told)
        others = turn.others if turn is not None else ()
        reason = self.gate.sending(origin, now, turn=turn is not None, others=others)
        if reason is not None:
            return reason
        self.out.sent(request, origin)
        wait = core.wait(origin, now)
        if wait > 0:  # paced: the next held request goes when its time comes
            self.holding.wakes.at(origin, now + wait)
        return None

    def settled(self, origin: str, tracked: bool = False) -> None:
        """A request of ``origin`` came back, or was dropped before the network: its ramp
        lets the next go (and a first contact's waiting, whose state went as the download's
        end counted it back; ``tracked``: the origin was tracked before this answer, which
        may have ended its ramp and its state: what the ramp held goes)."""
        if tracked or origin in self.core or origin in self._waiting:
            self._ramp(origin)

    def response(self, request: Request, response: Response) -> Request | Response:
        meta = request.meta
        self.out.back(request)
        if meta.get(M.DONT_OBEY) or meta.get(M.ROBOTS_REQUEST):
            return response
        origin = _origin(request)
        if origin is None:
            return response
        status = response.status
        raw = response.headers.get(b"Retry-After") if status >= 400 else None
        headers = {"retry-after": raw.decode("latin-1")} if raw else _NO_HEADERS
        tracked = origin in self.core
        pause = self.core.on_response(
            origin,
            status,
            headers,
            request.url,
            self.clock(),
            linked_from(request),
            meta.get("download_latency"),
        )
        if pause is None:
            self.settled(origin, tracked)
            return response
        self.paused(pause)
        if pause.cause == BLOCKED:
            return response  # the refusal is that URL's answer; the next ones are not sent
        self.telemetry.page_refused(status)
        if self.one_shot is not None:  # nobody at the terminal waits for Retry-After
            policy = self.holding.resolver.current(origin)
            detail = held_detail(
                self.gate, origin, pause.cause, policy, self.clock(), self.one_shot
            )
            self.holding.drop_held(origin, request, pause.cause, detail, say=True)
        if pause.given_up:  # refused for ever: what it holds ends, this request too
            self.holding.give_up(origin, GAVE_UP)
            self.holding.drop_held(origin, request, GAVE_UP)
        return self.holding.to_parking(request, pause.cause, refused=True)

    def wall(self, origin: str, status: int, request: Request) -> bool:
        """A licence or payment wall at ``origin`` (:mod:`scrapy_rep.crawl.walls`): True
        when it is the ``REP_BLOCK_AFTER``-th refusal in a row, and the origin is blocked."""
        pause = self.core.on_wall(origin, status, request.url, self.clock(), linked_from(request))
        if pause is None:
            self.settled(origin)  # its request was counted back: the ramp goes on
            return False
        self.paused(pause)
        return True

    def exception(self, request: Request, exception: BaseException) -> Request | None:
        counted = self.out.back(request)
        if isinstance(exception, PushbackHeld):  # taken out of its slot's queue: held
            origin = _origin(request)
            if exception.reason == GAVE_UP:  # back to the downloader, dropped there
                request.meta[M.DROP] = GAVE_UP
                return request.replace(dont_filter=True)
            if origin is not None:
                self.telemetry.page_refused(None, unsent=True)
            return self.holding.to_parking(request, exception.reason)
        origin = counted or _origin(request)  # counted back when its download ended, maybe
        if origin is not None:
            self.settled(origin)
        return None

    # -- pauses -------------------------------------------------------------------

    def paused(self, pause: Pause, *, shared: bool = False) -> None:
        """An origin paused (here, or at another worker): hold its requests until the end."""
        origin = pause.origin
        if pause.new:
            self.telemetry.paused(origin, pause.state, page=pause, shared=shared)
        if pause.moved and self.share is not None and not shared:  # a later end too
            self.share(origin, pause.state)
        self.holding.wakes.at(origin, pause.until)
        self.holding.listen(True)
        self._wake(origin, pause.cause)  # a first contact's waiting requests: held now
        _unsend(self.crawler, origin, GAVE_UP if pause.given_up else pause.cause)

    def adopt(self, origin: str, state: PauseState) -> bool:
        """A pause another worker saw (from the shared store); True if adopted."""
        if self.holding.closed:
            return False
        pause = self.core.adopt(origin, state, self.clock())
        if pause is not None:
            self.paused(pause, shared=True)
        return pause is not None

    def forgotten(self, origin: str | None) -> None:
        """An operator forgot ``origin`` (None: everything) in the shared store: its page
        pause is lifted here too, its held requests go again (slowly)."""
        if self.holding.closed:
            return
        for lifted, ended in self.core.lift(origin):
            self.telemetry.resumed(lifted, ended)
            self._ramp(lifted)

    def on_idle(self) -> None:
        """The crawl has nothing else to do: a blocked origin's held requests end (``blocked``,
        with their errback) rather than keep it open for hours; a ramp whose requests all
        ended without a response (dropped by robots.txt, say) lets the next ones go; a
        request counted in flight that left the downloader unheard is counted back."""
        self.out.reconcile()
        now = self.clock()
        for origin in self.gate.held_origins():
            if origin not in self.core:
                continue
            state = self.gate.pause(origin, now)
            if state is None:
                self._ramp(origin)
            elif state.cause == BLOCKED:
                self.holding.give_up(origin, BLOCKED)

    def _woken(self, origin: str) -> None:
        """``origin``'s timer found its page pause over, or its pace due: it resumes (if
        paused) and its held requests go as its slow start and pace allow."""
        if self.holding.closed:
            return
        ended = self.core.resume(origin, self.clock())
        if ended is not None:
            self.telemetry.resumed(origin, ended)
        self._ramp(origin)

    def _ramp(self, origin: str) -> None:
        """Let as many held requests go as the slow start has room for."""
        now = self.clock()
        release = self.gate.ramp(origin, now)
        if release.wait > 0:  # paced: the next when its send time comes
            self.holding.wakes.at(origin, now + release.wait)
        elif release.count != 0:
            self.holding.release(origin, release.count)
        self._wake(origin)

    def _first_room(self, origin: str) -> int | None:
        """The room at ``origin``'s first contact, less the requests waiting for their moment
        (None: not at its first contact)."""
        room = self.core.first_room(origin)
        return None if room is None else max(0, room - self.reserving(origin))

    def _queued(self, origin: str) -> bool:
        """Whether a request of ``origin`` counted in flight still waits in a download slot's
        queue: not sent yet (a slot's delay holds it), so not in flight."""
        out = self.out.origins
        return any(out.get(request) == origin for request in compat.queued(self.crawler.engine))

    def _wait(self, origin: str) -> asyncio.Future[str | None]:
        """A future a request of ``origin`` awaits until its first contact has room."""
        waiting = self._waiting.get(origin)
        if waiting is None:
            waiting = self._waiting[origin] = []
            self.timers.call_later(RAMP_RECHECK, self._recheck, origin)
        future: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        waiting.append(future)
        return future

    def _wake(self, origin: str, held: str | None = None, *, everyone: bool = False) -> None:
        """As many of ``origin``'s waiting requests go as its first contact has room for (all
        once it is over, or ``everyone``); ``held``: all are held, for that reason."""
        waiting = self._waiting.get(origin)
        if waiting is None:
            return
        waiting[:] = [future for future in waiting if not future.done()]  # cancelled: gone
        room = None  # a first contact whose state went (nothing in flight) ramps again
        if not (everyone or held) and self.core.contact(origin):
            room = self._first_room(origin)
        going = waiting[:room]
        del waiting[:room]
        if not waiting:
            del self._waiting[origin]
        for future in going:
            future.set_result(held)

    def _recheck(self, origin: str) -> None:
        """While requests wait for ``origin``'s first contact: count back what left unheard."""
        if origin in self._waiting:
            self.out.reconcile()
            self._wake(origin)
            if origin in self._waiting:
                self.timers.call_later(RAMP_RECHECK, self._recheck, origin)

    def close(self) -> None:
        self.out.clear()
        for origin in list(self._waiting):
            self._wake(origin, everyone=True)


_NO_HEADERS: dict[str, str] = {}


def _unsend(crawler: Crawler, origin: str, reason: str) -> None:
    """Requests of ``origin`` judged already and waiting in a download slot: held too.

    Each is failed with :class:`PushbackHeld`, which the middleware turns into
    a hand-back; only requests still queued are taken, never one in flight.
    """
    taken = compat.take_queued(
        crawler.engine,
        lambda request: _origin(request) == origin and not request.meta.get(M.DONT_OBEY),
    )
    for _request, deferred in taken:
        deferred.errback(Failure(PushbackHeld(reason)))  # type: ignore[no-untyped-call]


def _origin(request: Request) -> str | None:
    decision = request.meta.get(M.DECISION)
    if decision is not None:
        found = decision.get("origin")
        if found:
            return str(found)
    return origin_or_none(request.url)


def linked_from(request: Request) -> str | None:
    """The origin of the page that pointed to ``request`` (its ``Referer``); None for a start
    request (no ``Referer``, depth 0); ``""`` for a followed link whose source is unknown (a
    referrer policy withheld it). See :func:`~scrapy_rep.core.pushback.counts_toward_block`."""
    referer = request.headers.get(b"Referer")
    if referer:
        return origin_or_none(referer.decode("latin-1")) or ""
    return "" if request.meta.get("depth") else None

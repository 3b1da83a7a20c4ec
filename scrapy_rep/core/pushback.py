"""What a site says while its pages are crawled: 429, 503, a wall of 403s. Pure.

robots.txt is what a site *wrote*; a page's status is what it *says now*.
:class:`Pushback` hears each page response of an origin (:meth:`Pushback.on_response`)
and answers with a :class:`Pause` when the origin must stop being sent to: a ``pause``
row of the page status table (429, 503) for what ``Retry-After`` says, else the one
back-off (:class:`~scrapy_rep.core.pause.Backoff`); ``block_after`` refusals in a row of a
``block`` row (401, 403) that count (:func:`counts_toward_block`). After a pause, and at
first contact, an origin starts slowly on one ramp; from its first pause its sends are
also spaced (:class:`~scrapy_rep.core.pace.Pace`). The pause is the one record,
:class:`~scrapy_rep.core.pause.PauseState`; the gate asks this class whether to hold a
request, the Scrapy side keeps the timers. The rules and their constants: docs/status.md
("What pages say while they are crawled").
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from scrapy_rep.core.pace import (
    BACK,
    NOT_SPACED,
    RISING,
    SLOWER,
    STEADY,
    Latency,
    Pace,
    SlowStart,
    Spacing,
)
from scrapy_rep.core.pause import BLOCKED as BLOCKED
from scrapy_rep.core.pause import PAGE_CAUSES, Backoff
from scrapy_rep.core.pause import RATE_LIMITED as RATE_LIMITED
from scrapy_rep.core.pause import SERVICE_UNAVAILABLE as SERVICE_UNAVAILABLE
from scrapy_rep.core.pause import PauseState as PauseState
from scrapy_rep.core.policy import retry_after

#: what a row of the page status table does (``wall``: a licence or payment wall,
#: :mod:`scrapy_rep.core.walls`; only a wall status's row, and it stays one)
PAUSE, BLOCK, WALL, OFF = "pause", "block", "wall", "off"
PAGE_ACTIONS = (PAUSE, BLOCK, WALL, OFF)

#: the longest ``Retry-After`` kept as read (seconds; a record stays finite JSON)
MAX_RETRY_AFTER = 1e9

#: origins remembered as having served a page (only their 403s can be a wall); a broad
#: crawl forgets the oldest beyond it, ~100 B each
SERVED_MAX = 100_000

#: origins with a state (paused, ramping or paced); beyond it the oldest quiet one is
#: forgotten: its pace is learnt again if it pushes back again
TRACKED_MAX = 100_000
#: origins looked at, oldest first, for a quiet one to forget beyond :data:`TRACKED_MAX`
#: (those busy go to the back); none quiet among them: the least harm of them goes
FORGET_LOOK = 8

#: a pushback before any healthy answer since the last pause (during the ramp) waits
#: ``Retry-After`` and this much of it again for each pushback in a row before it (1, 1.5,
#: 2, 2.5 times ...): longer, in the site's own terms
HINT_GROWTH = 0.5

#: pushbacks (429/503) in a row with no healthy answer between them after which the origin's
#: held requests are given up (as robots.txt's after 5 failed fetches); the reason they end with
GIVE_UP_AFTER = 5
GAVE_UP = "pushback-gave-up"
#: a row's cause by status (any other ``pause`` row: ``service-unavailable``)
_CAUSE_BY_STATUS = {429: RATE_LIMITED}
#: the reasons of requests held for what a page said (the cause of the pause)
REASONS = PAGE_CAUSES

#: status -> action, the defaults (``REP_PAGE_STATUS_ACTIONS`` overrides single rows).
#: Other 5xx are left to Scrapy's RetryMiddleware.
DEFAULT_PAGE_ACTIONS: Mapping[str, str] = {
    "429": PAUSE,
    "503": PAUSE,
    "401": BLOCK,
    "403": BLOCK,
    "402": WALL,
}


def counts_toward_block(origin: str, linked_from: str | None, wall: bool, served: bool) -> bool:
    """Whether a refusal (a ``block`` row's status, or a licence wall when ``wall``) of a
    URL of ``origin`` counts toward blocking it.

    ``linked_from``: the origin of the page that pointed to the URL (None: a start
    request, asked for by the crawl itself; ``""``: a followed link of unknown source).
    Links of another site never count: three private or paid URLs a directory points to
    are those URLs' answers, not a site refusing the crawler. A 401/403 counts once the
    origin ``served`` a page (it refuses what it gave before: a firewall); a wall counts
    from a start request, or from the origin's own link while it has served no page (a
    page that links to a wall was itself free: the wall covers part of the site).
    """
    if linked_from is None:
        return wall or served
    if linked_from != origin:
        return False
    return not served if wall else served


@dataclass(frozen=True)
class PushbackConfig:
    """The knobs of page-level pushback; see the settings reference."""

    actions: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_PAGE_ACTIONS))
    #: the shortest pause, whatever ``Retry-After`` says (a past date, ``0``)
    floor: float = 1.0
    #: the longest pause (``REP_PAUSE_MAX``)
    pause_max: float = 3_600.0
    #: back-off without ``Retry-After``: start, factor per pushback in a row
    backoff_start: float = 5.0
    backoff_factor: float = 2.0
    #: healthy responses in a row after which the back-off starts over
    reset_after: int = 10
    #: requests in flight at which the slow start ends (the origin's normal concurrency)
    ramp_max: int = 8
    #: 401/403 in a row that stop an origin, and for how long
    block_after: int = 3
    block_pause: float = 6 * 3_600.0

    def action(self, status: int) -> str:
        return self.actions.get(str(status), OFF)

    @property
    def backoff(self) -> Backoff:
        """The pause's back-off: ``backoff_start`` x ``backoff_factor`` ** (n - 1) for the
        n-th pushback in a row without ``Retry-After``, at most ``pause_max``, given up at the
        :data:`GIVE_UP_AFTER`-th; every pause within ``[floor, pause_max]``."""
        return Backoff(
            self.backoff_start, self.backoff_factor, self.pause_max, GIVE_UP_AFTER, self.floor
        )

    def pause_for(self, hint: float | None, level: int) -> float:
        """Seconds a pushback pauses its origin: what ``Retry-After`` said (``hint``), longer
        for each pushback in a row before it (``level``), else the back-off; clamped to
        ``[floor, pause_max]``."""
        backoff = self.backoff
        if hint is None:
            wait = backoff.wait(level)
        elif level > 1:  # again soon after a pause: longer, in the site's own terms
            wait = hint * (1 + HINT_GROWTH * (level - 1))
        else:
            wait = hint
        return backoff.clamp(wait)


@dataclass(frozen=True, slots=True)
class Pause:
    """An origin paused (or blocked) by what a page said: the caller holds its requests."""

    origin: str
    state: PauseState
    #: a block: the statuses, first and last refused URLs (for the one WARNING)
    statuses: tuple[int, ...] = ()
    first_url: str = ""
    last_url: str = ""
    #: a block: how many refusals in a row it took
    refusals: int = 0
    #: a new episode (False: a response in flight when the origin paused, pushing back too)
    new: bool = True
    #: its end was set, or moved later: the cluster's other workers are told
    moved: bool = True
    #: the :data:`GIVE_UP_AFTER`-th pushback in a row (or later): what it holds is given up
    given_up: bool = False

    @property
    def cause(self) -> str:
        return self.state.cause

    @property
    def until(self) -> float:
        return self.state.until


@dataclass(slots=True)
class _Origin:
    """One origin's pushback state (only origins that pushed back, or are ramping)."""

    pause: PauseState | None = None
    #: the cause of the latest pause (held requests of a ramp give it as their reason)
    cause: str = RATE_LIMITED
    level: int = 0
    healthy: int = 0
    #: requests allowed in flight after a pause (core/pace.py)
    ramp: SlowStart = field(default_factory=SlowStart)
    #: the space kept between sends, learnt after the first pause (core/pace.py)
    pace: Pace = field(default_factory=Pace)
    #: healthy answers since the last pause ended
    healthy_since: int = 0
    #: pauses in a row with no healthy answer between them (GIVE_UP_AFTER gives up)
    tries: int = 0
    #: the pause that ended last (its ramp's held requests wait for what it said)
    ended: PauseState | None = None
    inflight: int = 0
    served: bool = False
    refused: list[tuple[int, str]] = field(default_factory=list)
    #: first contact: ramping before any pushback (:meth:`Pushback.contact`)
    first: bool = False


class Pushback:
    """Page-level pauses, back-off, slow start and blocks by origin; one per crawler."""

    def __init__(self, config: PushbackConfig) -> None:
        self.config = config
        #: the table by int status, the rows that do something (read per response)
        self._actions = {int(k): v for k, v in config.actions.items() if k.isdigit() and v != OFF}
        #: oldest first (for forgetting, O(1) at either end)
        self._origins: OrderedDict[str, _Origin] = OrderedDict()
        #: origins that served pages and refused none since (no state kept beyond this)
        #: and how many pages each served before it was tracked (a first pushback's burst)
        #: since when (the first of them)
        self._served: OrderedDict[str, tuple[int, float]] = OrderedDict()
        #: origins' response times (SERVED_MAX of them, the latest heard of)
        self._latency: OrderedDict[str, Latency] = OrderedDict()

    def __contains__(self, origin: object) -> bool:
        return origin in self._origins

    def _serve(self, origin: str, now: float) -> None:
        """Remember that ``origin`` served a page (its 403s may then be a wall)."""
        served = self._served
        served[origin] = (0, now)
        if len(served) > SERVED_MAX:  # a broad crawl: forget the origin heard of longest ago
            served.popitem(last=False)

    def _track(self, origin: str, served: bool) -> _Origin:
        """A new state for ``origin``; at :data:`TRACKED_MAX` one is forgotten first
        (:meth:`_forget_one`): a broad crawl stays bounded."""
        origins = self._origins
        while len(origins) >= TRACKED_MAX:
            self._forget_one()
        state = origins[origin] = _Origin(served=served)
        return state

    def _forget_one(self) -> None:
        """Forget one tracked origin, in O(1): of the :data:`FORGET_LOOK` tracked longest,
        the first quiet one (paced, not paused, nothing in flight); the busy ones looked at
        go to the back. None quiet: the one it harms least to forget, an origin's pace
        (requests in flight) before any pause, else the pause that ends soonest."""
        origins = self._origins
        least: tuple[float, str] | None = None
        for _ in range(min(FORGET_LOOK, len(origins))):
            old, state = origins.popitem(last=False)
            if state.pause is None and not state.inflight:
                return
            origins[old] = state  # busy: to the back
            harm = -math.inf if state.pause is None else state.pause.until
            if least is None or harm < least[0]:
                least = (harm, old)
        if least is not None:
            del origins[least[1]]

    # -- what a response says ------------------------------------------------

    def on_response(
        self,
        origin: str,
        status: int,
        headers: Mapping[str, str],
        url: str,
        now: float,
        linked_from: str | None = None,
        latency: float | None = None,
    ) -> Pause | None:
        """A page response of ``origin``: a new pause if it pushes back, else None.

        ``headers``: lower-cased names (``retry-after`` is read); ``linked_from``: see
        :func:`counts_toward_block`; ``latency``: the seconds it took (a site slowing
        down under the crawl is sent to more slowly, :class:`~scrapy_rep.core.pace.Latency`).
        """
        action = self._actions.get(status, OFF)
        if action == PAUSE:
            return self._pause(origin, status, headers, url, now)
        state = self._origins.get(origin)
        if action == BLOCK:
            return self._refused(origin, state, status, url, now, linked_from)
        said = STEADY
        if latency is not None and status < 500:
            state, said = self._timed(origin, state, latency, now)
        self._healthy(origin, state, status, now, rising=said >= RISING)
        return None

    def _timed(
        self, origin: str, state: _Origin | None, latency: float, now: float
    ) -> tuple[_Origin | None, int]:
        """An answer's latency: the pace eases while the origin slows down, and returns."""
        timings = self._latency
        timing = timings.get(origin)
        if timing is None:
            timing = timings[origin] = Latency()
            if len(timings) > SERVED_MAX:
                timings.popitem(last=False)
        said = timing.heard(latency, now)
        if said >= RISING:
            if state is None:
                state = self._track(origin, origin in self._served)
                state.cause = SERVICE_UNAVAILABLE
            elif state.first:  # slowing at first contact: a pushback's ramp and pace from now
                state.first, state.cause = False, SERVICE_UNAVAILABLE
            # its queue drains: nothing before as long again as this answer took
            state.pace.hold(now + latency)
            if said == SLOWER:
                state.pace.slower(timing.spacing)
            else:
                state.pace.nudge()
        elif said == BACK and state is not None:
            state.pace.back()
        return state, said

    def _pause(
        self, origin: str, status: int, headers: Mapping[str, str], url: str, now: float
    ) -> Pause:
        state = self._origins.get(origin)
        if state is None:
            state = self._track(origin, origin in self._served)
        state.first = False
        ongoing = state.pause is not None and state.pause.until > now
        if not ongoing:  # responses already in flight when it paused add no depth
            # deeper only if refused before any healthy answer since the last pause (during
            # the ramp); a pushback after some is the edge of the site's pace, found
            state.level = state.level + 1 if not state.healthy_since else max(state.level, 1)
            state.tries = state.tries + 1 if not state.healthy_since else 1
            pages, since = self._served.get(origin, (0, now))
            state.pace.pushed_back(now, pages, now - since)
            state.healthy_since = 0
        state.healthy = 0
        state.refused.clear()
        hint = retry_after(headers, now)
        if hint is not None:  # 5,000 digits read as infinity: as long as any pause may be
            hint = min(hint, MAX_RETRY_AFTER)
        # a 429 unsaid: as long as the bucket read from its window takes to fill, if one was
        if hint is None and status == 429 and state.pace.refill:
            wait = self.config.pause_for(state.pace.refill, state.level)
        else:
            wait = self.config.pause_for(hint, state.level)
        until = now + wait
        kept = 0.0 if state.pause is None else state.pause.until  # never shortened later
        moved, until = not ongoing or until > kept, max(until, kept)
        cause = _CAUSE_BY_STATUS.get(status, SERVICE_UNAVAILABLE)
        state.pause = PauseState(
            until, cause, status, url, hint, state.level, now, state.pace.gap, state.pace.stage
        )
        state.cause = cause
        state.ramp.stop()
        given_up = not ongoing and self.config.backoff.gives_up(state.tries)
        return Pause(origin, state.pause, new=not ongoing, moved=moved, given_up=given_up)

    def on_wall(
        self, origin: str, status: int, url: str, now: float, linked_from: str | None = None
    ) -> Pause | None:
        """A licence or payment wall (:mod:`scrapy_rep.core.walls`) at ``origin``: a refusal
        toward a block, as a ``block`` row's status is, but from a start request whether or
        not the origin served a page first (a wall asks the same of every page behind it);
        see :func:`counts_toward_block`. ``block_after`` of them (with 401/403s) in a row
        stop the origin for ``block_pause``; the Pause, else None."""
        state = self._origins.get(origin)
        return self._refused(origin, state, status, url, now, linked_from, wall=True)

    def _refused(
        self,
        origin: str,
        state: _Origin | None,
        status: int,
        url: str,
        now: float,
        linked_from: str | None,
        wall: bool = False,
    ) -> Pause | None:
        if state is not None and state.first:  # the site answers, refusing: the ramp ends,
            state.first = False  # what its refusal rule sees is what a crawl without it sent
            state.ramp.stop(lower=False)
        served = origin in self._served if state is None else state.served
        if not counts_toward_block(origin, linked_from, wall, served):
            return None  # that URL's answer
        if state is None:
            state = self._track(origin, served)
        if state.pause is not None and state.pause.until > now:
            return None  # a refusal in flight when it paused: that URL's answer, no new episode
        state.healthy = 0
        state.refused.append((status, url))
        if len(state.refused) < self.config.block_after:
            return None
        refused = state.refused[:]
        state.refused.clear()
        state.level += 1
        until = now + self.config.block_pause
        state.pause = PauseState(until, BLOCKED, status, url, None, state.level, now)
        state.cause, state.first = BLOCKED, False
        state.ramp.stop(lower=False)
        return Pause(
            origin,
            state.pause,
            tuple(sorted({s for s, _ in refused})),
            refused[0][1],
            refused[-1][1],
            len(refused),
        )

    def _healthy(
        self, origin: str, state: _Origin | None, status: int, now: float, rising: bool = False
    ) -> None:
        if status >= 500:
            return  # left to Scrapy's retry: neither healthy nor a pushback
        # the pages served before any pushback (its burst), answered before the first pause
        # ended (nothing is sent during a pause: an answer then is to a request sent before)
        if state is None or state.first or (state.pause is not None and state.ended is None):
            served = self._served
            if origin not in served:
                self._serve(origin, now)
            pages, since = served[origin]
            served[origin] = (pages + 1, since)
            if state is None:
                return
        state.served = True
        state.refused.clear()
        state.healthy += 1
        state.healthy_since += 1
        state.pace.healthy()
        lifted = state.healthy >= self.config.reset_after  # this pace for a while: grow again
        if lifted:
            state.level = 0
        if rising:  # slower than its baseline: one request in flight, until it is not
            state.ramp.start()
        else:
            state.ramp.healthy(self.config.ramp_max, lifted)
        if state.first:
            if not state.ramp:  # first contact over: nothing to remember
                del self._origins[origin]
        elif (
            not state.ramp
            and not state.level
            and not state.pace
            and state.pause is None
            and not state.inflight
        ):
            del self._origins[origin]  # nothing left to remember
            self._serve(origin, now)

    # -- what the gate asks ---------------------------------------------------

    def contact(self, origin: str) -> bool:
        """A request about to go to ``origin``: whether it is tracked. One heard from less
        than ``ramp_max`` - 1 times (no pushback) is, from now: its first contact ramps as
        after a pause (one request in flight, one more per healthy answer, up to
        ``ramp_max``). Its state goes while nothing is in flight: the healthy answers counted
        for a first pushback's burst (``_served``) say the width to start again from."""
        if origin in self._origins:
            return True
        heard = self._served.get(origin)
        pages = 0 if heard is None else heard[0]  # its healthy answers: the ramp's width so far
        if pages + 1 >= self.config.ramp_max:
            return False
        state = self._track(origin, heard is not None)
        state.first = True
        state.ramp.start(pages + 1)
        return True

    def first_room(self, origin: str) -> int | None:
        """How many more requests of ``origin`` may go now at its first contact (None: it is
        not at first contact: no limit from it)."""
        state = self._origins.get(origin)
        if state is None or not state.first:
            return None
        return state.ramp.room(state.inflight)

    def paused(self, origin: str, now: float) -> PauseState | None:
        """The origin's pause, while it lasts."""
        state = self._origins.get(origin)
        if state is None or state.pause is None or not state.pause.lasts(now):
            return None
        return state.pause

    def hold_reason(self, origin: str, now: float, *, paced: bool = True) -> str | None:
        """Why a request of ``origin`` may not be sent now: paused, its ramp is full, or
        (unless ``paced`` is False: the cluster's pacing gave it its moment) too soon."""
        state = self._origins.get(origin)
        if state is None:
            return None
        if state.pause is not None:  # until it is resumed (the caller's timer at its end)
            return state.pause.cause
        if state.ramp.full(state.inflight) and not state.first:  # first: it waits, unparked
            return state.cause
        if paced and now < state.pace.next_send:
            return state.cause
        return None

    def resume(self, origin: str, now: float) -> PauseState | None:
        """The pause of ``origin`` is over (now or earlier): slow start; the pause that ended."""
        state = self._origins.get(origin)
        if state is None or state.pause is None or state.pause.until > now:
            return None
        ended = state.ended = state.pause
        state.pause = None
        state.ramp.start()
        return ended

    def lift(self, origin: str | None) -> list[tuple[str, PauseState]]:
        """An operator lifted pauses (``scrapy-rep store forget``; None: every origin): each
        is over now, and its origin starts slowly; the pauses lifted, by origin."""
        if origin is None:
            origins = [o for o, state in self._origins.items() if state.pause is not None]
        else:
            origins = [origin]
        lifted = []
        for name in origins:
            state = self._origins.get(name)
            if state is None or state.pause is None:
                continue
            lifted.append((name, state.pause))
            state.pause = None
            state.refused.clear()
            state.ramp.start()
        return lifted

    def said(self, origin: str) -> PauseState | None:
        """The pause holding ``origin``'s requests, or the one whose slow start does."""
        state = self._origins.get(origin)
        return None if state is None else state.pause or state.ended

    def room(self, origin: str) -> int | None:
        """How many more requests may be sent now (None: no limit)."""
        state = self._origins.get(origin)
        if state is None or not state.ramp:
            return None if state is None or state.pause is None else 0
        return state.ramp.room(state.inflight)

    def paced(self, origin: str) -> bool:
        """Whether ``origin``'s sends are spaced (after a pushback that followed a pause)."""
        state = self._origins.get(origin)
        return state is not None and bool(state.pace)

    def gap(self, origin: str) -> float:
        """Seconds between sends to ``origin`` (0: not paced)."""
        state = self._origins.get(origin)
        return 0.0 if state is None else state.pace.spaced

    def wait(self, origin: str, now: float) -> float:
        """Seconds until the next request of ``origin`` may be sent for its pace (0: now)."""
        state = self._origins.get(origin)
        return 0.0 if state is None else state.pace.wait(now)

    def spacing(self, origin: str, now: float) -> Spacing:
        """What ``origin``'s next send asks of its moment (:class:`Spacing`)."""
        state = self._origins.get(origin)
        if state is None:
            return NOT_SPACED
        pace = state.pace
        since = pace.window_start
        if since is not None and state.ended is not None:
            since = max(since, state.ended.until)  # moments before it were held, not sent
        faster, floor = pace.step() if pace.gap and since is not None else (1.0, 0.0)
        window = 0.0 if since is None else now - since
        return Spacing(pace.spaced, state.first, self.heard(origin), faster, floor, window)

    def sent(self, origin: str, now: float = 0.0, others: Sequence[float] = ()) -> None:
        """A request of a tracked origin left for the network (at ``now``: its pace).

        ``others``: how long before ``now`` the cluster's other workers sent to it since
        this one's last send, newest first (a rate read from its own alone is its share);
        none reserved before the last pause ended was sent: held by the pause, it never
        left, and a window counting it served read the site as far faster than it is."""
        state = self._origins.get(origin)
        if state is not None:
            if others and state.ended is not None:
                others = [before for before in others if now - before >= state.ended.until]
            state.pace.sent(now, others)
            state.inflight += 1

    def done(self, origin: str) -> None:
        """A counted request came back (a response or an error)."""
        state = self._origins.get(origin)
        if state is not None and state.inflight > 0:
            state.inflight -= 1
            if state.first and not state.inflight and not state.refused:
                del self._origins[origin]  # quiet at first contact: _served counts its width

    # -- the cluster ------------------------------------------------------------

    def heard(self, origin: str) -> int:
        """The pages ``origin`` served this worker before its first pushback (answered by
        the end of the first pause: sent before it)."""
        return self._served.get(origin, (0, 0.0))[0] if origin in self._origins else 0

    def told(self, origin: str, joined: float = 0.0, pages: int = 0) -> None:
        """What the cluster's pacing told a send to ``origin``: the gap its other workers keep
        (``joined``: at this worker's first contact, learnt from pushbacks it never heard, it
        keeps it too) and the pages every worker was served before its first pushback
        (``pages``, each one's :meth:`heard` summed: the site's bucket, until read)."""
        state = self._origins.get(origin)
        if state is None:
            return
        if joined and state.first and not state.pace:
            state.first = False
            state.pace.adopt(joined)
        state.pace.told(pages)

    def adopt(self, origin: str, shared: PauseState, now: float) -> Pause | None:
        """Another worker's pause: adopted if it lasts longer than this worker's own."""
        if shared.until <= now:
            return None
        state = self._origins.get(origin)
        if state is None:
            state = self._track(origin, origin in self._served)
        if state.pause is not None and state.pause.until >= shared.until:
            return None
        new = state.pause is None or state.pause.until <= now  # else: its end moved later
        state.pause = shared
        state.cause, state.first = shared.cause, False
        state.level = max(state.level, shared.level)
        state.pace.adopt(shared.gap, shared.stage, now)  # the cluster's last: one for all
        state.ramp.stop(lower=False)
        return Pause(origin, shared, new=new)

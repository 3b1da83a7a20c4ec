"""What a site says while its pages are crawled: 429, 503, a wall of 403s. Pure.

Theory of operation (sans-IO, clock passed in). robots.txt is what a site
*wrote*; a page's status is what it *says now*. :class:`Pushback` hears the
status of each page response of an origin (:meth:`Pushback.on_response`) and
answers with a :class:`Pause` when the origin must stop being sent to:

- a row of the page status table (:data:`DEFAULT_PAGE_ACTIONS`,
  ``REP_PAGE_STATUS_ACTIONS``) says ``pause`` (429, 503): the origin pauses
  for what ``Retry-After`` says (RFC 9110 §10.2.3, read by
  :func:`~scrapy_rep.core.policy.retry_after`, the robots.txt path's reader),
  clamped to ``[floor, pause_max]``; without a usable value, an exponential
  back-off per origin (``backoff_start`` x ``backoff_factor`` ** (n - 1), at
  most ``pause_max``), whose count resets after ``reset_after`` healthy
  responses in a row;
- a row says ``block`` (401, 403): ``block_after`` of them in a row, from an
  origin that served pages before, stop the origin for ``block_pause``
  (``blocked``); one alone is that URL's answer.

After a pause the origin starts slowly (:meth:`Pushback.room`): one request
in flight, one more for each healthy response, until ``ramp_max``; a
pushback during the ramp pauses again, with the back-off of one more
failure (at least what ``Retry-After`` says).

The caller (the Scrapy adapter) holds requests through the gate
(:class:`~scrapy_rep.core.gate.OriginGate`), keeps the timers and counts
what is in flight (:meth:`Pushback.sent`, :meth:`Pushback.done`).
:class:`PauseState` is what a cluster shares of an origin's pause.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from scrapy_rep.core.policy import retry_after

#: what a row of the page status table does
PAUSE, BLOCK, OFF = "pause", "block", "off"
PAGE_ACTIONS = (PAUSE, BLOCK, OFF)

#: the longest ``Retry-After`` kept as read (seconds; a record stays finite JSON)
MAX_RETRY_AFTER = 1e9

#: origins remembered as having served a page (only their 403s can be a wall); a broad
#: crawl forgets the oldest beyond it, ~100 B each
SERVED_MAX = 100_000

#: pacing (see Pushback._slow_down): after an origin's first pause it is sent one
#: request each START_GAP s; the gap shrinks per healthy answer by the stage's factor
#: (COARSE, then FINE), and a pushback moves to the next stage at the pace of the last
#: healthy answer; SETTLED keeps that pace less one FINE step (a margin for the jitter
#: between the crawler's sends and the site's clock); a pushback there slows it by
#: GAP_GROWTH; REPROBE
#: healthy answers in a row at a settled pace try the FINE stage again
START_GAP, GAP_GROWTH, MIN_GAP, MAX_GAP = 1.0, 1.1, 0.001, 60.0
COARSE, FINE, SETTLED = 0, 1, 2
DECAY = {COARSE: 0.75, FINE: 0.97, SETTLED: 1.0}
REPROBE = 1_000

#: a pushback before any healthy answer since the last pause (during the ramp) waits
#: ``Retry-After`` and this much of it again for each pushback in a row before it (1, 1.5,
#: 2, 2.5 times ...): longer, in the site's own terms
HINT_GROWTH = 0.5

#: the reasons of requests held for what a page said (the cause of the pause)
RATE_LIMITED, SERVICE_UNAVAILABLE, BLOCKED = "rate-limited", "service-unavailable", "blocked"
#: a row's cause by status (any other ``pause`` row: ``service-unavailable``)
_CAUSE_BY_STATUS = {429: RATE_LIMITED}
REASONS = (RATE_LIMITED, SERVICE_UNAVAILABLE, BLOCKED)

#: status -> action, the defaults (``REP_PAGE_STATUS_ACTIONS`` overrides single rows).
#: Other 5xx are left to Scrapy's RetryMiddleware.
DEFAULT_PAGE_ACTIONS: Mapping[str, str] = {
    "429": PAUSE,
    "503": PAUSE,
    "401": BLOCK,
    "403": BLOCK,
}

#: row -> what it does, for the documentation's page status table
PAGE_BEHAVIOUR: Mapping[str, str] = {
    "429": "`rate-limited`: the origin pauses for `Retry-After` (or the back-off); the "
    "request is held and sent again after the pause",
    "503": "`service-unavailable`: as 429",
    "401": "`blocked` after `REP_BLOCK_AFTER` in a row from an origin that served pages: "
    "the origin stops for 6 h; a lone one is that URL's answer",
    "403": "as 401",
}


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


@dataclass(frozen=True, slots=True)
class PauseState:
    """An origin's pause as a cluster shares it (JSON-able): until when, why, how deep."""

    until: float
    cause: str
    status: int
    url: str
    #: seconds the response's ``Retry-After`` gave (None: absent or unreadable)
    retry_after: float | None
    #: pushbacks in a row (the back-off's exponent)
    level: int
    started: float
    #: the pace learnt: seconds between sends after the pause (0: none), and how far the
    #: learning is (COARSE, FINE, SETTLED)
    gap: float = 0.0
    stage: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "until": self.until,
            "cause": self.cause,
            "status": self.status,
            "url": self.url,
            "retry_after": self.retry_after,
            "level": self.level,
            "started": self.started,
            "gap": self.gap,
            "stage": self.stage,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PauseState | None:
        """The state a store kept; None if it is not one (written by something else)."""
        try:
            hint = data.get("retry_after")
            state = cls(
                float(data["until"]),
                str(data["cause"]),
                int(data["status"]),
                str(data["url"]),
                None if hint is None else float(hint),
                int(data["level"]),
                float(data["started"]),
                float(data.get("gap") or 0.0),
                int(data.get("stage") or 0),
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            return None
        if state.cause not in REASONS or not math.isfinite(state.until):
            return None
        if not 0.0 <= state.gap <= MAX_GAP or state.stage not in DECAY:  # not a pace
            state = replace(state, gap=0.0, stage=COARSE)
        return state


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

    @property
    def cause(self) -> str:
        return self.state.cause

    @property
    def until(self) -> float:
        return self.state.until

    def detail(self) -> str:
        """A sentence for the decision record of a request this pause holds."""
        return describe(self.state)


def describe(state: PauseState) -> str:
    """What a pause is, in words: the status, the page, ``Retry-After``, its end."""
    hint = "none" if state.retry_after is None else f"{state.retry_after:g}s"
    try:
        end = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(state.until))
    except (OverflowError, OSError, ValueError):
        end = f"{state.until:.0f}"
    return (
        f"the origin answered {state.status} to {state.url} (Retry-After: {hint}); "
        f"{state.cause} until {end} ({state.until - state.started:g}s)"
    )


@dataclass(slots=True)
class _Origin:
    """One origin's pushback state (only origins that pushed back, or are ramping)."""

    pause: PauseState | None = None
    #: the cause of the latest pause (held requests of a ramp give it as their reason)
    cause: str = RATE_LIMITED
    level: int = 0
    healthy: int = 0
    #: slow start: requests allowed in flight (0: not ramping)
    window: int = 0
    #: the width a ramp stops growing at after a pushback during one (0: ``ramp_max``)
    ceiling: int = 0
    #: pacing: seconds between sends (0: none)
    gap: float = 0.0
    #: how the gap changes per healthy answer: COARSE, FINE, SETTLED (see _slow_down)
    stage: int = COARSE
    #: the earliest time the next request may be sent (pacing)
    next_send: float = 0.0
    #: when the last request was sent, and how long after the one before it
    last_send: float | None = None
    spacing: float = math.inf
    #: the spacing of the latest healthy answer's request while paced (inf: none)
    good: float = math.inf
    #: healthy answers since the last pause ended
    healthy_since: int = 0
    inflight: int = 0
    served: bool = False
    refused: list[tuple[int, str]] = field(default_factory=list)


class Pushback:
    """Page-level pauses, back-off, slow start and blocks by origin; one per crawler."""

    def __init__(self, config: PushbackConfig) -> None:
        self.config = config
        #: the table by int status, the rows that do something (read per response)
        self._actions = {int(k): v for k, v in config.actions.items() if k.isdigit() and v != OFF}
        self._origins: dict[str, _Origin] = {}
        #: origins that served pages and refused none since (no state kept beyond this)
        self._served: dict[str, None] = {}  # an ordered set, at most SERVED_MAX

    def __contains__(self, origin: object) -> bool:
        return origin in self._origins

    def _serve(self, origin: str) -> None:
        """Remember that ``origin`` served a page (its 403s may then be a wall)."""
        served = self._served
        served[origin] = None
        if len(served) > SERVED_MAX:  # a broad crawl: forget the origin heard of longest ago
            del served[next(iter(served))]

    def backoff(self, level: int) -> float:
        """Seconds of the ``level``-th pushback in a row without ``Retry-After``."""
        c = self.config
        exponent = min(max(level - 1, 0), 60)
        try:
            return min(c.pause_max, c.backoff_start * math.pow(c.backoff_factor, exponent))
        except OverflowError:
            return c.pause_max

    def clamp(self, seconds: float) -> float:
        c = self.config
        return min(max(seconds, c.floor), c.pause_max)

    # -- what a response says ------------------------------------------------

    def on_response(
        self,
        origin: str,
        status: int,
        headers: Mapping[str, str],
        url: str,
        now: float,
    ) -> Pause | None:
        """A page response of ``origin``: a new pause if it pushes back, else None.

        ``headers``: lower-cased names (``retry-after`` is read).
        """
        action = self._actions.get(status, OFF)
        if action == PAUSE:
            return self._pause(origin, status, headers, url, now)
        state = self._origins.get(origin)
        if action == BLOCK:
            return self._refused(origin, state, status, url, now)
        self._healthy(origin, state, status)
        return None

    def _pause(
        self, origin: str, status: int, headers: Mapping[str, str], url: str, now: float
    ) -> Pause:
        state = self._origins.get(origin)
        if state is None:
            state = self._origins[origin] = _Origin(served=origin in self._served)
        ongoing = state.pause is not None and state.pause.until > now
        if not ongoing:  # responses already in flight when it paused add no depth
            # deeper only if refused before any healthy answer since the last pause (during
            # the ramp); a pushback after some is the edge of the site's pace, found
            state.level = state.level + 1 if not state.healthy_since else max(state.level, 1)
            self._slow_down(state)
            if state.window:  # refused during a ramp: the next one stops below this width
                state.ceiling = max(1, min(state.ceiling or state.window, state.window) - 1)
        state.healthy = 0
        state.refused.clear()
        hint = retry_after(headers, now)
        if hint is not None:  # 5,000 digits read as infinity: as long as any pause may be
            hint = min(hint, MAX_RETRY_AFTER)
        if hint is None:
            wait = self.backoff(state.level)
        elif state.level > 1:  # again soon after a pause: longer, in the site's own terms
            wait = hint * (1 + HINT_GROWTH * (state.level - 1))
        else:
            wait = hint
        wait = self.clamp(wait)
        until = now + wait
        if state.pause is not None and state.pause.until > until:
            until = state.pause.until  # never shortened by a later response
        cause = _CAUSE_BY_STATUS.get(status, SERVICE_UNAVAILABLE)
        state.pause = PauseState(
            until, cause, status, url, hint, state.level, now, state.gap, state.stage
        )
        state.cause = cause
        state.window = 0
        return Pause(origin, state.pause, new=not ongoing)

    def _slow_down(self, state: _Origin) -> None:
        """A new pushback: pace the origin's sends, at a pace learnt from its answers.

        A site that limits its rate does not say the rate; the pace is found from
        its answers. The first pushback starts pacing at :data:`START_GAP` between
        sends, shrinking quickly (``COARSE``) per healthy answer. The next pushback
        means the pace went one step too far: back to the pace of the last healthy
        answer, shrinking slowly (``FINE``); the one after that keeps the last
        healthy pace (``SETTLED``), within a FINE step of what the site allows.
        A pushback at a settled pace slows it by :data:`GAP_GROWTH`. So an origin
        costs three pushbacks to learn its pace, and one more each
        :data:`REPROBE` healthy answers, to notice a site that allows more again.
        """
        if not state.gap:
            state.gap, state.stage = START_GAP, COARSE
        elif state.stage != SETTLED and math.isfinite(state.good):
            state.stage += 1
            margin = DECAY[FINE] if state.stage == SETTLED else 1.0
            state.gap = min(max(state.good / margin, MIN_GAP), MAX_GAP)
        else:  # refused at the kept pace, or before any healthy answer at this one
            state.gap = min(state.gap * GAP_GROWTH, MAX_GAP)
        state.good = math.inf
        state.healthy_since = 0

    def on_wall(self, origin: str, status: int, url: str, now: float) -> Pause | None:
        """A licence or payment wall (:mod:`scrapy_rep.core.walls`) at ``origin``: a refusal
        toward a block, as a ``block`` row's status is, but whether or not the origin served
        a page first (a wall asks the same of every page behind it). ``block_after`` of them
        (with 401/403s) in a row stop the origin for ``block_pause``; the Pause, else None."""
        return self._refused(origin, self._origins.get(origin), status, url, now, wall=True)

    def _refused(
        self,
        origin: str,
        state: _Origin | None,
        status: int,
        url: str,
        now: float,
        wall: bool = False,
    ) -> Pause | None:
        if state is None:
            if origin not in self._served and not wall:
                return None  # never served a page: a 403 here is that URL's answer
            state = self._origins[origin] = _Origin(served=origin in self._served or not wall)
        if not state.served and not wall:
            return None
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
        state.cause = BLOCKED
        state.window = 0
        return Pause(
            origin,
            state.pause,
            tuple(sorted({s for s, _ in refused})),
            refused[0][1],
            refused[-1][1],
            len(refused),
        )

    def _healthy(self, origin: str, state: _Origin | None, status: int) -> None:
        if status >= 500:
            return  # left to Scrapy's retry: neither healthy nor a pushback
        if state is None:
            if origin not in self._served:
                self._serve(origin)
            return
        state.served = True
        state.refused.clear()
        state.healthy += 1
        state.healthy_since += 1
        if state.gap:
            self._speed_up(state)
        if state.healthy >= self.config.reset_after:
            state.level = 0
            state.ceiling = 0  # it has taken this pace for a while: it may grow again
        if state.window:
            if not state.ceiling or state.window < state.ceiling:
                state.window += 1
            if state.window >= self.config.ramp_max:
                state.window = 0  # back to its normal concurrency
        if (
            not state.window
            and not state.level
            and not state.gap
            and state.pause is None
            and not state.inflight
        ):
            del self._origins[origin]  # nothing left to remember
            self._serve(origin)

    def _speed_up(self, state: _Origin) -> None:
        """A healthy answer of a paced origin: its pace is good; a little faster, by stage."""
        if math.isfinite(state.spacing):
            state.good = state.spacing
        if state.stage == SETTLED and state.healthy >= REPROBE:
            state.stage = FINE  # it has taken this pace for long: try a little faster
            state.healthy = 0
        state.gap *= DECAY[state.stage]
        if state.gap < MIN_GAP:
            state.gap = 0.0

    # -- what the gate asks ---------------------------------------------------

    def paused(self, origin: str, now: float) -> PauseState | None:
        """The origin's pause, while it lasts."""
        state = self._origins.get(origin)
        if state is None or state.pause is None or state.pause.until <= now:
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
        if state.window and state.inflight >= state.window:
            return state.cause
        if paced and state.gap and now < state.next_send:
            return state.cause
        return None

    def resume(self, origin: str, now: float) -> PauseState | None:
        """The pause of ``origin`` is over (now or earlier): slow start; the pause that ended."""
        state = self._origins.get(origin)
        if state is None or state.pause is None or state.pause.until > now:
            return None
        ended = state.pause
        state.pause = None
        state.window = 1
        return ended

    def room(self, origin: str) -> int | None:
        """How many more requests may be sent now (None: no limit)."""
        state = self._origins.get(origin)
        if state is None or not state.window:
            return None if state is None or state.pause is None else 0
        return max(0, state.window - state.inflight)

    def paced(self, origin: str) -> bool:
        """Whether ``origin``'s sends are spaced (after a pushback that followed a pause)."""
        state = self._origins.get(origin)
        return state is not None and bool(state.gap)

    def ramping(self, origin: str) -> bool:
        state = self._origins.get(origin)
        return state is not None and bool(state.window)

    def gap(self, origin: str) -> float:
        """Seconds between sends to ``origin`` (0: not paced)."""
        state = self._origins.get(origin)
        return 0.0 if state is None else state.gap

    def wait(self, origin: str, now: float) -> float:
        """Seconds until the next request of ``origin`` may be sent for its pace (0: now)."""
        state = self._origins.get(origin)
        if state is None or not state.gap:
            return 0.0
        return max(0.0, state.next_send - now)

    def sent(self, origin: str, now: float = 0.0, spacing: float | None = None) -> None:
        """A request of a tracked origin left for the network (at ``now``: its pace).

        ``spacing``: the seconds since the origin's previous send as the cluster's
        pacing knows it (another worker's send included); else since this one's."""
        state = self._origins.get(origin)
        if state is not None:
            if state.gap:
                state.next_send = now + state.gap
            last = state.last_send
            if spacing is None:
                spacing = math.inf if last is None else now - last
            state.spacing = spacing
            state.last_send = now
            state.inflight += 1

    def done(self, origin: str) -> None:
        """A counted request came back (a response or an error)."""
        state = self._origins.get(origin)
        if state is not None and state.inflight > 0:
            state.inflight -= 1

    # -- the cluster ------------------------------------------------------------

    def adopt(self, origin: str, shared: PauseState, now: float) -> Pause | None:
        """Another worker's pause: adopted if it lasts longer than this worker's own."""
        if shared.until <= now:
            return None
        state = self._origins.get(origin)
        if state is None:
            state = self._origins[origin] = _Origin(served=origin in self._served)
        if state.pause is not None and state.pause.until >= shared.until:
            return None
        state.pause = shared
        state.cause = shared.cause
        state.level = max(state.level, shared.level)
        if shared.gap:  # the pace the cluster learnt last: one pace for every worker
            state.gap, state.stage = shared.gap, shared.stage
        state.window = 0
        return Pause(origin, shared)

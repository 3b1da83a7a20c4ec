"""How fast an origin is sent to after it pushed back: slow start and pace. Pure.

When a pause ends the origin starts slowly (:class:`SlowStart`): one request
in flight, one more per healthy answer, until its normal concurrency; a
pushback during the ramp sets a ceiling one below the width it was refused at,
until a healthy run lifts it.

A site that limits its rate (a token bucket, say) answers 429 beyond it, and
seldom says the rate. A limit on requests in flight cannot keep a rate when
answers take milliseconds: one request in flight is already fifty a second.
So after an origin's first pause its sends are spaced (:class:`Pace`), and
the space is found from its answers, in three stages:

- ``COARSE``: one request each :data:`START_GAP` s, 25% faster per healthy answer;
- a pushback there: back to the pace of the last healthy answer, ``FINE``: 3%
  faster per healthy answer;
- a pushback there: the last healthy pace less one FINE step, ``SETTLED`` (a
  margin for the jitter between a crawler's sends and the site's clock).

A pushback at a settled pace slows it by :data:`GAP_GROWTH`; after
:data:`REPROBE` healthy answers in a row at a settled pace the FINE stage
starts again, to notice a site that allows more. An origin costs three
pushbacks to learn its pace, then one each :data:`REPROBE` answers at most.

Most rate limits allow bursts (a token bucket holding several tokens): after
each pause the bucket has refilled, the first answers come at the burst's
pace, and a pace learnt from them is the burst's, refused again a few pages
later. So a pushback at a settled pace after at least :data:`WINDOW_MIN`
healthy answers reads the rate the site sustained over the whole window
since its last pushback, the pause included: its bucket was empty at both
ends, so that rate is never above what it allows. The gap is then that
window's (seconds per page), but no more than :data:`BACKOFF` times the gap
refused, and at least :data:`GAP_GROWTH` times it: ``SUSTAINED``, where each
healthy answer shortens the gap by 0.2% (a slow additive increase of the
rate), so pushbacks become rare rather than periodic, each one a longer
window, read closer to the site's rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: seconds between sends after a first pushback; the growth of a settled gap refused
#: again; gaps below MIN_GAP are no pace at all; no gap above MAX_GAP
START_GAP, GAP_GROWTH, MIN_GAP, MAX_GAP = 1.0, 1.1, 0.001, 60.0
#: the stages of learning, and how much each healthy answer shortens the gap in each
COARSE, FINE, SETTLED, SUSTAINED = 0, 1, 2, 3
DECAY = {COARSE: 0.75, FINE: 0.97, SETTLED: 1.0, SUSTAINED: 0.998}
#: healthy answers between two pushbacks before their window's rate is read (fewer say
#: little: the burst a pause refilled); the most a window's rate slows a refused gap
WINDOW_MIN, BACKOFF = 4, 2.0
#: healthy answers in a row at a settled pace before it tries a little faster again
REPROBE = 1_000


@dataclass(slots=True)
class Pace:
    """The space kept between one origin's sends, and how far it is learnt."""

    #: seconds between sends (0: not paced)
    gap: float = 0.0
    stage: int = COARSE
    #: the earliest moment the next request may be sent
    next_send: float = 0.0
    #: when the last request was sent, and how long after the one before it
    last_send: float | None = None
    spacing: float = math.inf
    #: the spacing of the latest healthy answer's request (inf: none since the pushback)
    good: float = math.inf
    #: healthy answers in a row since the last pushback
    answers: int = 0
    #: when the last pushback came (None: none yet): the window a rate is read over
    window_start: float | None = None

    def __bool__(self) -> bool:
        return bool(self.gap)

    def pushed_back(self, now: float) -> None:
        """The origin pushed back (a new episode): start pacing, or learn one stage on."""
        start, self.window_start = self.window_start, now
        sustained = None
        if start is not None and self.answers >= WINDOW_MIN and now > start:
            # the seconds per page the site allowed since its last pushback, the pause
            # included: its bucket was empty then and now, so never faster than its rate
            sustained = (now - start) / self.answers
        if not self.gap:
            self.gap, self.stage = START_GAP, COARSE
        elif sustained is not None and self.stage >= SETTLED:
            self.stage = SUSTAINED
            gap = max(min(self.gap * BACKOFF, sustained), self.gap * GAP_GROWTH)
            self.gap = min(max(gap, MIN_GAP), MAX_GAP)
        elif self.stage < SETTLED and math.isfinite(self.good):
            self.stage += 1
            margin = DECAY[FINE] if self.stage == SETTLED else 1.0
            self.gap = min(max(self.good / margin, MIN_GAP), MAX_GAP)
        else:  # refused at the kept pace, or before any healthy answer at this one
            self.gap = min(self.gap * GAP_GROWTH, MAX_GAP)
        self.good = math.inf
        self.answers = 0

    def healthy(self) -> None:
        """A healthy answer: the pace of its request was good; a little faster, by stage."""
        if not self.gap:
            return
        self.answers += 1
        if math.isfinite(self.spacing):
            self.good = self.spacing
        if self.stage == SETTLED and self.answers >= REPROBE:
            self.stage, self.answers = FINE, 0  # kept for long: try a little faster
        self.gap *= DECAY[self.stage]
        if self.gap < MIN_GAP:
            self.gap = 0.0

    def sent(self, now: float, spacing: float | None = None) -> None:
        """A request left at ``now``; ``spacing``: since the previous send as a cluster's
        pacing knows it (another worker's included), else since this pace's last one."""
        if self.gap:
            self.next_send = now + self.gap
        if spacing is None:
            spacing = math.inf if self.last_send is None else now - self.last_send
        self.spacing = spacing
        self.last_send = now

    def wait(self, now: float) -> float:
        """Seconds until the next request may be sent (0: now)."""
        return max(0.0, self.next_send - now) if self.gap else 0.0

    def adopt(self, gap: float, stage: int) -> None:
        """The pace a cluster learnt last (another worker heard the pushback)."""
        if gap:
            self.gap, self.stage = gap, stage


@dataclass(slots=True)
class SlowStart:
    """Requests allowed in flight after a pause: one, then one more per healthy answer."""

    #: requests allowed in flight (0: not ramping, the origin's normal concurrency)
    window: int = 0
    #: the width the ramp stops growing at after a pushback during one (0: none)
    ceiling: int = 0

    def __bool__(self) -> bool:
        return bool(self.window)

    def start(self) -> None:
        """The pause ended: one request in flight."""
        self.window = 1

    def stop(self, lower: bool = True) -> None:
        """The origin paused (again): no ramp until the pause ends; ``lower``: refused
        during one, the next ramp stops below the width it was refused at."""
        if self.window and lower:
            self.ceiling = max(1, min(self.ceiling or self.window, self.window) - 1)
        self.window = 0

    def healthy(self, widest: int, lifted: bool) -> None:
        """A healthy answer: one more in flight, up to ``widest`` (then not ramping);
        ``lifted``: a healthy run long enough that the ceiling goes."""
        if lifted:
            self.ceiling = 0
        if self.window:
            if not self.ceiling or self.window < self.ceiling:
                self.window += 1
            if self.window >= widest:
                self.window = 0

    def room(self, inflight: int) -> int:
        """How many more may be sent now."""
        return max(0, self.window - inflight)

    def full(self, inflight: int) -> bool:
        return bool(self.window) and inflight >= self.window

"""How fast an origin is sent to after it pushed back: slow start and pace. Pure.

A limit on requests in flight (:class:`SlowStart`) cannot keep a rate when answers take
milliseconds, and a site that limits its rate seldom says it; so after an origin's first
pause its sends are also spaced (:class:`Pace`), the space learnt from its answers: in
stages (``COARSE``, ``FINE``, ``SETTLED``), and from the window between two pushbacks read
as a token bucket (:func:`read_bucket`, ``SUSTAINED``). :class:`Latency` eases the pace
of a site slowing down under the crawl. The whole story, with its figures on a simulated
site: docs/status.md ("Slow start", "A site slowing down under the crawl").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace

#: seconds between sends after a first pushback; a refused settled gap's growth; gap bounds
START_GAP, GAP_GROWTH, MIN_GAP, MAX_GAP = 1.0, 1.1, 0.001, 60.0
#: the stages of learning, and how much each healthy answer shortens the gap in each
COARSE, FINE, SETTLED, SUSTAINED = 0, 1, 2, 3
DECAY = {COARSE: 0.75, FINE: 0.97, SETTLED: 1.0, SUSTAINED: 0.998}
#: healthy answers a window needs to be read (fewer: a refilled burst); its most slowing
WINDOW_MIN, BACKOFF = 4, 2.0
#: healthy answers in a row at a settled pace before it tries a little faster again
REPROBE = 1_000
#: a rate read is kept this much slower (the crawler's jitter); the latest sends kept
MARGIN, SENDS_KEPT = 1.03, 32
#: SUSTAINED: the share of the gap each healthy answer takes off, halved per pushback
PROBE_START, PROBE_MIN = 0.01, 0.002
#: the point read between a window's bounds (in ratio); the floor's share of the probe
UPPER_WEIGHT, FLOOR_SLOWER = 0.25, 40
#: a bucket of one token: no burst blurs its bounds, so the point is halfway between them
ONE_WEIGHT = 0.5
#: a bucket of one's ramp starts two COARSE steps on (its bounds are the ramp's last two)
ONE_START = START_GAP * DECAY[COARSE] ** 2
#: bounds crossed by at most this ratio are the crawler's late send, not a site no bucket fits
CROSSED = GAP_GROWTH
#: the half token allowed when reading a bucket's size with its rate; the sizes tried
BURST_SLACK, BURST_SIZES = 0.5, 24

#: a slow answer (:class:`Latency`): its weight in the fast average; times, and s, above base
LATENCY_WEIGHT, LATENCY_RATIO, LATENCY_EXCESS, LATENCY_ROW = 0.3, 3.0, 0.1, 3
#: how much the baseline may rise per slow answer (a site slower for good)
BASE_DRIFT = 1.005
#: easing: the gap's growth (at most EASE_MAX s), per slow answer between; its recovery
EASE, EASE_MAX, NUDGE, RECOVERED, RECOVER = 1.5, 10.0, 1.1, 1.5, 0.95
#: what :meth:`Latency.heard` says: LATENCY_ROW slow answers, one, none, recovered
SLOWER, RISING, STEADY, BACK = 2, 1, 0, -1


@dataclass(slots=True)
class Latency:
    """An origin's response times against its own baseline, the lowest its fast average has
    been: is it slowing down? A slow answer must also be :data:`LATENCY_EXCESS` s above
    the baseline, or a loopback's milliseconds of noise would read as a site saturating."""

    fast: float = 0.0
    base: float = 0.0
    #: the time between answers (an EWMA; inf: one answer so far) and the last answer
    spacing: float = math.inf
    last: float | None = None
    row: int = 0

    def heard(self, latency: float, now: float) -> int:
        """An answer that took ``latency`` s, at ``now``: SLOWER, RISING, STEADY or BACK."""
        if not math.isfinite(latency) or latency < 0:
            return STEADY
        last, self.last = self.last, now
        if last is None:
            self.fast = self.base = latency
            return STEADY
        between, spacing = max(now - last, 0.0), self.spacing
        self.spacing = (
            spacing + LATENCY_WEIGHT * (between - spacing) if math.isfinite(spacing) else between
        )
        self.fast += LATENCY_WEIGHT * (latency - self.fast)
        rising = _above(latency, self.base)
        self.base = min(self.fast, self.base * BASE_DRIFT if rising else self.base)
        if rising and _above(self.fast, self.base):
            self.row += 1
            if self.row >= LATENCY_ROW:
                self.row = 0
                return SLOWER
        else:
            self.row = 0
        if rising:
            return RISING
        return BACK if self.fast < RECOVERED * self.base else STEADY


def _above(latency: float, base: float) -> bool:
    """Whether ``latency`` is well above ``base``: a site slowing, not a loopback's noise."""
    return latency > LATENCY_RATIO * base and latency - base > LATENCY_EXCESS


def fit_bucket(
    sends: Sequence[float], served: int, burst: float, empty: float | None = None
) -> float | None:
    """The rate (tokens/s) of a bucket of ``burst`` tokens, full at the first of ``sends``
    (``empty``: empty at that moment, the refusal before them), that serves the first
    ``served`` and refuses the next; None when no rate does. The tokens at each send only
    grow with the rate, so the bounds are found by halving the ratio, whatever the scale."""
    if served < 1 or served >= len(sends):
        return None
    full = max(burst, 1.0)

    def tokens(rate: float, upto: int) -> float:
        """The tokens left at send ``upto``, before it takes one (-1: one before it ran out;
        for the refused send, every one before it is served, none left after one that ran
        out: a rate refusing it that no bucket serving them has is then seen, not hidden)."""
        left, last = full, sends[0]
        if empty is not None:
            left = min(full, max(sends[0] - empty, 0.0) * rate)
        for at in sends[:upto]:
            left = min(full, left + (at - last) * rate)
            last = at
            if left < 1.0 and upto < served:
                return -1.0
            left = max(left - 1.0, 0.0)
        return min(full, left + (sends[upto] - last) * rate)

    bounds = []  # the lowest rate serving the last served send, the highest refusing the next
    for upto in (served - 1, served):
        low, high = 1e-6, 1e6
        if (tokens(low, upto) >= 1.0) == (tokens(high, upto) >= 1.0):
            return None  # the burst alone served them, or no rate refuses the next
        for _ in range(60):
            mid = math.sqrt(low * high)
            if tokens(mid, upto) >= 1.0:
                high = mid
            else:
                low = mid
        bounds.append(high if upto < served else low)
    lowest, highest = bounds
    if lowest > highest:  # the lowest serving above the highest refusing: no such bucket,
        # or, by a little, a send left later than the crawler took it to (a loaded crawler)
        return math.sqrt(lowest * highest) if lowest <= highest * CROSSED else None
    weight = UPPER_WEIGHT if full > 1.0 else ONE_WEIGHT
    return float(lowest * (highest / lowest) ** weight)


def read_bucket(
    sends: Sequence[float], served: int, empty: float | None, pages: float, span: float
) -> tuple[float | None, float]:
    """The rate a window's ``sends`` read (:func:`fit_bucket`), and the bucket's size: a
    window fits any size (the larger, the slower), so the size kept is the one whose rate
    refilled, over the ``span`` s the first ``pages`` were served in (0: size known),
    those pages less the size."""
    rate = fit_bucket(sends, served, pages, empty)
    if rate is None or span <= 0.0 or pages <= 1.0:
        return rate, pages
    wanted = pages + BURST_SLACK
    best = (abs(pages + rate * span - wanted), rate, pages)
    for step in range(BURST_SIZES):
        burst = 1.0 + (pages - 1.0) * step / BURST_SIZES
        found = fit_bucket(sends, served, burst, empty)
        if found is not None:
            best = min(best, (abs(burst + found * span - wanted), found, burst))
    return best[1], best[2]


@dataclass(frozen=True, slots=True)
class Spacing:
    """What an origin's pace asks of its next send's moment: ``gap`` s before the next (0:
    not paced); ``join``: at its first contact, the gap a cluster keeps there; ``heard``:
    the pages it served before its first pushback (a cluster sums them). In a cluster each
    send steps the pace down as a page served steps one worker's: at most ``faster`` times
    the gap the last send kept, not below ``floor``, if that send was reserved at most
    ``window`` s ago (since the last pushback or pause: the same pace)."""

    gap: float = 0.0
    join: bool = False
    heard: int = 0
    faster: float = 1.0
    floor: float = 0.0
    window: float = 0.0


NOT_SPACED = Spacing()


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
    #: the latest sends since it (at most SENDS_KEPT), and how many there were
    sends: list[float] = field(default_factory=list)
    sends_count: int = 0
    #: of them, other workers' (a cluster's): counted served, as only a pushback refused
    others: int = 0
    #: the site's bucket (pages served at once after a pause), and until its rate is read
    #: the seconds from the first page to the first pushback
    burst: float = 1.0
    span: float = 0.0
    #: the gap kept while the origin answers slower than its baseline (0: none)
    eased: float = 0.0
    #: SUSTAINED: the share of the gap each healthy answer takes off, and the gap it stops at
    probe: float = PROBE_START
    floor: float = 0.0
    #: seconds the bucket takes to refill at the rate the last pushback read (0: none read)
    refill: float = 0.0
    #: until the first send after a pushback: the pace before it, and the pages it was told of
    before: Pace | None = None
    before_served: int = 0

    def __bool__(self) -> bool:
        return bool(self.gap or self.eased)

    @property
    def spaced(self) -> float:
        """Seconds between sends: the pace learnt, or more while the site is slowing."""
        return max(self.gap, self.eased)

    def slower(self, spacing: float) -> None:
        """The site slows down: ease from its answers' ``spacing``, not from the pace's own
        gap (a guess after a pushback before any answer says)."""
        now = max(self.eased, spacing if math.isfinite(spacing) else MIN_GAP)
        self.eased = min(now * EASE, EASE_MAX)

    def nudge(self) -> None:
        """One more slow answer while eased."""
        if self.eased:
            self.eased = min(self.eased * NUDGE, EASE_MAX)

    def back(self) -> None:
        """The site answers at its baseline again: the eased gap shrinks back."""
        if self.eased:
            self.eased *= RECOVER
            if self.eased <= max(self.gap, MIN_GAP):
                self.eased = 0.0

    def pushed_back(self, now: float, served: int = 0, span: float = 0.0) -> None:
        """The origin pushed back: start pacing, or learn on. ``served``: the pages served
        in the ``span`` s before a first pushback (its bucket, and what its rate refilled)."""
        self.before, self.before_served = None, served
        self.before = replace(self, sends=list(self.sends))
        start, self.window_start = self.window_start, now
        sends, self.sends = self.sends, []
        count, self.sends_count = self.sends_count, 0
        sustained = rate = None
        self.refill = 0.0
        answers, self.others = self.answers + self.others, 0  # a cluster's: every worker's
        if start is not None and answers >= WINDOW_MIN and now > start:
            # the seconds per page the site allowed since its last pushback, the pause
            # included: its bucket was empty then and now, so never faster than its rate
            sustained = (now - start) / answers
            # the bucket: empty at the last pushback (a window cut to its latest sends: full
            # at the first one kept), refilling through the pause, empty at this refusal
            empty = start if count == len(sends) else None
            served_in = answers - (count - len(sends))
            rate, self.burst = read_bucket(sends, served_in, empty, self.burst, self.span)
            self.span = 0.0
        if not self.gap:  # from the pace its latency eased to, if it had slowed down first
            self.burst, self.span = max(float(served), 1.0), span
            start_gap = ONE_START if served == 1 else START_GAP  # 0 served: a size unknown
            self.gap, self.stage = (self.eased, FINE) if self.eased else (start_gap, COARSE)
            self.eased = 0.0
        elif rate is not None:
            refused = self.gap * MARGIN if self.stage == SUSTAINED else MIN_GAP
            self.probe = max(self.probe / 2, PROBE_MIN) if self.stage == SUSTAINED else PROBE_START
            self.stage = SUSTAINED
            self.gap = self.floor = min(max(MARGIN / rate, refused, MIN_GAP), MAX_GAP)
            self.refill = min(self.burst * self.gap, MAX_GAP)
        elif sustained is not None and self.stage >= SETTLED:
            self.stage = SUSTAINED
            gap = max(min(self.gap * BACKOFF, sustained), self.gap * GAP_GROWTH)
            self.gap = self.floor = min(max(gap, MIN_GAP), MAX_GAP)
        elif self.stage < SETTLED and math.isfinite(self.good):
            self.stage += 1
            margin = DECAY[FINE] if self.stage == SETTLED else 1.0
            self.gap = min(max(self.good / margin, MIN_GAP), MAX_GAP)
        else:  # refused at the kept pace, or before any healthy answer at this one
            if self.stage == SUSTAINED:  # never probed back below the pace refused
                self.floor = min(self.gap * MARGIN, MAX_GAP)
                self.probe = max(self.probe / 2, PROBE_MIN)
            self.gap = min(self.gap * GAP_GROWTH, MAX_GAP)
        self.good = math.inf
        self.answers = 0

    def healthy(self) -> None:
        """A healthy answer: a little faster, by stage. One between a pushback and the next
        send answers a request sent before the pushback (a 429 is often answered first): the
        window the pushback ended is read again with it, not the next one with it."""
        if not self.gap:
            return
        before = self.before
        if before is not None and not self.sends_count:
            before.healthy()
            served = self.before_served + (not before.gap)
            before.pushed_back(self.window_start or 0.0, served, self.span)
            for name in _LEARNT:
                setattr(self, name, getattr(before, name))
            return
        self.answers += 1
        if math.isfinite(self.spacing):
            self.good = self.spacing
        if self.stage == SETTLED and self.answers >= REPROBE:
            self.stage, self.answers = FINE, 0  # kept for long: try a little faster
        self._faster()

    def _faster(self, pages: int = 1) -> None:
        """``pages`` served: the gap shortens, by stage (:meth:`step`)."""
        factor, floor = self.step()
        if self.stage == SUSTAINED:  # the floor gives way too, far more slowly
            self.floor = floor = floor * (1.0 - self.probe / FLOOR_SLOWER) ** pages
        self.gap = max(self.gap * factor**pages, floor)
        if self.gap < MIN_GAP:
            self.gap = 0.0

    def step(self) -> tuple[float, float]:
        """What a page served makes of the gap: the factor, and the floor it stops at."""
        if self.stage == SUSTAINED:
            return 1.0 - self.probe, self.floor
        return DECAY[self.stage], 0.0

    def sent(self, now: float, others: Sequence[float] = ()) -> None:
        """A request left at ``now``; ``others``: how long before it the cluster's other sends
        since this worker's last were (newest first): each is a page served, which shortens
        the gap as this worker's own healthy answers do (else a cluster of N learns its pace
        N times slower, each worker a step per page of its own)."""
        self.before = None  # the window the last pushback ended is read for good
        start = self.window_start
        if self.gap and start is not None:
            kept = [now - before for before in reversed(others) if now - before >= start]
            self.others += len(kept)
            self._faster(len(kept))
            kept.append(now)
            self.sends_count += len(kept)
            self.sends = (self.sends + kept)[-SENDS_KEPT:]
        if self.gap or self.eased:
            self.next_send = now + self.spaced
        last = self.last_send  # the spacing: since the send before it, whichever worker's
        self.spacing = others[0] if others else math.inf if last is None else now - last
        self.last_send = now

    def told(self, pages: int) -> None:
        """A cluster's workers were served ``pages`` before their first pushbacks: the bucket
        held them all, until a window's read says its size."""
        if self.stage < SUSTAINED and pages > self.burst:
            self.burst = float(pages)

    def wait(self, now: float) -> float:
        """Seconds until the next request may be sent (0: now)."""
        return max(0.0, self.next_send - now)

    def hold(self, until: float) -> None:
        """No request before ``until`` (an answer that took long: the site's queue drains)."""
        self.next_send = max(self.next_send, until)

    def adopt(self, gap: float, stage: int = SUSTAINED, now: float | None = None) -> None:
        """The pace a cluster learnt last; ``now``: another worker's pushback, a new window."""
        if gap:
            self.gap, self.stage = gap, stage
            self.floor = gap  # SUSTAINED: kept, the probe from there
        if now is not None:
            self.window_start, self.sends, self.sends_count, self.others = now, [], 0, 0
            self.answers, self.good = 0, math.inf


#: what a pushback and the healthy answers learn: all of a pace but its sends' moments
_LEARNT = tuple(f.name for f in fields(Pace) if f.name not in ("next_send", "last_send", "spacing"))


@dataclass(slots=True)
class SlowStart:
    """Requests allowed in flight after a pause: one, then one more per healthy answer."""

    #: requests allowed in flight (0: not ramping, the origin's normal concurrency)
    window: int = 0
    #: the width the ramp stops growing at after a pushback during one (0: none)
    ceiling: int = 0

    def __bool__(self) -> bool:
        return bool(self.window)

    def start(self, width: int = 1) -> None:
        """The pause ended: one request in flight (``width``: as many, at first contact)."""
        self.window = width

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

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

- ``COARSE``: one request each :data:`START_GAP` s (:data:`ONE_START` after a first
  pushback that followed one page: a bucket of one), 25% faster per healthy answer;
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
later. So the window between two pushbacks is read as a token bucket
(:func:`fit_bucket`): its size is what the origin served before its first
pushback (the crawl drained it then) less what its rate refilled meanwhile
(:func:`read_bucket`: a loaded crawler's first sends are late), it was empty
at the pushback before the window, refilling at its rate through the pause,
and empty at the refusal (an answer between a pushback and the next send,
to a request sent before it, is read into the window that pushback ended);
the lowest rate that serves the window's healthy sends and the highest that
refuses the next one bound the site's rate, and the pace kept is :data:`MARGIN` slower than a
point between them (a quarter of the way up, :data:`UPPER_WEIGHT`, in
ratio; halfway for a bucket of one token, :data:`ONE_WEIGHT`). The first
window (the COARSE ramp from one page a second, past the rate and into a
refusal) is enough: ``SUSTAINED`` from there, where each
healthy answer shortens the gap by :data:`PROBE_START` down to the rate read
(its *floor*), and the floor by a :data:`FLOOR_SLOWER`-th of that (a slow
increase of the rate, to notice a site that allows more); each pushback there
reads the window again (at least :data:`MARGIN` slower than the pace
refused) and halves the probe, down to :data:`PROBE_MIN`: pushbacks become
rarer, not periodic (a pushback there with too few answers to read keeps the
floor :data:`MARGIN` slower than the pace refused). A 429 without
``Retry-After`` after a window read so pauses as long as its bucket takes to
fill at the pace read (:attr:`Pace.refill`): the site's own rate says when it
serves again. A window the bucket model does not fit (a sliding window, say;
not one whose bounds cross by less than :data:`CROSSED`, a crawler's late send)
falls back to the stages above and, at a settled pace, to the
rate the site sustained since the previous pushback, the pause included (its
bucket was empty at both ends, so never above what it allows), between
:data:`GAP_GROWTH` and :data:`BACKOFF` times the gap refused.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace

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
#: a rate read from a window is kept this much slower (the jitter between the crawler's
#: sends and the site's clock); the sends of a window kept for reading it (the latest)
MARGIN, SENDS_KEPT = 1.03, 32
#: SUSTAINED: each healthy answer shortens the gap by PROBE_START at first, by half as much
#: after each pushback there, down to PROBE_MIN (pushbacks become rarer, not periodic)
PROBE_START, PROBE_MIN = 0.01, 0.002
UPPER_WEIGHT, FLOOR_SLOWER = 0.25, 40
#: a bucket of one token: no burst blurs its window, the point between the bounds is halfway;
#: its ramp (one page served before the first pushback) starts two COARSE steps below
#: START_GAP: its bounds are the ramp's last two steps whatever the start (a burst's are
#: read from a window long beside the burst; none served says no size)
ONE_WEIGHT = 0.5
ONE_START = START_GAP * DECAY[COARSE] ** 2
#: a window's bounds crossed by at most this ratio are the crawler's own jitter, not a
#: site that is no token bucket (:func:`fit_bucket`)
CROSSED = GAP_GROWTH
#: the bucket's size read with its rate (:func:`read_bucket`): the tokens it held and refilled
#: while the first pages were served are at most one more than they took (half: the middle);
#: the sizes tried, from one token to what was served
BURST_SLACK, BURST_SIZES = 0.5, 24

#: a site slowing down under the crawl (:class:`Latency`): the weight of each answer in the
#: fast average; how far above the baseline (times, and seconds) and for how many answers
#: in a row it eases; how much the baseline may rise per answer (a site slower for good)
LATENCY_WEIGHT, LATENCY_RATIO, LATENCY_EXCESS, LATENCY_ROW = 0.3, 3.0, 0.1, 3
BASE_DRIFT = 1.005
#: easing: the gap grows by EASE (at most EASE_MAX s), and by NUDGE for each answer well
#: above the baseline between; once the fast average is back below RECOVERED times the
#: baseline, it shrinks by RECOVER per answer
EASE, EASE_MAX, NUDGE, RECOVERED, RECOVER = 1.5, 10.0, 1.1, 1.5, 0.95
#: what :meth:`Latency.heard` says: RISING, this one answer took LATENCY_RATIO times the
#: baseline and LATENCY_EXCESS s above it (SLOWER: and the fast average, for LATENCY_ROW)
SLOWER, RISING, STEADY, BACK = 2, 1, 0, -1


@dataclass(slots=True)
class Latency:
    """An origin's response times against its own baseline: is it slowing down?

    The baseline is the lowest the fast average (an EWMA, :data:`LATENCY_WEIGHT`) has
    been, rising at most :data:`BASE_DRIFT` per answer well above it (a site slower for
    good; not while the crawl keeps it a little slower). An answer is well above the
    baseline (RISING) when it took :data:`LATENCY_RATIO` times it and :data:`LATENCY_EXCESS`
    seconds more (the ratio alone would read a loopback's milliseconds of noise as a site
    saturating); the origin is slowing (SLOWER) after :data:`LATENCY_ROW` such answers in
    a row with the fast average above it too, and back (BACK) when the fast average is
    below :data:`RECOVERED` times the baseline."""

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
        if self.last is not None:
            between = max(now - self.last, 0.0)
            spacing = self.spacing
            self.spacing = (
                between
                if not math.isfinite(spacing)
                else spacing + (LATENCY_WEIGHT * (between - spacing))
            )
        first, self.last = self.last is None, now
        if first:
            self.fast = self.base = latency
            return STEADY
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
    """The rate (tokens/s) of a token bucket holding ``burst`` tokens, full at the first
    of ``sends`` (``empty``: empty at that moment instead, the refusal before them, and
    filling at the rate since: a pause shorter than the bucket's refill), that serves the
    first ``served`` of them and refuses the next one; None when no rate does (the site is
    not such a bucket, or the window says nothing of it).

    The tokens at each send only grow with the rate, so the lowest rate serving the
    ``served`` and the highest refusing the next are found by halving (the ratio, whatever
    the scale); the rate read is :data:`UPPER_WEIGHT` of the way from the lowest to the
    highest (in ratio), halfway (:data:`ONE_WEIGHT`) for a bucket of one token: each send
    it served was at least one token's time after the one before, the refused one less,
    so its bounds are the site's rate to within the crawl's own steps. Bounds crossed by
    less than :data:`CROSSED` (a refused send that left late, so it looks as far from the
    one before as those served) read the point between them: the rate is about there,
    and a window read as no bucket slowed the pace up to :data:`BACKOFF` times, kept."""
    if served < 1 or served >= len(sends):
        return None
    full = max(burst, 1.0)

    def tokens(rate: float, upto: int) -> float:
        """The tokens left at send ``upto``, before it takes one (-1: one before it ran out)."""
        left, last = full, sends[0]
        if empty is not None:
            left = min(full, max(sends[0] - empty, 0.0) * rate)
        for at in sends[:upto]:
            left = min(full, left + (at - last) * rate)
            last = at
            if left < 1.0:
                return -1.0
            left -= 1.0
        return min(full, left + (sends[upto] - last) * rate)

    def serves(rate: float) -> bool:
        return tokens(rate, served - 1) >= 1.0

    def refuses(rate: float) -> bool:
        return tokens(rate, served) < 1.0

    bounds = []
    for wanted, test in ((True, serves), (False, refuses)):
        low, high = 1e-6, 1e6
        if test(low) == test(high):
            return None  # the burst alone served them, or no rate refuses the next
        for _ in range(60):
            mid = math.sqrt(low * high)
            if test(mid) == wanted:
                high = mid
            else:
                low = mid
        bounds.append(high if wanted else low)
    lowest, highest = bounds
    if lowest > highest:  # the lowest serving above the highest refusing: no such bucket,
        # or, by a little, a send left later than the crawler took it to (a loaded crawler)
        return math.sqrt(lowest * highest) if lowest <= highest * CROSSED else None
    weight = UPPER_WEIGHT if full > 1.0 else ONE_WEIGHT
    point: float = lowest * (highest / lowest) ** weight
    return point


def read_bucket(
    sends: Sequence[float], served: int, empty: float | None, pages: float, span: float
) -> tuple[float | None, float]:
    """The rate a window's ``sends`` read (:func:`fit_bucket`), and the bucket's size:
    ``pages`` served before the first pushback, in the ``span`` s from the first of them
    to it (0: the size is known), were the bucket and what its rate refilled meanwhile,
    to within one token: the size and the rate are read together.

    A window alone fits any size, the larger with a slower rate; ``pages`` as the size
    read the rate far too slow when the first pages came slowly (a loaded crawler's late
    sends: eight pages served in 0.8 s by a bucket of five at 5/s read as a bucket of
    eight at 2/s, and kept). So of :data:`BURST_SIZES` sizes from one token to ``pages``,
    the size kept is the one whose rate read refilled over the ``span`` closest to
    ``pages`` less the size and half a token (:data:`BURST_SLACK`)."""
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
    #: the pages the site serves at once after a pause (its bucket), read from the first
    #: pushback: what it served before refusing, less what its rate refilled meanwhile
    #: (``span``: the seconds from its first page to that pushback, until the rate is read)
    burst: float = 1.0
    span: float = 0.0
    #: the gap kept while the origin answers slower than its baseline (0: none)
    eased: float = 0.0
    #: SUSTAINED: the share of the gap each healthy answer takes off, and the gap it stops
    #: at (the rate read, less the margin), lowered by a tenth of that share per answer
    probe: float = PROBE_START
    floor: float = 0.0
    #: seconds the site's bucket takes to fill again at the rate read from the window the
    #: last pushback ended (0: no rate read then): how long a pause it needs, unsaid
    refill: float = 0.0
    #: until the first send after a pushback: the pace as it was before it, and the pages
    #: served it was told of (see :meth:`healthy`, an answer that comes after it)
    before: Pace | None = None
    before_served: int = 0

    def __bool__(self) -> bool:
        return bool(self.gap or self.eased)

    @property
    def spaced(self) -> float:
        """Seconds between sends: the pace learnt, or more while the site is slowing."""
        return max(self.gap, self.eased)

    def slower(self, spacing: float) -> None:
        """The site slows down: a gap :data:`EASE` times the eased one, or than the
        ``spacing`` its answers come at (at most :data:`EASE_MAX`); not than the pace's
        own gap, a guess after a pushback (one page a second) before any answer says."""
        now = max(self.eased, spacing if math.isfinite(spacing) else MIN_GAP)
        self.eased = min(now * EASE, EASE_MAX)

    def nudge(self) -> None:
        """One more answer well above the baseline while eased: :data:`NUDGE` times slower."""
        if self.eased:
            self.eased = min(self.eased * NUDGE, EASE_MAX)

    def back(self) -> None:
        """The site answers at its baseline again: the eased gap shrinks back."""
        if self.eased:
            self.eased *= RECOVER
            if self.eased <= max(self.gap, MIN_GAP):
                self.eased = 0.0

    def pushed_back(self, now: float, served: int = 0, span: float = 0.0) -> None:
        """The origin pushed back (a new episode): start pacing, or learn one stage on.

        ``served``: the pages the origin served before it was first paced (a first
        pushback: the burst its bucket allowed, and what its rate refilled in the ``span``
        s from the first of them to now)."""
        self.before, self.before_served = None, served
        self.before = replace(self, sends=list(self.sends))
        start, self.window_start = self.window_start, now
        sends, self.sends = self.sends, []
        count, self.sends_count = self.sends_count, 0
        sustained = rate = None
        self.refill = 0.0
        if start is not None and self.answers >= WINDOW_MIN and now > start:
            # the seconds per page the site allowed since its last pushback, the pause
            # included: its bucket was empty then and now, so never faster than its rate
            sustained = (now - start) / self.answers
            # the bucket: empty at the last pushback, refilling at its rate through the
            # pause (a window cut to its latest sends: full at the first one kept), and
            # empty at this refusal
            empty = start if count == len(sends) else None
            served_in = self.answers - (count - len(sends))
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
        """A healthy answer: the pace of its request was good; a little faster, by stage.

        One between a pushback and the next send answers a request sent before that pushback
        (a refusal is often answered faster than the pages sent before it): it belongs to
        the window the pushback ended, which is read again with it, as if it had come
        first; counted in the next window, it made that one read faster than its sends
        were served (or not at all), and this one slower."""
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
        if self.stage == SUSTAINED:
            self.floor *= 1.0 - self.probe / FLOOR_SLOWER
            self.gap = max(self.gap * (1.0 - self.probe), self.floor)
        else:
            self.gap *= DECAY[self.stage]
        if self.gap < MIN_GAP:
            self.gap = 0.0

    def sent(self, now: float, spacing: float | None = None) -> None:
        """A request left at ``now``; ``spacing``: since the previous send as a cluster's
        pacing knows it (another worker's included), else since this pace's last one."""
        if self.gap or self.eased:
            self.next_send = now + self.spaced
        self.before = None  # the window the last pushback ended is read for good
        if self.gap and self.window_start is not None:
            self.sends_count += 1
            self.sends.append(now)
            if len(self.sends) > SENDS_KEPT:
                del self.sends[0]
        if spacing is None:
            spacing = math.inf if self.last_send is None else now - self.last_send
        self.spacing = spacing
        self.last_send = now

    def wait(self, now: float) -> float:
        """Seconds until the next request may be sent (0: now)."""
        return max(0.0, self.next_send - now)

    def hold(self, until: float) -> None:
        """No request before ``until`` (an answer that took long: the site's queue drains)."""
        self.next_send = max(self.next_send, until)

    def adopt(self, gap: float, stage: int) -> None:
        """The pace a cluster learnt last (another worker heard the pushback)."""
        if gap:
            self.gap, self.stage = gap, stage
            self.floor = gap  # SUSTAINED: kept, the probe from there


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

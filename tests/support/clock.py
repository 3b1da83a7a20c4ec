"""The one fake clock of the tests: the time and the timers, moved only by the test.

:class:`ManualClock` is a whole :class:`~scrapy_rep.runtime.clock.Clock`. Given
as ``REP_CLOCK`` (the rig does), every wait of the crawl ends when the test
advances it. Where only the time is faked and the timers stay the event loop's
(a real crawl on loopback servers), give its ``now`` instead: ``REP_CLOCK =
clock.now``; so too for a component taking a callable, ``SqliteStore(path,
clock=clock.now)``.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: calls one advance() may fire: a callback that keeps rescheduling itself at once is a bug
MAX_CALLS_PER_ADVANCE = 10_000


@dataclass(order=True)
class ManualCall:
    """A call ``ManualClock.call_later`` planned; ``cancel()`` stops it."""

    when: float
    seq: int
    fn: Callable[..., object] = field(compare=False)
    args: tuple[Any, ...] = field(compare=False)
    cancelled: bool = field(default=False, compare=False)

    def cancel(self) -> None:
        self.cancelled = True


class ManualClock:
    """A :class:`~scrapy_rep.runtime.clock.Clock` that moves only when a test says.

    ``advance(seconds)`` fires every call due by then, earliest first (in the
    order planned for equal times), each seeing ``now()`` at its own time.
    Settings are deep-copied by Scrapy: a copy of the clock is the clock itself.
    """

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.time = start
        self._calls: list[ManualCall] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self.time

    def call_later(self, delay: float, fn: Callable[..., object], *args: Any) -> ManualCall:
        call = ManualCall(self.time + max(0.0, delay), next(self._seq), fn, args)
        heapq.heappush(self._calls, call)
        return call

    def advance(self, seconds: float) -> int:
        """Move the time on by ``seconds``, firing what falls due; how many calls fired."""
        target = self.time + seconds
        fired = 0
        while self._calls and self._calls[0].when <= target:
            call = heapq.heappop(self._calls)
            if call.cancelled:
                continue
            fired += 1
            if fired > MAX_CALLS_PER_ADVANCE:
                raise RuntimeError(f"more than {MAX_CALLS_PER_ADVANCE} calls in one advance")
            self.time = max(self.time, call.when)
            call.fn(*call.args)
        self.time = target
        return fired

    @property
    def planned(self) -> list[float]:
        """When the calls still to come are due, earliest first."""
        return sorted(call.when for call in self._calls if not call.cancelled)

    def __deepcopy__(self, memo: dict[int, Any]) -> ManualClock:
        return self

    def __copy__(self) -> ManualClock:
        return self

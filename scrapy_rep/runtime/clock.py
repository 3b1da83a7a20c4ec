"""The time and the timers, in one seam, so a test can move the clock by hand and see a
15-minute park expire without waiting for it (``REP_CLOCK``, not for users).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable


class Timer(Protocol):
    """What ``call_later`` returns: a call to come, which ``cancel()`` stops."""

    def cancel(self) -> None: ...


@runtime_checkable
class Clock(Protocol):
    """The time, and calls to come."""

    def now(self) -> float:
        """Seconds since the epoch."""

    def call_later(self, delay: float, fn: Callable[..., object], *args: Any) -> Timer:
        """Call ``fn(*args)`` in ``delay`` seconds (at once for ``delay <= 0``)."""


@dataclass(frozen=True)
class LoopClock:
    """``now`` (the wall clock unless given) and the running asyncio loop's timers; ``now``
    is the callable itself, so crawlers given one ``REP_CLOCK`` function share a resolver."""

    now: Callable[[], float] = time.time

    def call_later(self, delay: float, fn: Callable[..., object], *args: Any) -> Timer:
        return asyncio.get_event_loop().call_later(max(0.0, delay), fn, *args)


#: the clock when ``REP_CLOCK`` is unset: one object, so every crawler shares it
WALL_CLOCK = LoopClock()


def clock_of(value: object) -> Clock:
    """The clock ``REP_CLOCK`` names: unset, a callable telling the time, or a Clock."""
    if value is None:
        return WALL_CLOCK
    if isinstance(value, Clock):
        return value
    if callable(value):
        return LoopClock(value)
    raise TypeError(
        f"REP_CLOCK = {value!r}: expected a callable returning the time in seconds, "
        "or an object with now() and call_later()"
    )


async def sleep(clock: Clock, seconds: float) -> None:
    """``asyncio.sleep`` on ``clock``'s timers: a test's clock decides when it ends."""
    if seconds <= 0:
        return
    done = asyncio.get_running_loop().create_future()

    def wake() -> None:
        if not done.done():
            done.set_result(None)

    timer = clock.call_later(seconds, wake)
    try:
        await done
    finally:
        timer.cancel()

"""The clock seam: ``REP_CLOCK`` as a callable or a whole Clock, and the test's clock."""

from __future__ import annotations

import asyncio
import time

import pytest
import pytest_twisted
from scrapy.utils.test import get_crawler

from scrapy_rep.components.robots import RobotsMiddleware
from scrapy_rep.runtime.clock import WALL_CLOCK, Clock, LoopClock, clock_of, sleep
from tests.support.clock import ManualClock
from tests.support.crawl import BASE_SETTINGS
from tests.support.rig import in_loop


def test_unset_is_the_wall_clock_on_the_loops_timers() -> None:
    assert clock_of(None) is WALL_CLOCK
    assert WALL_CLOCK.now is time.time


def test_a_plain_callable_tells_the_time_and_keeps_the_loops_timers() -> None:
    def now() -> float:
        return 5.0

    clock = clock_of(now)
    assert isinstance(clock, LoopClock)
    assert clock.now is now  # the same object each time: crawlers sharing it share a resolver
    assert clock_of(now) == clock


def test_a_whole_clock_is_taken_as_it_is() -> None:
    manual = ManualClock()
    assert isinstance(manual, Clock)
    assert clock_of(manual) is manual


def test_anything_else_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match="REP_CLOCK = 42"):
        clock_of(42)


def test_a_crawler_given_a_manual_clock_reads_that_clock() -> None:
    manual = ManualClock(start=1000.0)
    crawler = get_crawler(settings_dict={**BASE_SETTINGS, "REP_CLOCK": manual})
    assert crawler.settings.get("REP_CLOCK") is manual  # not a deep copy of it
    middleware = RobotsMiddleware(crawler)
    assert middleware.service.clock() == 1000.0
    manual.advance(60)
    assert middleware.service.clock() == 1060.0


def test_a_crawler_given_a_callable_still_reads_it_as_now() -> None:
    def now() -> float:
        return 1234.0

    crawler = get_crawler(settings_dict={**BASE_SETTINGS, "REP_CLOCK": now})
    assert RobotsMiddleware(crawler).service.clock is now


def test_advance_fires_what_falls_due_in_order_each_at_its_time() -> None:
    clock = ManualClock(start=0.0)
    heard: list[tuple[str, float]] = []

    def note(name: str) -> None:
        heard.append((name, clock.now()))

    clock.call_later(5, note, "five")
    clock.call_later(1, note, "one")
    clock.call_later(5, note, "five again")  # equal times: in the order planned
    clock.call_later(-3, note, "now")  # a past time is due at once
    assert clock.advance(2) == 2
    assert heard == [("now", 0.0), ("one", 1.0)]
    assert clock.now() == 2.0
    assert clock.planned == [5.0, 5.0]
    assert clock.advance(10) == 2
    assert heard[2:] == [("five", 5.0), ("five again", 5.0)]
    assert clock.now() == 12.0


def test_a_cancelled_call_never_fires() -> None:
    clock = ManualClock(start=0.0)
    heard: list[int] = []
    clock.call_later(1, heard.append, 1).cancel()
    assert clock.planned == []
    assert clock.advance(5) == 0
    assert heard == []


def test_a_call_planned_by_a_call_fires_in_the_same_advance_when_due() -> None:
    clock = ManualClock(start=0.0)
    heard: list[float] = []

    def again() -> None:
        heard.append(clock.now())
        if len(heard) < 3:
            clock.call_later(2, again)

    clock.call_later(2, again)
    clock.advance(5)
    assert heard == [2.0, 4.0]  # the third is due at 6
    assert clock.planned == [6.0]


def test_a_call_that_reschedules_itself_at_once_is_stopped() -> None:
    clock = ManualClock()

    def forever() -> None:
        clock.call_later(0, forever)

    clock.call_later(0, forever)
    with pytest.raises(RuntimeError, match="calls in one advance"):
        clock.advance(1)


@pytest_twisted.ensureDeferred
async def test_sleep_ends_when_the_clock_says() -> None:
    async def scenario() -> None:
        clock = ManualClock(start=0.0)
        nap = asyncio.ensure_future(sleep(clock, 30))
        await asyncio.sleep(0)
        assert clock.planned == [30.0]
        clock.advance(29)
        await asyncio.sleep(0)
        assert not nap.done()
        clock.advance(1)
        await asyncio.sleep(0)
        assert nap.done() and nap.exception() is None

    await in_loop(scenario())


@pytest_twisted.ensureDeferred
async def test_a_cancelled_sleep_takes_its_timer_with_it() -> None:
    async def scenario() -> None:
        clock = ManualClock(start=0.0)
        nap = asyncio.ensure_future(sleep(clock, 30))
        await asyncio.sleep(0)
        nap.cancel()
        with pytest.raises(asyncio.CancelledError):
            await nap
        assert clock.planned == []

    await in_loop(scenario())


@pytest_twisted.ensureDeferred
async def test_the_loop_clock_calls_later_on_the_running_loop() -> None:
    async def scenario() -> None:
        done = asyncio.get_running_loop().create_future()
        LoopClock(now=lambda: 0.0).call_later(0, done.set_result, "called")
        assert await asyncio.wait_for(done, 5) == "called"
        await sleep(WALL_CLOCK, 0.001)  # the wall clock's sleep ends by itself

    await in_loop(scenario())

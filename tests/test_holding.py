"""Where held requests wait, in-process: parking, the refetch timer, park expiry, close.

On the rig: the service builds :class:`Holding` as a crawl does; robots.txt
comes from the fake transport, and every timer (refetch, park expiry) runs
on the ManualClock, so a 15-minute park expires without waiting for it and
without Scrapy's idle heartbeat. The whole-crawl versions are in
``tests/integration/test_middleware_behaviour.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
import pytest_twisted
from scrapy import Request, signals

from scrapy_rep.crawl import graph
from scrapy_rep.crawl import meta as M
from scrapy_rep.crawl.exceptions import ParkedRequest
from scrapy_rep.crawl.holding import EXPIRY_STEP
from scrapy_rep.crawl.service import RobotsService
from tests.support.rig import Rig, in_loop, rig_for

A = "http://a.example:80"
B = "http://b.example:80"
PAUSE = 30.0  # seconds before a 503's first refetch
TIMEOUT = 900.0  # REP_PARK_TIMEOUT
RULES = (200, {}, b"User-agent: *\nDisallow: /private\n")


@pytest.fixture
def rig() -> Iterator[Rig]:
    rig = rig_for(
        {A: [(503, {}, b""), RULES], B: (503, {}, b"")},
        REP_PAUSE_INITIAL=PAUSE,
        REP_PAUSE_MAX=PAUSE,
        REP_PARK_TIMEOUT=TIMEOUT,
    )
    yield rig
    rig.crawler.signals.send_catch_log(signals.spider_closed, spider=rig.crawler.spider)
    rig.close()


async def park(service: RobotsService, url: str) -> Request:
    """A request of a paused origin, as the crawl holds it: answered, handed back, parked."""
    request = Request(url)
    record, _ = await service.admission.answer(
        A if "a.example" in url else B, request, downloader=True
    )
    assert (record["action"], record["reason"]) == ("park", "origin-paused")
    handed = service.holding.to_parking(request, record["reason"])
    with pytest.raises(ParkedRequest):
        service.holding.on_scheduled(handed)
    return handed


async def turns(n: int = 10) -> None:
    """Let tasks the timers started (a refetch) run."""
    for _ in range(n):
        await asyncio.sleep(0)


@pytest_twisted.ensureDeferred
async def test_a_parked_request_is_given_up_on_its_own_timer_at_the_park_timeout(
    rig: Rig,
) -> None:
    async def scenario() -> None:
        rig.transport.answers[A] = (503, {}, b"")  # paused for the whole test
        service = graph.of(rig.crawler)
        await park(service, "http://a.example/1")
        start = rig.clock.now()
        assert start + TIMEOUT in rig.clock.planned
        rig.clock.advance(TIMEOUT - 1)  # refetches come and go: still 503
        await turns()
        assert [r for r in rig.engine.crawled if r.meta.get(M.DROP)] == []
        rig.clock.advance(1 + EXPIRY_STEP)  # no spider_idle: the timer alone
        (expired,) = [r for r in rig.engine.crawled if r.meta.get(M.DROP)]
        assert expired.url == "http://a.example/1"
        assert expired.meta[M.DROP] == "park-expired"  # dropped in the downloader, errback hears
        assert len(service.gate) == 0

    await in_loop(scenario())


@pytest_twisted.ensureDeferred
async def test_each_parked_request_expires_at_its_own_time(rig: Rig) -> None:
    async def scenario() -> None:
        rig.transport.answers[A] = (503, {}, b"")
        service = graph.of(rig.crawler)
        await park(service, "http://a.example/first")
        rig.clock.advance(100)
        await turns()
        await park(service, "http://a.example/second")
        rig.clock.advance(TIMEOUT - 100 + EXPIRY_STEP)
        await turns()
        dropped = [r.url for r in rig.engine.crawled if r.meta.get(M.DROP) == "park-expired"]
        assert dropped == ["http://a.example/first"]
        rig.clock.advance(100)
        dropped = [r.url for r in rig.engine.crawled if r.meta.get(M.DROP) == "park-expired"]
        assert dropped == ["http://a.example/first", "http://a.example/second"]

    await in_loop(scenario())


@pytest_twisted.ensureDeferred
async def test_the_refetch_timer_releases_what_was_held_when_the_origin_answers(
    rig: Rig,
) -> None:
    async def scenario() -> None:
        service = graph.of(rig.crawler)
        await park(service, "http://a.example/1")
        assert rig.transport.urls() == ["http://a.example/robots.txt"]
        rig.clock.advance(PAUSE)  # the back-off is over: refetched, 200 this time
        await turns()
        assert rig.transport.urls() == ["http://a.example/robots.txt"] * 2
        (released,) = rig.engine.crawled
        assert released.url == "http://a.example/1"
        assert M.DROP not in released.meta and released.dont_filter
        assert rig.stat("rep/released") == 1
        assert len(service.gate) == 0
        # nothing is held: the expiry timer finds nothing when it comes
        rig.clock.advance(TIMEOUT)
        assert len(rig.engine.crawled) == 1

    await in_loop(scenario())


@pytest_twisted.ensureDeferred
async def test_close_ends_what_is_held_and_stops_every_timer(rig: Rig) -> None:
    async def scenario() -> None:
        service = graph.of(rig.crawler)
        await park(service, "http://a.example/1")
        await park(service, "http://b.example/1")
        assert rig.clock.planned  # two refetches and one expiry
        assert service.holding.close() == 2  # nowhere to hand them: dropped, spider-closed
        assert rig.clock.planned == []
        assert rig.stat("rep/dropped/spider-closed") == 2
        rig.clock.advance(TIMEOUT * 2)
        assert rig.engine.crawled == []

    await in_loop(scenario())

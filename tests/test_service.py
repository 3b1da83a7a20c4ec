"""The crawl's robots.txt service in-process: one admission path for every client.

On the rig: Scrapy's own crawler, robots.txt from the fake transport, the
ManualClock. What each client does with the answer is tested with the
client; the whole-crawl versions are in ``tests/integration/``
(``test_middleware_behaviour.py``, ``test_browser_guard.py``,
``test_scrapy_robots.py``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
import pytest_twisted
from scrapy import Request, signals

from scrapy_rep.components.robots import RobotsMiddleware
from scrapy_rep.core.gate import HELD_DETAIL
from scrapy_rep.crawl import graph
from scrapy_rep.crawl import meta as M
from scrapy_rep.crawl.telemetry import Telemetry
from scrapy_rep.integrations.browser import BrowserGuard, Judgement, note_subrequest
from scrapy_rep.integrations.wiring import HANDLER
from scrapy_rep.runtime.settings import TUNE
from scrapy_rep.runtime.store.memory import EVICTED_PER_CACHED
from tests.support.rig import Rig, Stall, in_loop, rig_for

A = "http://a.example:80"
P = "http://paused.example:80"
RULES = (200, {}, b"User-agent: *\nDisallow: /private\n")


@pytest.fixture
def rig() -> Iterator[Rig]:
    rig = rig_for({A: RULES, P: (503, {}, b"")})
    yield rig
    rig.crawler.signals.send_catch_log(signals.spider_closed, spider=rig.crawler.spider)
    rig.close()


def stats(rig: Rig) -> dict[str, Any]:
    Telemetry.of(rig.crawler).flush()
    return {k: v for k, v in rig.crawler.stats.get_stats().items() if k.startswith("rep/")}


def test_one_service_per_crawler_made_by_the_downloader_middleware(rig: Rig) -> None:
    assert graph.running(rig.crawler) is None  # nothing made it yet: not enabled
    middleware = RobotsMiddleware(rig.crawler)
    assert graph.running(rig.crawler) is middleware.service
    assert graph.of(rig.crawler) is middleware.service
    other = Rig()
    try:
        assert graph.of(other.crawler) is not middleware.service
    finally:
        other.close()


def test_the_caches_bounds_come_from_the_settings() -> None:
    rig = Rig({TUNE: {"cache_max_origins": 7, "cache_compiled_bytes": 3}})
    try:
        cache = RobotsMiddleware(rig.crawler).service.resolver.cache
        assert (cache.max_origins, cache.compiled_bytes) == (7, 3)
        assert cache.evicted_max == EVICTED_PER_CACHED * 7  # no shared store: kept compact
    finally:
        rig.close()


@pytest_twisted.ensureDeferred
async def test_requests_of_an_origin_share_its_one_fetch_and_its_policy(rig: Rig) -> None:
    async def scenario() -> None:
        service = graph.of(rig.crawler)
        urls = ["http://a.example/1", "http://a.example/private/2", "http://a.example/3"]
        answers = await asyncio.gather(
            *(service.admission.answer(A, Request(url), downloader=True) for url in urls)
        )
        assert rig.transport.urls() == ["http://a.example/robots.txt"]
        assert [record["action"] for record, _ in answers] == ["download", "drop", "download"]
        assert len({id(policy) for _, policy in answers}) == 1
        assert service.fetcher.asked == {}  # the fetch is over: nothing kept for it
        # cached now: judged without a fetch, without waiting
        record, _ = await service.admission.answer(
            A, Request("http://a.example/4"), downloader=True
        )
        assert record["action"] == "download"
        assert len(rig.transport.sent) == 1
        counted = stats(rig)
        assert counted["rep/judgements"] == 4
        assert (counted["rep/cache/miss"], counted["rep/cache/hit"]) == (3, 1)
        assert counted["rep/fetch/count"] == 1  # one fetch, one record

    await in_loop(scenario())


@pytest_twisted.ensureDeferred
async def test_a_fetched_file_is_compiled_for_the_crawl_before_any_request_is_judged(
    rig: Rig,
) -> None:
    # Compiled in the step that parsed it, letting the parse go there: a parse kept
    # until the first judgement outlives young collections into the old generation.
    async def scenario() -> None:
        service = graph.of(rig.crawler)
        policy = await service.resolver.resolve(A, service.listener.fetch)
        robots = service.resolver.cache.robots(policy)
        assert robots is not None and robots.compiled

    await in_loop(scenario())


@pytest_twisted.ensureDeferred
async def test_the_downloaders_answer_is_recorded_a_subrequests_is_left_to_its_client(
    rig: Rig,
) -> None:
    async def scenario() -> None:
        service = graph.of(rig.crawler)
        crawled = Request("http://a.example/private/1")
        record, _ = await service.admission.answer(A, crawled, downloader=True)
        assert crawled.meta[M.DECISION] is record
        sub = Request("http://a.example/private/2")
        sub_record, _ = await service.admission.answer(A, sub)
        assert sub_record["reason"] == record["reason"] == "disallow-rule"
        assert M.DECISION not in sub.meta
        assert stats(rig)["rep/dropped/disallow-rule"] == 1
        where = {"page": "p", "request_url": sub.url, "resource_type": "image", "method": "GET"}
        note_subrequest(service.telemetry, Judgement(A, sub_record), False, **where, hop=0)
        assert stats(rig)["rep/browser/aborted/disallow-rule"] == 1

    await in_loop(scenario())


@pytest_twisted.ensureDeferred
async def test_a_held_origin_parks_the_crawls_request_and_drops_a_subrequest(rig: Rig) -> None:
    async def scenario() -> None:
        service = graph.of(rig.crawler)
        crawled = Request("http://paused.example/1")
        record, policy = await service.admission.answer(P, crawled, downloader=True)
        assert (record["action"], record["reason"]) == ("park", "origin-paused")
        assert policy is not None and policy.status.value == "paused"
        assert M.DECISION not in crawled.meta  # its answer comes when it leaves the lot
        assert "rep/judgements" not in stats(rig)
        sub_record, _ = await service.admission.answer(P, Request("http://paused.example/2"))
        assert (sub_record["action"], sub_record["reason"]) == ("drop", "origin-paused")
        assert sub_record["detail"] == HELD_DETAIL["origin-paused"]
        assert sub_record["policy_status"] == "paused"
        assert len(rig.transport.sent) == 1  # the paused origin is not fetched again

    await in_loop(scenario())


@pytest_twisted.ensureDeferred
async def test_ask_answers_as_the_crawl_would_and_records_nothing(rig: Rig) -> None:
    async def scenario() -> None:
        service = graph.of(rig.crawler)
        decision, policy = await service.admission.ask("http://a.example/private/x")
        assert type(decision) is dict  # the record a crawl carries, not an object of its own
        assert (decision["action"], decision["matched_rule"]) == ("drop", "disallow: /private")
        assert policy.http_status == 200
        counted = stats(rig)
        assert "rep/judgements" not in counted and "rep/dropped/disallow-rule" not in counted

    await in_loop(scenario())


@pytest_twisted.ensureDeferred
async def test_in_its_own_slot_robots_txt_leaves_the_hosts_slot_to_the_render(rig: Rig) -> None:
    async def scenario() -> None:
        service = graph.of(rig.crawler)
        service.fetch_in_own_slot()
        await service.admission.answer(A, Request("http://a.example/1"))
        (sent,) = rig.transport.sent
        assert sent.meta["download_slot"] == "rep-robots:a.example"

    await in_loop(scenario())


PLAYWRIGHT = {"DOWNLOAD_HANDLERS": {"http": HANDLER, "https": HANDLER}}


@pytest_twisted.ensureDeferred
async def test_the_browser_guard_asks_the_service_and_without_it_fails_closed() -> None:
    rig = rig_for({A: RULES}, **PLAYWRIGHT)
    try:

        async def scenario() -> None:
            guard = BrowserGuard(rig.crawler)
            where: dict[str, Any] = {"page": "http://a.example/", "resource_type": "image"}
            # no downloader middleware: nothing judged the page, nothing it loads is let through
            lost = await guard.judge("http://a.example/ok.png", method="GET", hop=0, **where)
            assert (lost.record["reason"], lost.record["detail"]) == (
                "guard-error",
                "no RobotsMiddleware",
            )
            assert rig.transport.sent == []
            RobotsMiddleware(rig.crawler)
            allowed = await guard.judge("http://a.example/ok.png", method="GET", hop=0, **where)
            refused = await guard.judge("http://a.example/private/x", method="GET", hop=0, **where)
            assert (allowed.allowed, refused.record["reason"]) == (True, "disallow-rule")
            assert rig.transport.urls() == ["http://a.example/robots.txt"]  # one shared fetch

        await in_loop(scenario())
    finally:
        rig.crawler.signals.send_catch_log(signals.spider_closed, spider=rig.crawler.spider)
        rig.close()


# -- waits end on the crawl's clock ---------------------------------------------------------------


async def _turns(until: Any, most: int = 200) -> None:
    """Let the loop run (no time passes on the ManualClock) until ``until()`` holds."""
    for _ in range(most):
        if until():
            return
        await asyncio.sleep(0)
    raise AssertionError("the loop did not get there")


@pytest_twisted.ensureDeferred
async def test_a_pending_wait_expires_on_the_manual_clock(rig: Rig) -> None:
    """REP_PENDING_WAIT (5 s here) ends when the ManualClock passes it, not the wall clock."""
    slow = "http://slow.example:80"
    stall = Stall(RULES)
    rig.transport.answers[slow] = stall

    async def scenario() -> None:
        service = graph.of(rig.crawler)
        request = Request("http://slow.example/1")
        answer = asyncio.ensure_future(service.admission.answer(slow, request, downloader=True))
        await _turns(lambda: rig.clock.planned)  # the wait is planned on the clock
        assert rig.clock.planned == [rig.clock.time + 5]
        rig.clock.advance(4.9)
        for _ in range(20):  # many loop turns, no time
            await asyncio.sleep(0)
        assert not answer.done()  # still waiting for the fetch
        rig.clock.advance(0.2)
        record, policy = await answer
        assert (record["action"], record["reason"]) == ("park", "origin-pending")
        assert policy is None
        assert rig.transport.urls() == ["http://slow.example/robots.txt"]
        # the fetch ends later: the origin's rules answer the next request at once
        stall.release()
        await _turns(lambda: service.resolver.current(slow) is not None)
        record, _ = await service.admission.answer(slow, Request("http://slow.example/private/2"))
        assert (record["action"], record["reason"]) == ("drop", "disallow-rule")
        assert len(rig.transport.sent) == 1

    await in_loop(scenario())

"""Nothing is lost at close: every held request ends downloaded or dropped with a reason."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
import scrapy

from tests.support.audit import records
from tests.support.crawl import ListSpider, crawl, crawl_many
from tests.support.fakesite import FakeSite, Reply

ALLOW_ALL = b"User-agent: *\nAllow: /\n"


@pytest_twisted.ensureDeferred
async def test_requests_waiting_for_a_fetch_at_close_are_dropped_with_a_reason(
    site: FakeSite, tmp_path: Path
) -> None:
    slow = site.add("slow").robots(Reply(body=ALLOW_ALL, delay=3.0))  # outlasts the crawl
    urls = [slow.url_for("/one"), slow.url_for("/two")]
    log = tmp_path / "audit.jsonl"
    result = await crawl(
        urls,
        {"CLOSESPIDER_TIMEOUT": 1.5, "REP_PENDING_WAIT": 0.2, "REP_DECISION_LOG": str(log)},
    )
    assert result.downloaded == []
    assert result.stat("rep/parked/origin-pending") == 2
    assert result.stat("rep/dropped/spider-closed") == 2
    assert result.stat("rep/released") == 0  # nothing handed to an engine that is closing
    final = {r["url"]: r for r in records(log, "decision") if r["action"] == "drop"}
    assert set(final) == set(urls)
    assert {r["reason"] for r in final.values()} == {"spider-closed"}
    assert slow.hits("/one") == slow.hits("/two") == 0


@pytest_twisted.ensureDeferred
async def test_paused_requests_at_close_are_dropped_with_a_reason(site: FakeSite) -> None:
    down = site.add("down").robots(Reply(status=503))
    urls = [down.url_for(f"/p{i}") for i in range(3)]
    result = await crawl(urls, {"CLOSESPIDER_TIMEOUT": 1.0, "REP_PAUSE_INITIAL": 60})
    assert result.downloaded == []
    assert result.stat("rep/dropped/spider-closed") == 3
    assert result.stat("rep/downloaded") + result.stat("rep/dropped/spider-closed") == len(urls)


class LateSpider(ListSpider):
    """Starts after the other spider has begun the shared robots.txt fetch."""

    name = "late"

    async def start(self) -> Any:
        await asyncio.sleep(0.5)
        for url in self.urls:
            yield self.request(url)


@pytest_twisted.ensureDeferred
async def test_a_shared_fetch_outlives_the_spider_that_started_it(site: FakeSite) -> None:
    """The first spider closes while its fetch runs; the second still gets an answer."""
    slow = site.add("slow").robots(Reply(body=ALLOW_ALL, delay=2.0))
    early_url, late_urls = slow.url_for("/early"), [slow.url_for(f"/late{i}") for i in range(3)]
    early_spider = type(
        "EarlySpider",
        (ListSpider,),
        {"name": "early", "custom_settings": {"CLOSESPIDER_TIMEOUT": 1}},
    )
    early, late = await crawl_many(
        [(early_spider, [early_url], {}), (LateSpider, late_urls, {})],
        {"REP_PENDING_WAIT": 0.2},
    )
    assert early.downloaded == []
    assert early.stat("rep/dropped/spider-closed") == 1
    assert sorted(late.downloaded) == sorted(late_urls)
    assert late.dropped == {}
    # each spider's numbers are its own: who fetched, who reused
    assert early.stat("rep/fetch/count") + late.stat("rep/fetch/count") == slow.hits("/robots.txt")


@pytest_twisted.ensureDeferred
async def test_an_idle_crawl_says_what_its_held_requests_wait_for(
    site: FakeSite, caplog: pytest.LogCaptureFixture
) -> None:
    """Once, not at every idle tick (several in 1.5 s): how many are held, whose, until when."""
    down = site.add("down").robots(Reply(status=503))
    urls = [down.url_for(f"/p{i}") for i in range(3)]
    with caplog.at_level(logging.INFO, logger="scrapy_rep"):
        result = await crawl(urls, {"CLOSESPIDER_TIMEOUT": 1.5})
    assert result.stat("rep/dropped/spider-closed") == 3
    idle = [
        r.getMessage() for r in caplog.records if "the spider is idle but for" in r.getMessage()
    ]
    assert len(idle) == 1, idle
    assert idle[0].startswith(
        f"scrapy-rep: the spider is idle but for 3 held requests of 1 origins ({down.url}), "
        "waiting for their robots.txt; all are given up by "
    )
    assert idle[0].endswith(" at the latest") and "(in 15 min)" in idle[0]  # 60+120+240+480 s


@pytest_twisted.ensureDeferred
async def test_an_idle_crawl_held_by_a_page_pause_says_so_and_until_when(
    site: FakeSite, caplog: pytest.LogCaptureFixture
) -> None:
    """robots.txt answered 200; a page's 429 holds the origin: the line says so, not robots.txt."""
    a = site.add("a").robots(Reply(body=b"User-agent: *\nAllow: /\n"))
    a.page("/p0", Reply(status=429, headers={"Retry-After": "25"}))
    urls = [a.url_for(f"/p{i}") for i in range(3)]
    settings = {"CLOSESPIDER_TIMEOUT": 1.5, "CONCURRENT_REQUESTS": 1}
    with caplog.at_level(logging.INFO, logger="scrapy_rep"):
        result = await crawl([scrapy.Request(urls[0], priority=1), *urls[1:]], settings)
    assert result.stat("rep/pushback/refused/429") == 1
    idle = [
        r.getMessage() for r in caplog.records if "the spider is idle but for" in r.getMessage()
    ]
    assert len(idle) == 1, idle
    assert idle[0].startswith(
        f"scrapy-rep: the spider is idle but for 3 held requests of 1 origins ({a.url}), "
        f"waiting for the pause a page asked for (rate-limited: HTTP 429 to {urls[0]}, "
        "Retry-After: 25s) until "
    ), idle[0]
    assert "robots.txt" not in idle[0]
    assert "(in 25 s)" in idle[0] or "(in 24 s)" in idle[0]

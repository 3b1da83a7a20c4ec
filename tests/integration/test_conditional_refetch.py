"""Conditional refetch: an expired policy is asked again with the last 200's validators.

The request itself, in real crawls against loopback servers: one that answers 304
and one that ignores the validators and sends a new file. The pure part (what is
sent, what a 304 makes of the copy in hand): ``tests/test_conditional_refetch.py``.
"""

from __future__ import annotations

from typing import Any

import pytest_twisted
import scrapy
from scrapy.crawler import Crawler

from scrapy_rep.crawl import compat
from scrapy_rep.runtime.settings import TUNE
from tests.support.clock import ManualClock
from tests.support.crawl import crawl
from tests.support.fakesite import FakeSite, Reply
from tests.support.steps import StepSpider, hit_order

RULES = b"User-agent: *\nDisallow: /private\n"
CHANGED = b"User-agent: *\nDisallow: /later\n"
ETAG = '"v1"'
MODIFIED = "Mon, 30 Nov 2026 12:00:00 GMT"


# -- real crawls ----------------------------------------------------------------------------------


class HearingSpider(StepSpider):
    """A StepSpider that counts Scrapy's ``robots_parsed`` signals."""

    parsed: list[str]

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> HearingSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.parsed = []
        if compat.ROBOTS_PARSED is not None:
            crawler.signals.connect(spider.on_parsed, signal=compat.ROBOTS_PARSED)
        return spider

    def on_parsed(self, robotparser: Any, request: scrapy.Request, spider: Any) -> None:
        self.parsed.append(request.url)


def robots_requests(site: FakeSite, name: str) -> list[dict[str, str]]:
    return [hit.headers for hit in site[name].requests("/robots.txt")]


@pytest_twisted.ensureDeferred
async def test_an_expired_policy_is_renewed_by_a_304(site: FakeSite) -> None:
    validators = {"ETag": ETAG, "Last-Modified": MODIFIED}
    a = site.add("a").robots(Reply(body=RULES, headers=validators), Reply(status=304))
    clock = ManualClock()
    pages = [a.url_for(p) for p in ("/p1", "/p2", "/private/x", "/p3")]
    result = await crawl(
        pages,
        {"REP_CLOCK": clock.now, "REP_CACHE_TTL": 100, TUNE: {"policy.min_ttl": 0}},
        spider=HearingSpider,
        advances=[150, 10, 50],  # expired at t=150: the 304 makes it fresh until t=250
        clock=clock,
    )
    first, second = robots_requests(site, "a")
    assert "If-None-Match" not in first and "If-Modified-Since" not in first
    assert (second["If-None-Match"], second["If-Modified-Since"]) == (ETAG, MODIFIED)
    assert hit_order(site, "a") == ["/robots.txt", "/p1", "/robots.txt", "/p2", "/p3"]
    # the same rules, the same file: nothing was parsed again
    assert result.dropped == {a.url_for("/private/x"): "disallow-rule"}
    assert (
        result.decisions[a.url_for("/p1")]["policy_digest"]
        == (result.decisions[a.url_for("/p3")]["policy_digest"])
    )
    assert result.stat("rep/fetch/count") == 2
    assert result.stat("rep/fetch/outcome/not-modified") == 1
    assert result.stat("rep/cache/expired") == 1  # /p3 at t=210 is within the renewed TTL
    assert result.crawler is not None
    if compat.ROBOTS_PARSED is not None:
        assert isinstance(result.crawler.spider, HearingSpider)
        # sent once, with the request whose wait started the download
        assert result.crawler.spider.parsed == [a.url_for("/p1")]


@pytest_twisted.ensureDeferred
async def test_a_server_that_ignores_the_validators_gives_the_new_file(site: FakeSite) -> None:
    validators = {"ETag": ETAG, "Last-Modified": MODIFIED}
    a = site.add("a").robots(
        Reply(body=RULES, headers=validators), Reply(body=CHANGED, headers={"ETag": '"v2"'})
    )
    clock = ManualClock()
    pages = [a.url_for(p) for p in ("/later", "/private/x", "/later?again")]
    result = await crawl(
        pages,
        {"REP_CLOCK": clock.now, "REP_CACHE_TTL": 100, TUNE: {"policy.min_ttl": 0}},
        spider=StepSpider,
        advances=[150, 1],
        clock=clock,
    )
    second = robots_requests(site, "a")[1]
    assert second["If-None-Match"] == ETAG  # asked conditionally, answered with a 200
    assert result.downloaded == [a.url_for("/later"), a.url_for("/private/x")]
    assert result.dropped == {a.url_for("/later?again"): "disallow-rule"}
    assert result.stat("rep/fetch/outcome/2xx") == 2
    assert result.stat("rep/fetch/outcome/not-modified") == 0

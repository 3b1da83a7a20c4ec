"""Conditional refetch: an expired policy is asked again with the last 200's validators.

The pure part (what is sent, what a 304 makes of the copy in hand) is checked on
:func:`next_policy`; the request itself in real crawls against loopback servers,
one that answers 304 and one that ignores the validators and sends a new file.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest_twisted
import scrapy
from scrapy.crawler import Crawler

from scrapy_rep.adapter import compat
from scrapy_rep.core.policy import (
    NOT_MODIFIED,
    Conditional,
    FetchResult,
    PolicyConfig,
    Status,
    classify,
    conditional,
    next_policy,
)
from scrapy_rep.runtime.store.memory import PolicyCache
from tests.integration.test_middleware_behaviour import FakeClock, StepSpider, crawl, hit_order
from tests.support.fakesite import FakeSite, Reply

URL = "https://a.example/robots.txt"
RULES = b"User-agent: *\nDisallow: /private\n"
CHANGED = b"User-agent: *\nDisallow: /later\n"
ETAG = '"v1"'
MODIFIED = "Mon, 30 Nov 2026 12:00:00 GMT"
CONFIG = PolicyConfig(ttl=100.0, min_ttl=0.0)


def ok(headers: dict[str, str] | None = None) -> FetchResult:
    validators = {"etag": ETAG, "last-modified": MODIFIED} if headers is None else headers
    return FetchResult(URL, URL, status=200, body=RULES, headers=validators)


def not_modified(headers: dict[str, str] | None = None, asked: bool = True) -> FetchResult:
    return FetchResult(URL, URL, status=304, headers=headers or {}, conditional=asked)


# -- the pure part --------------------------------------------------------------------------------


def test_a_200_keeps_its_validators_and_a_refetch_sends_them() -> None:
    policy = next_policy(None, ok(), 0.0, CONFIG)
    assert (policy.etag, policy.last_modified) == (ETAG, MODIFIED)
    asked = conditional(policy)
    assert asked == Conditional(URL, ETAG, MODIFIED)
    assert asked.headers() == {"If-None-Match": ETAG, "If-Modified-Since": MODIFIED}


def test_nothing_is_sent_without_a_copy_or_without_validators() -> None:
    assert conditional(None) is None
    assert conditional(next_policy(None, ok(headers={}), 0.0, CONFIG)) is None
    gone = next_policy(None, FetchResult(URL, URL, status=404), 0.0, CONFIG)
    assert conditional(gone) is None
    only_date = next_policy(None, ok(headers={"last-modified": MODIFIED}), 0.0, CONFIG)
    assert conditional(only_date) == Conditional(URL, None, MODIFIED)
    assert conditional(only_date).headers() == {"If-Modified-Since": MODIFIED}  # type: ignore[union-attr]


def test_a_304_renews_the_copy_in_hand() -> None:
    first = next_policy(None, ok(), 0.0, CONFIG)
    renewed = next_policy(first, not_modified({"cache-control": "max-age=50"}), 150.0, CONFIG)
    assert classify(not_modified()) == NOT_MODIFIED
    assert renewed.status is Status.OK and renewed.outcome == NOT_MODIFIED
    assert renewed.http_status == 304
    assert (renewed.body, renewed.digest) == (first.body, first.digest)
    assert (renewed.fetched_at, renewed.expires_at) == (150.0, 200.0)
    assert (renewed.etag, renewed.last_modified) == (ETAG, MODIFIED)


def test_a_304_with_new_validators_keeps_those() -> None:
    first = next_policy(None, ok(), 0.0, CONFIG)
    renewed = next_policy(first, not_modified({"etag": '"v2"'}), 150.0, CONFIG)
    assert (renewed.etag, renewed.last_modified) == ('"v2"', MODIFIED)


def test_a_304_ends_a_stale_copy_and_its_failures() -> None:
    first = next_policy(None, ok(), 0.0, CONFIG)
    stale = next_policy(first, FetchResult(URL, URL, status=503), 150.0, CONFIG)
    assert stale.stale_since == 0.0 and stale.failures == 1
    renewed = next_policy(stale, not_modified(), 250.0, CONFIG)
    assert renewed.status is Status.OK and renewed.digest == first.digest
    assert (renewed.failures, renewed.unreachable_since, renewed.stale_since) == (0, None, None)
    assert renewed.expires_at == 350.0


def test_a_304_nobody_asked_for_is_an_ordinary_3xx() -> None:
    first = next_policy(None, ok(), 0.0, CONFIG)
    unasked = not_modified(asked=False)
    assert classify(unasked) == "3xx"
    assert next_policy(first, unasked, 150.0, CONFIG).status is Status.UNAVAILABLE
    # asked, but with no copy to renew: the same row
    orphan = next_policy(None, not_modified(), 150.0, CONFIG)
    assert orphan.status is Status.UNAVAILABLE and orphan.outcome == "3xx"


def test_the_memory_cache_keeps_the_validators_and_the_parse() -> None:
    cache = PolicyCache()
    first = next_policy(None, ok(), 0.0, CONFIG)
    cache.put("https://a.example:443", first)
    parsed = cache.robots(first)
    kept = cache.with_body("https://a.example:443")
    assert kept == first
    renewed = next_policy(kept, not_modified(), 150.0, CONFIG)
    cache.put("https://a.example:443", renewed)
    assert cache.with_body("https://a.example:443") == renewed
    assert cache.robots(replace(renewed, body=None)) is parsed


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
    clock = FakeClock()
    pages = [a.url_for(p) for p in ("/p1", "/p2", "/private/x", "/p3")]
    result = await crawl(
        pages,
        {"REP_CLOCK": clock, "REP_CACHE_TTL": 100, "REP_CACHE_MIN_TTL": 0},
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
    clock = FakeClock()
    pages = [a.url_for(p) for p in ("/later", "/private/x", "/later?again")]
    result = await crawl(
        pages,
        {"REP_CLOCK": clock, "REP_CACHE_TTL": 100, "REP_CACHE_MIN_TTL": 0},
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

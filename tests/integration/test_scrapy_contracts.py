"""What Scrapy users rely on: the robots_parsed contract, honest warnings, the collection hook."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
import pytest_twisted
import scrapy
from scrapy import signals
from scrapy.exceptions import IgnoreRequest

from scrapy_rep.runtime.settings import TUNE
from tests.support.crawl import ListSpider, crawl, crawl_many
from tests.support.fakesite import FakeSite, Reply

RULES = b"User-agent: *\nDisallow: /private\nSitemap: https://example.com/sitemap.xml\n"


# -- robots_parsed --------------------------------------------------------------------------------


class ParsedSpider(ListSpider):
    """Uses the robots_parsed signal the way Scrapy documents it."""

    name = "parsed"
    heard: list[dict[str, Any]]

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> ParsedSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.heard = []
        if hasattr(signals, "robots_parsed"):
            crawler.signals.connect(spider.on_parsed, signal=signals.robots_parsed)
        return spider

    def on_parsed(self, robotparser: Any, request: scrapy.Request, **kwargs: Any) -> None:
        self.heard.append(
            {
                "allowed": robotparser.allowed(request.url + "x", "testbot"),
                "private": robotparser.allowed(request.url + "private/x", b"testbot/1.0"),
                "sitemaps": list(robotparser.sitemaps()),
                "request": request,
            }
        )


@pytest.mark.skipif(
    not hasattr(signals, "robots_parsed"), reason="robots_parsed needs Scrapy >= 2.18"
)
@pytest_twisted.ensureDeferred
async def test_robots_parsed_sends_scrapys_parser_interface_and_the_asking_request(
    site: FakeSite,
) -> None:
    a = site.add("a").robots(Reply(body=RULES))
    result = await crawl([a.url_for("/")], spider=ParsedSpider)
    assert result.crawler is not None
    (heard,) = result.crawler.spider.heard  # type: ignore[union-attr]
    assert heard["allowed"] is True and heard["private"] is False
    assert heard["sitemaps"] == ["https://example.com/sitemap.xml"]
    # as Scrapy's RobotsTxtMiddleware sends it: the request the download was made for
    request = heard["request"]
    assert request.url == a.url_for("/")
    assert request.callback.__name__ == "parse"


# -- warnings that must be true -------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_no_builtin_warning_with_the_recommended_setup(
    site: FakeSite, caplog: pytest.LogCaptureFixture
) -> None:
    """startproject's ROBOTSTXT_OBEY = True plus the ADDONS line: one middleware, one fetch."""
    a = site.add("a").robots(Reply(body=RULES))
    with caplog.at_level(logging.WARNING):
        await crawl([a.url_for("/")], {"ROBOTSTXT_OBEY": True})
    assert not [r for r in caplog.records if "RobotsTxtMiddleware is active" in r.getMessage()]
    assert a.hits("/robots.txt") == 1


class RefuseRobots:
    """A project middleware before Scrapy's UserAgentMiddleware that refuses robots.txt."""

    def process_request(self, request: scrapy.Request, spider: Any = None) -> None:
        if request.url.endswith("/robots.txt"):
            raise IgnoreRequest("no robots.txt from here")


@pytest_twisted.ensureDeferred
async def test_no_user_agent_warning_when_the_fetch_failed_before_headers_were_set(
    site: FakeSite, caplog: pytest.LogCaptureFixture
) -> None:
    a = site.add("a").robots(Reply(body=RULES))
    middlewares = {f"{__name__}.RefuseRobots": 50}
    with caplog.at_level(logging.WARNING):
        result = await crawl(
            [a.url_for("/")],
            {"DOWNLOADER_MIDDLEWARES": middlewares, TUNE: {"policy.pause_max_tries": 1}},
        )
    assert not [r for r in caplog.records if "not in the User-Agent" in r.getMessage()]
    assert result.stat("rep/fetch/error/IgnoreRequest") >= 1


@pytest_twisted.ensureDeferred
async def test_giving_up_is_logged_once_per_origin(
    site: FakeSite, caplog: pytest.LogCaptureFixture
) -> None:
    a = site.add("a").robots(Reply(status=503))
    settings = {
        "REP_PAUSE_INITIAL": 0.05,
        "REP_PAUSE_MAX": 0.05,
        TUNE: {"policy.pause_max_tries": 2, "policy.min_ttl": 0},
    }
    urls = [a.url_for(f"/{n}") for n in range(4)]
    with caplog.at_level(logging.WARNING):
        result = await crawl(urls, settings, spider=SlowStartSpider)
    gave_up = [r for r in caplog.records if "giving up" in r.getMessage()]
    assert len(gave_up) == 1, [r.getMessage() for r in gave_up]
    assert a.hits("/robots.txt") >= 3  # given up, refetched after REP_PAUSE_MAX, given up again
    assert set(result.dropped.values()) == {"policy-unresolved"}


class SlowStartSpider(ListSpider):
    """Yields its URLs 0.1 s apart, so later ones meet the origin after it was given up."""

    name = "slow-start"

    async def start(self) -> Any:
        for url in self.urls:
            yield self.request(url)
            await asyncio.sleep(0.1)


# -- per-spider numbers when two spiders share a fetch ----------------------------------------


@pytest_twisted.ensureDeferred
async def test_each_spider_reports_what_it_fetched_and_what_it_reused(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(body=RULES, delay=0.3))
    first, second = await crawl_many(
        [
            (ListSpider, [a.url_for("/1")], {}),
            (type("Second", (ListSpider,), {"name": "second"}), [a.url_for("/2")], {}),
        ]
    )
    assert a.hits("/robots.txt") == 1
    counts = sorted(
        (r.stat("rep/fetch/count"), r.stat("rep/fetch/reused")) for r in (first, second)
    )
    assert counts == [(0, 1), (1, 0)]


# -- the collection hook --------------------------------------------------------------------------


async def async_scope(request: scrapy.Request, spider: Any) -> str:
    await asyncio.sleep(0)
    return "rejected" if "/out" in request.url else "approved"


def bad_answer(request: scrapy.Request, spider: Any) -> object:
    return True


def raising_hook(request: scrapy.Request, spider: Any) -> str:
    raise RuntimeError("inventory offline")


@pytest_twisted.ensureDeferred
async def test_an_async_collection_hook_is_awaited(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(body=RULES))
    result = await crawl(
        [a.url_for("/in"), a.url_for("/out")],
        {"REP_COLLECTION_POLICY": f"{__name__}.async_scope"},
    )
    assert result.downloaded == [a.url_for("/in")]
    assert result.dropped == {a.url_for("/out"): "collection-rejected"}


@pytest_twisted.ensureDeferred
async def test_a_nonsense_answer_is_an_error_naming_the_setting(
    site: FakeSite, caplog: pytest.LogCaptureFixture
) -> None:
    a = site.add("a").robots(Reply(body=RULES))
    urls = [a.url_for("/1"), a.url_for("/2")]
    with caplog.at_level(logging.ERROR):
        result = await crawl(urls, {"REP_COLLECTION_POLICY": f"{__name__}.bad_answer"})
    assert result.dropped == dict.fromkeys(urls, "collection-error")
    assert "REP_COLLECTION_POLICY returned True" in result.decisions[urls[0]]["detail"]
    errors = [r.getMessage() for r in caplog.records if "REP_COLLECTION_POLICY" in r.getMessage()]
    assert len(errors) == 1  # once, not once per request
    assert not [k for k in result.stats if k.startswith("rep/dropped/collection-True")]


@pytest_twisted.ensureDeferred
async def test_a_hook_that_raises_is_a_recorded_drop(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(body=RULES))
    result = await crawl([a.url_for("/1")], {"REP_COLLECTION_POLICY": f"{__name__}.raising_hook"})
    assert result.dropped == {a.url_for("/1"): "collection-error"}
    assert "RuntimeError: inventory offline" in result.decisions[a.url_for("/1")]["detail"]
    assert result.stat("rep/dropped/collection-error") == 1


@pytest_twisted.ensureDeferred
async def test_a_utf16_robots_txt_is_said_once_per_origin(
    site: FakeSite, caplog: pytest.LogCaptureFixture
) -> None:
    body = "User-agent: *\nDisallow: /private\n".encode("utf-16")
    a = site.add("a").robots(Reply(body=body))
    with caplog.at_level(logging.WARNING):
        result = await crawl([a.url_for(f"/private/{n}") for n in range(3)])
    said = [r.getMessage() for r in caplog.records if "UTF-16" in r.getMessage()]
    assert len(said) == 1 and "everything is allowed" in said[0]
    assert len(result.downloaded) == 3  # RFC 9309 wants UTF-8: no rule was read

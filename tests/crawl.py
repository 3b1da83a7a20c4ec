"""Run a real Scrapy crawl in-process (asyncio reactor) and report what happened."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import scrapy
from scrapy.crawler import AsyncCrawlerRunner
from scrapy.http import Response
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from scrapy_rep.exceptions import RepIgnoreRequest

BASE_SETTINGS: dict[str, Any] = {
    "ADDONS": {"scrapy_rep.Addon": 100},
    "USER_AGENT": "testbot/1.0 (+http://127.0.0.1/)",
    "LOG_LEVEL": "INFO",
    "TELNETCONSOLE_ENABLED": False,
    "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
    "CONCURRENT_REQUESTS": 16,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
    "DOWNLOAD_TIMEOUT": 10,
    "RETRY_ENABLED": False,
    "CLOSESPIDER_TIMEOUT": 60,
}


@dataclass
class CrawlResult:
    downloaded: list[str] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, str] = field(default_factory=dict)  # url -> reason
    errors: dict[str, str] = field(default_factory=dict)  # url -> exception name
    stats: dict[str, Any] = field(default_factory=dict)
    decisions: dict[str, dict[str, Any]] = field(default_factory=dict)

    def stat(self, key: str) -> Any:
        return self.stats.get(key, 0)


class ListSpider(scrapy.Spider):
    """Requests the given URLs; follows links when ``follow`` is true."""

    name = "list"

    def __init__(self, urls: Iterable[str] = (), follow: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.urls = list(urls)
        self.follow = follow
        self.result: CrawlResult = kwargs.get("result") or CrawlResult()

    async def start(self) -> Any:
        for url in self.urls:
            yield scrapy.Request(url, callback=self.parse, errback=self.failed)

    def parse(self, response: Response) -> Iterator[scrapy.Request]:
        self.result.downloaded.append(response.url)
        self.result.statuses[response.url] = response.status
        if "rep_decision" in response.meta:
            self.result.decisions[response.url] = response.meta["rep_decision"]
        if self.follow and hasattr(response, "css"):
            for href in response.css("a::attr(href)").getall():
                yield response.follow(href, callback=self.parse, errback=self.failed)

    def failed(self, failure: Failure) -> None:
        request = failure.request  # type: ignore[attr-defined]
        if isinstance(failure.value, RepIgnoreRequest):
            self.result.dropped[request.url] = failure.value.decision["reason"]
            self.result.decisions[request.url] = failure.value.decision
        else:
            self.result.errors[request.url] = type(failure.value).__name__


async def crawl(
    urls: Iterable[str],
    settings: dict[str, Any] | None = None,
    spider: type[ListSpider] = ListSpider,
    **spider_kwargs: Any,
) -> CrawlResult:
    result = CrawlResult()
    runner = AsyncCrawlerRunner({**BASE_SETTINGS, **(settings or {})})
    crawler = runner.create_crawler(spider)
    # pytest-twisted runs tests as Twisted coroutines: wrap the asyncio task
    await Deferred.fromFuture(runner.crawl(crawler, urls=urls, result=result, **spider_kwargs))
    assert crawler.stats is not None
    result.stats = dict(crawler.stats.get_stats())
    return result

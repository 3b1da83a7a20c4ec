"""Run a real Scrapy crawl in-process (asyncio reactor) and report what happened."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Self

import scrapy
from scrapy import signals
from scrapy.core.engine import ExecutionEngine
from scrapy.crawler import AsyncCrawlerRunner, Crawler
from scrapy.http import Response
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from scrapy_rep.crawl.exceptions import RepIgnoreRequest

#: how often an idle engine looks for work and asks ``spider_idle`` again: Scrapy's 5 s is
#: only waiting in a test (held requests end, or go back to be judged, at an idle tick)
HEARTBEAT = 0.2
ExecutionEngine._SLOT_HEARTBEAT_INTERVAL = HEARTBEAT

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
    #: every distinct URL the spider yielded (start requests and followed links)
    yielded: list[str] = field(default_factory=list)
    #: items that reached the item pipelines (filled by spiders that yield items)
    items: list[Any] = field(default_factory=list)
    #: the finished crawler, for looking at its engine, settings and middlewares
    crawler: Crawler | None = None

    def stat(self, key: str) -> Any:
        return self.stats.get(key, 0)


class ListSpider(scrapy.Spider):
    """Requests the given URLs (or ready-made Requests); follows links when ``follow`` is true."""

    name = "list"

    def __init__(
        self, urls: Iterable[str | scrapy.Request] = (), follow: bool = False, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.urls = list(urls)
        self.follow = follow
        self.result: CrawlResult = kwargs.get("result") or CrawlResult()

    def request(self, url: str | scrapy.Request) -> scrapy.Request:
        """A request whose outcome lands in ``self.result``; noted in ``result.yielded``."""
        if isinstance(url, scrapy.Request):
            request = url.replace(callback=self.parse, errback=self.failed)
        else:
            request = scrapy.Request(url, callback=self.parse, errback=self.failed)
        if request.url not in self.result.yielded:
            self.result.yielded.append(request.url)
        return request

    async def start(self) -> Any:
        for url in self.urls:
            yield self.request(url)

    def parse(self, response: Response) -> Iterator[scrapy.Request]:
        self.result.downloaded.append(response.url)
        self.result.statuses[response.url] = response.status
        if "rep_decision" in response.meta:
            self.result.decisions[response.url] = response.meta["rep_decision"]
        if self.follow and hasattr(response, "css"):
            for href in response.css("a::attr(href)").getall():
                yield self.request(response.urljoin(href))

    def failed(self, failure: Failure) -> None:
        request = failure.request  # type: ignore[attr-defined]
        if isinstance(failure.value, RepIgnoreRequest):
            self.result.dropped[request.url] = failure.value.decision["reason"]
            self.result.decisions[request.url] = failure.value.decision
        else:
            self.result.errors[request.url] = type(failure.value).__name__


class ItemSpider(ListSpider):
    """A ``ListSpider`` that yields ``item(response)`` for every response its callback gets;
    the items, as the item pipelines passed them on, land in ``result.items``."""

    name = "items"

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.scraped, signal=signals.item_scraped)
        return spider

    def scraped(self, item: Any) -> None:
        self.result.items.append(item)

    def item(self, response: Response) -> dict[str, Any]:
        return {"url": response.url}

    def parse(self, response: Response) -> Iterator[Any]:
        yield self.item(response)
        yield from super().parse(response)


def item_urls(result: CrawlResult) -> list[str]:
    """The URLs of the items that reached the item pipelines, sorted."""
    return sorted(item["url"] for item in result.items)


async def crawl(
    urls: Iterable[str | scrapy.Request],
    settings: dict[str, Any] | None = None,
    spider: type[ListSpider] = ListSpider,
    **spider_kwargs: Any,
) -> CrawlResult:
    (result,) = await crawl_many([(spider, urls, spider_kwargs)], settings)
    return result


async def crawl_many(
    jobs: Sequence[tuple[type[ListSpider], Iterable[str | scrapy.Request], dict[str, Any]]],
    settings: dict[str, Any] | None = None,
) -> list[CrawlResult]:
    """Run several spiders at once in ONE runner (one process), a result for each.

    Each job is (spider class, urls, spider kwargs); per-spider settings go in
    the spider class's ``custom_settings``.
    """
    runner = AsyncCrawlerRunner({**BASE_SETTINGS, **(settings or {})})
    results: list[CrawlResult] = []
    tasks = []
    for spider, urls, kwargs in jobs:
        result = CrawlResult()
        crawler = runner.create_crawler(spider)
        result.crawler = crawler
        results.append(result)
        tasks.append(runner.crawl(crawler, urls=urls, result=result, **kwargs))
    # pytest-twisted runs tests as Twisted coroutines: wrap the asyncio tasks
    await Deferred.fromFuture(asyncio.ensure_future(_all(tasks)))
    for result in results:
        assert result.crawler is not None and result.crawler.stats is not None
        result.stats = dict(result.crawler.stats.get_stats())
    return results


async def _all(tasks: Iterable[Any]) -> None:
    await asyncio.gather(*tasks)

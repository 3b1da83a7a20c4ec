"""SitemapSpider reads robots.txt from scrapy-rep's cache: one request per origin at the server."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest_twisted
import scrapy
from scrapy.crawler import AsyncCrawlerRunner
from scrapy.spiders import SitemapSpider
from twisted.internet.defer import Deferred

from scrapy_rep.crawl.fetch import FROM_CACHE_FLAG
from tests.support.crawl import BASE_SETTINGS
from tests.support.fakesite import FakeSite, Reply


class Sitemaps(SitemapSpider):
    name = "sitemaps"
    pages: list[str]
    robots_flags: list[list[str]]

    def parse(self, response: scrapy.http.Response) -> None:
        self.pages.append(response.url)

    def _parse_sitemap(self, response: scrapy.http.Response) -> Any:
        if response.url.endswith("/robots.txt"):
            self.robots_flags.append(list(response.flags))
        return super()._parse_sitemap(response)


def urlset(*urls: str) -> bytes:
    entries = "".join(f"<url><loc>{url}</loc></url>" for url in urls)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'
    ).encode()


async def crawl_sitemaps(robots_urls: list[str], **settings: Any) -> Sitemaps:
    runner = AsyncCrawlerRunner({**BASE_SETTINGS, **settings})
    crawler = runner.create_crawler(Sitemaps)
    await Deferred.fromFuture(
        asyncio.ensure_future(
            runner.crawl(crawler, sitemap_urls=robots_urls, pages=[], robots_flags=[])
        )
    )
    spider = crawler.spider
    assert isinstance(spider, Sitemaps)
    return spider


@pytest_twisted.ensureDeferred
async def test_sitemap_spider_reads_robots_txt_from_the_cache(site: FakeSite) -> None:
    a = site.add("a")
    a.robots(Reply(body=f"User-agent: *\nDisallow: /private\nSitemap: {a.url}/map.xml\n".encode()))
    a.page("/map.xml", Reply(body=urlset(a.url_for("/1"), a.url_for("/private/2"))))
    spider = await crawl_sitemaps([a.robots_url])
    assert a.hits("/robots.txt") == 1  # one request at the server: ours, shared
    assert spider.robots_flags == [[FROM_CACHE_FLAG]]
    assert spider.pages == [a.url_for("/1")]  # and the sitemap's disallowed URL was dropped
    assert a.hits("/private/2") == 0


@pytest_twisted.ensureDeferred
async def test_a_404_robots_txt_goes_to_the_network_as_without_us(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(status=404))
    spider = await crawl_sitemaps([a.robots_url])
    assert a.hits("/robots.txt") == 2  # ours, then the spider's own
    assert spider.robots_flags == []  # SitemapSpider ignores a 404 robots.txt

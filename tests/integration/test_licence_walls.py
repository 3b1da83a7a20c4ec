"""Licence and payment walls in a real crawl: not retried, no items, recorded, origins walled."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest_twisted
import scrapy
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.http import Response

from scrapy_rep.adapter.telemetry import Telemetry
from scrapy_rep.core.report import report_lines
from tests.support.audit import of, records
from tests.support.crawl import ListSpider, crawl
from tests.support.fakesite import FakeSite, Reply

ROBOTS = b"User-agent: *\nAllow: /\nLicense: https://a.example/license.xml\n"
CHALLENGE = 'License realm="news", server="https://license.example/token"'


class ItemSpider(ListSpider):
    """An item for every response its callback gets, whatever the status."""

    name = "items"
    # a wall would reach the callback
    custom_settings: ClassVar[dict[str, Any]] = {"HTTPERROR_ALLOW_ALL": True}

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> ItemSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.scraped, signal=signals.item_scraped)
        return spider

    def scraped(self, item: Any) -> None:
        self.result.items.append(item["url"])

    def parse(self, response: Response) -> Iterator[Any]:
        yield {"url": response.url, "status": response.status}
        yield from super().parse(response)


@pytest_twisted.ensureDeferred
async def test_walls_are_recorded_never_retried_and_wall_off_their_origin(
    site: FakeSite, tmp_path: Path
) -> None:
    a = site.add("a").robots(Reply(body=ROBOTS))
    a.page("/paid", Reply(status=402, headers={"crawler-price": "USD 0.01"}))
    a.page("/licensed", Reply(status=401, headers={"WWW-Authenticate": CHALLENGE}))
    b = site.add("b", host="127.0.0.2").robots(Reply(body=b"User-agent: *\nAllow: /\n"))
    b.page("/paid", Reply(status=402))
    c = site.add("c", host="127.0.0.3").robots(Reply(body=b"User-agent: *\nAllow: /\n"))
    c.page("/basic", Reply(status=401, headers={"WWW-Authenticate": 'Basic realm="x"'}))
    c.page("/paid", Reply(status=402))
    log, html = tmp_path / "audit.jsonl", tmp_path / "report.html"
    first = [a.url_for("/paid"), a.url_for("/licensed"), b.url_for("/paid"), c.url_for("/basic")]
    # asked for after the walls (a lower priority, one request at a time)
    later = [scrapy.Request(a.url_for("/after"), priority=-10)]
    later.append(scrapy.Request(b.url_for("/after"), priority=-10))
    # dont_obey_robotstxt opts out of robots.txt, not of a wall
    later.append(scrapy.Request(c.url_for("/paid"), meta={"dont_obey_robotstxt": True}))
    settings = {
        "REP_DECISION_LOG": str(log),
        "REP_REPORT": str(html),
        "REP_BLOCK_AFTER": 2,
        "RETRY_ENABLED": True,
        "RETRY_HTTP_CODES": [401, 402, 503],  # even then: a wall is not retried
        "CONCURRENT_REQUESTS": 1,  # the walls first, then the later requests
    }
    result = await crawl([*first, *later], settings, spider=ItemSpider)

    assert a.hits("/paid") == 1 and a.hits("/licensed") == 1 and b.hits("/paid") == 1
    # REP_BLOCK_AFTER walls in a row hold their origin like a block: its other requests
    # are not fetched and end blocked; one wall alone blocks nothing
    assert a.hits("/after") == 0 and b.hits("/after") == 1
    assert result.dropped == {
        a.url_for("/paid"): "licence-required",
        a.url_for("/licensed"): "licence-required",
        b.url_for("/paid"): "licence-required",
        a.url_for("/after"): "blocked",
        c.url_for("/paid"): "licence-required",
    }
    # no item of a wall; a 401 that is no licence wall is a page as before
    assert sorted(result.items) == sorted([c.url_for("/basic"), b.url_for("/after")])
    assert result.stat("rep/walls/payment") == 3 and result.stat("rep/walls/licence") == 1
    assert result.stat("rep/walls/origins-walled") == 1
    assert result.stat("rep/dropped/licence-required") == 0  # walls count in rep/walls/*
    assert result.stat("rep/dropped/blocked") == 1  # /after, never fetched
    licensed = result.decisions[a.url_for("/licensed")]
    assert licensed["matched_rule"] == "401 licence, licence server https://license.example/token"
    walls = {r["url"]: r for r in of(records(log), "licence_wall")}
    assert walls[a.url_for("/paid")]["price"] == "USD 0.01"
    assert walls[a.url_for("/paid")]["licenses"] == ["https://a.example/license.xml"]
    assert walls[a.url_for("/licensed")]["walled"] is True
    assert walls[a.url_for("/licensed")]["headers"]["www-authenticate"] == [CHALLENGE]
    # the close report and the HTML report list the origins behind walls
    assert result.crawler is not None
    lines = report_lines(Telemetry.of(result.crawler).counts)
    assert "  licence and payment walls: 4 responses" in lines
    page = html.read_text()
    assert "Origins behind licence and payment walls" in page
    assert "https://license.example/token" in page and "https://a.example/license.xml" in page

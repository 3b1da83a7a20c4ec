"""``scrapy crawl tour``: follow every link, across origins, as demobot.

It yields an item per page: page-level directives show on the demo site's
hub, whose ``/news`` says ``nofollow`` (its link to ``/news/story`` is not
followed) and whose ``/report`` sends ``X-Robots-Tag: demobot: noindex`` (its
item is dropped).
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.http import Response
from twisted.python.failure import Failure


def demo_start_url() -> str:
    """The demo site's hub, from the ports file ``run_demo.py`` passes in DEMO_PORTS_FILE."""
    path = os.environ.get("DEMO_PORTS_FILE")
    if not path:
        raise ValueError("give -a start_url=URL, or set DEMO_PORTS_FILE (see run_demo.py)")
    with open(path, encoding="utf-8") as f:
        return str(json.load(f)["origins"]["hub"]["url"]) + "/"


class TourSpider(scrapy.Spider):
    name = "tour"

    def __init__(self, start_url: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_url = start_url

    async def start(self) -> AsyncIterator[scrapy.Request]:
        yield self.request(self.start_url or demo_start_url())

    def request(self, url: str) -> scrapy.Request:
        # The demo's origins are ports of one host; real origins are hosts of
        # their own, so give each its own download slot (and Crawl-delay), as
        # Scrapy would for distinct hosts.
        slot = urlsplit(url).netloc
        return scrapy.Request(
            url, callback=self.parse, errback=self.failed, meta={"download_slot": slot}
        )

    def parse(self, response: Response) -> Iterator[Any]:
        self.crawler.stats.inc_value("demo/pages")
        # an item per page: a page that says noindex keeps it out (REP_PAGE_NOINDEX_ACTION)
        yield {"url": response.url, "directives": response.meta.get("rep_page")}
        if hasattr(response, "css"):
            for href in response.css("a::attr(href)").getall():
                yield self.request(response.urljoin(href))

    def failed(self, failure: Failure) -> None:
        # scrapy-rep's drops arrive here as RepIgnoreRequest, with the decision attached
        decision = getattr(failure.value, "decision", None)
        if decision is not None:
            self.logger.debug("not downloaded: %s (%s)", decision["url"], decision["reason"])
        else:
            self.crawler.stats.inc_value(f"demo/errors/{type(failure.value).__name__}")

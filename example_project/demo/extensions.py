"""``StatsFile``: the crawl's stats as JSON at close, for ``run_demo.py`` to read."""

from __future__ import annotations

import json
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler


class StatsFile:
    def __init__(self, crawler: Crawler, path: str | None) -> None:
        self.crawler = crawler
        self.path = path
        crawler.signals.connect(self.closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StatsFile:
        return cls(crawler, crawler.settings.get("DEMO_STATS_FILE"))

    def closed(self, spider: Any = None, reason: str = "") -> None:
        if not self.path:
            return  # an ordinary `scrapy crawl`: nothing to write
        assert self.crawler.stats is not None
        stats = dict(self.crawler.stats.get_stats())
        stats["finish_reason"] = reason
        with open(self.path, "w", encoding="utf-8") as f:
            json.dump(stats, f, indent=1, sort_keys=True, default=str)

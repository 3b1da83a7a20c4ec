"""One run of a crawl with a JOBDIR; ``tests/integration/test_jobdir.py`` stops it and resumes it.

Usage: ``python -m tests.support.jobdir_worker '<json config>'`` with keys ``urls``
(start URLs), ``settings`` (merged over the base settings, ``JOBDIR`` among
them), ``ready`` (a file written once the spider is open) and ``out`` (a JSON
report written at exit: downloaded URLs, dropped URLs with reasons, stats).
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import scrapy
from scrapy import signals
from scrapy.crawler import AsyncCrawlerProcess, Crawler
from scrapy.http import Response
from twisted.python.failure import Failure

from scrapy_rep.crawl.exceptions import RepIgnoreRequest

BASE_SETTINGS: dict[str, Any] = {
    "ADDONS": {"scrapy_rep.Addon": 100},
    "USER_AGENT": "jobbot/1.0 (+http://127.0.0.1/)",
    "LOG_LEVEL": "INFO",
    "TELNETCONSOLE_ENABLED": False,
    "RETRY_ENABLED": False,
    "DOWNLOAD_TIMEOUT": 10,
    "CLOSESPIDER_TIMEOUT": 60,
}

REPORT: dict[str, Any] = {"downloaded": [], "dropped": {}, "errors": {}}
CONFIG: dict[str, Any] = {}


class JobSpider(scrapy.Spider):
    name = "job"

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> JobSpider:
        spider: JobSpider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.opened, signal=signals.spider_opened)
        return spider

    async def start(self) -> AsyncIterator[Any]:
        for url in CONFIG["urls"]:
            yield scrapy.Request(url, callback=self.parse, errback=self.failed)

    def opened(self, spider: Any = None) -> None:
        Path(CONFIG["ready"]).write_text("ready")

    def parse(self, response: Response) -> None:
        REPORT["downloaded"].append(response.url)

    def failed(self, failure: Failure) -> None:
        url = failure.request.url  # type: ignore[attr-defined]
        if isinstance(failure.value, RepIgnoreRequest):
            REPORT["dropped"][url] = failure.value.decision["reason"]
        else:
            REPORT["errors"][url] = type(failure.value).__name__


def main() -> None:
    process = AsyncCrawlerProcess({**BASE_SETTINGS, **CONFIG["settings"]})
    crawler = process.create_crawler(JobSpider)
    process.crawl(crawler)
    process.start()
    stats = crawler.stats.get_stats() if crawler.stats is not None else {}
    REPORT["stats"] = {k: v for k, v in stats.items() if isinstance(v, (int, float, str))}
    Path(CONFIG["out"]).write_text(json.dumps(REPORT, indent=1, default=str))


if __name__ == "__main__":
    CONFIG.update(json.loads(sys.argv[1]))
    main()

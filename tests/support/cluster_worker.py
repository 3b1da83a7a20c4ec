"""One scrapy-redis worker of a test cluster.

``tests/integration/test_redis_cluster.py`` runs several.

Usage: ``python -m tests.support.cluster_worker '<json config>'`` with keys ``spider``
(the spider name: workers with the same name share one scrapy-redis queue and
dupefilter), ``settings`` (merged over :data:`BASE_SETTINGS`), ``ready`` (a file
written once the spider is open) and ``out`` (a JSON report written at exit:
downloaded URLs, dropped URLs with reasons, stats, the shared store's counts);
optionally ``follow`` (follow links, for the benchmark), ``batch`` (start
URLs taken from Redis at a time) and ``lead`` (seconds a first contact's lead
lasts, for a test on a busy machine).

The spider reads start URLs from ``<spider>:start_urls`` (a Redis list) and
stays open until ``<spider>:done`` is set and nothing is left to do, or until
CLOSESPIDER_TIMEOUT; every worker is bounded in time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import scrapy
from scrapy import signals
from scrapy.core.engine import ExecutionEngine
from scrapy.crawler import AsyncCrawlerProcess, Crawler
from scrapy.exceptions import DontCloseSpider
from scrapy.http import Response
from scrapy_redis.spiders import RedisSpider
from twisted.python.failure import Failure

from scrapy_rep.crawl import graph
from scrapy_rep.crawl.exceptions import RepIgnoreRequest
from scrapy_rep.runtime.store import redis_pacing

# The engine looks at its scheduler every 5 s when idle; a shared queue filled by
# other workers should be looked at more often than that in a test.
ExecutionEngine._SLOT_HEARTBEAT_INTERVAL = 0.2

BASE_SETTINGS: dict[str, Any] = {
    "ADDONS": {"scrapy_rep.Addon": 100},
    "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
    "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
    "SCHEDULER_PERSIST": True,  # the queue belongs to the cluster, not to one worker
    "REP_STORE": "redis",
    "REP_PENDING_WAIT": 0.5,
    "USER_AGENT": "clusterbot/1.0 (+http://127.0.0.1/)",
    "LOG_LEVEL": "INFO",
    "TELNETCONSOLE_ENABLED": False,
    "RETRY_ENABLED": False,
    "DOWNLOAD_TIMEOUT": 10,
    "CONCURRENT_REQUESTS": 4,
    "CLOSESPIDER_TIMEOUT": 60,
}

REPORT: dict[str, Any] = {"downloaded": [], "dropped": {}, "errors": {}}


class ClusterSpider(RedisSpider):  # type: ignore[misc]
    """A RedisSpider whose requests say what happened to them."""

    name = "cluster"
    redis_batch_size = 4

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> ClusterSpider:
        spider: ClusterSpider = super().from_crawler(crawler, *args, **kwargs)
        spider.done_key = f"{spider.name}:done"
        crawler.signals.connect(spider.opened, signal=signals.spider_opened)
        return spider

    async def start(self) -> AsyncIterator[Any]:
        for request in self.next_requests():
            yield request

    def make_request_from_data(self, data: bytes) -> scrapy.Request:
        """A plain GET (not scrapy-redis's deprecated FormRequest), through the dupefilter."""
        url = data.decode("utf-8")
        return scrapy.Request(url, callback=self.parse, errback=self.failed)

    def opened(self, spider: Any = None) -> None:
        REPORT["service"] = graph.running(self.crawler)
        Path(CONFIG["ready"]).write_text(str(time.time()))

    def parse(self, response: Response) -> Iterator[scrapy.Request]:
        REPORT["downloaded"].append(response.url)
        if CONFIG.get("follow"):
            for href in response.css("a::attr(href)").getall():
                yield response.follow(href, callback=self.parse, errback=self.failed)

    def failed(self, failure: Failure) -> None:
        url = failure.request.url  # type: ignore[attr-defined]
        if isinstance(failure.value, RepIgnoreRequest):
            REPORT["dropped"][url] = failure.value.decision["reason"]
        else:
            REPORT["errors"][url] = type(failure.value).__name__

    def spider_idle(self) -> None:
        """Take more start URLs; close only once the test says it is done pushing."""
        self.schedule_next_requests()
        if self.server.exists(self.done_key) and not self.count_size(self.redis_key):
            return
        raise DontCloseSpider


def say_where_stuck(signum: int, frame: Any) -> None:
    """SIGUSR1: print every asyncio task's stack (a test about to kill a worker that did not
    finish asks, so its failure says where the worker was stuck)."""
    print("-- asyncio tasks at SIGUSR1 --", flush=True)
    with contextlib.suppress(RuntimeError):
        for task in asyncio.all_tasks(asyncio.get_event_loop()):
            task.print_stack(file=sys.stdout)
    sys.stdout.flush()


def main(config: dict[str, Any]) -> None:
    signal.signal(signal.SIGUSR1, say_where_stuck)
    if "lead" in config:
        redis_pacing.LEAD = float(config["lead"])
    attributes = {"name": config["spider"], "redis_batch_size": config.get("batch", 4)}
    spider_cls = type("Spider", (ClusterSpider,), attributes)
    process = AsyncCrawlerProcess({**BASE_SETTINGS, **config["settings"]})
    crawler = process.create_crawler(spider_cls)
    process.crawl(crawler)
    process.start()
    service = REPORT.pop("service", None)
    store = service.resolver.shared if service is not None else None
    stats = crawler.stats.get_stats() if crawler.stats is not None else {}
    REPORT["stats"] = {k: v for k, v in stats.items() if isinstance(v, (int, float, str))}
    REPORT["store"] = dict(store.counts) if store is not None else {}
    Path(config["out"]).write_text(json.dumps(REPORT, indent=1, default=str))


CONFIG: dict[str, Any] = {}

if __name__ == "__main__":
    CONFIG.update(json.loads(sys.argv[1]))
    main(CONFIG)

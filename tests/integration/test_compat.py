"""scrapy_rep.crawl.compat: the same behaviour on every supported Scrapy (2.14 and later).

``make test`` runs these on the newest Scrapy, ``make test-min`` on the oldest.
"""

from __future__ import annotations

from typing import Any

import pytest_twisted
from scrapy.http import Response

from scrapy_rep.crawl import compat
from tests.support.crawl import ListSpider, crawl
from tests.support.fakesite import FakeSite, Reply


class SchedulerSpider(ListSpider):
    name = "scheduler"
    found: list[Any] = []  # noqa: RUF012

    def parse(self, response: Response) -> Any:
        self.found.append(compat.scheduler_of(self.crawler.engine))
        yield from super().parse(response)


@pytest_twisted.ensureDeferred
async def test_scheduler_of_a_running_engine_has_its_dupefilter(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(body=b"User-agent: *\nAllow: /\n"))
    SchedulerSpider.found = []
    await crawl([a.url_for("/")], spider=SchedulerSpider)
    (scheduler,) = SchedulerSpider.found
    assert scheduler is not None and hasattr(scheduler, "df")

"""A spider that steps through its URLs, moving a ManualClock between them, and the order
an origin of the fake site was hit in: for real crawls checking expiry and refetches.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import scrapy
from scrapy.http import Response
from twisted.python.failure import Failure

from tests.support.clock import ManualClock
from tests.support.crawl import ListSpider
from tests.support.fakesite import FakeSite


class StepSpider(ListSpider):
    """Requests its URLs one after another; advances the clock before each next one."""

    name = "steps"

    def __init__(self, urls: list[str], advances: list[float], clock: ManualClock, **kw: Any):
        super().__init__(urls=urls[:1], **kw)
        self.pending = list(zip(advances, urls[1:], strict=True))
        self.clock = clock

    def _next(self) -> Iterator[scrapy.Request]:
        if self.pending:
            advance, url = self.pending.pop(0)
            self.clock.advance(advance)
            yield self.request(url)

    def parse(self, response: Response) -> Iterator[scrapy.Request]:
        yield from super().parse(response)
        yield from self._next()

    def failed(self, failure: Failure) -> Iterator[scrapy.Request]:  # type: ignore[override]
        super().failed(failure)
        yield from self._next()


def hit_order(site: FakeSite, name: str) -> list[str]:
    return [path for origin, path in site.hits_log() if origin == name]

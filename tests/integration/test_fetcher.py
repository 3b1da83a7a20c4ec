"""The robots.txt fetcher in-process: what it keeps per origin once the fetches are over.

Driven through the downloader middleware on Scrapy's own ``get_crawler()``,
with the engine's ``download_async`` (the fetch seam) answering at once.
"""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Awaitable
from typing import Any

import pytest_twisted
from scrapy import Request
from scrapy.http import Response
from scrapy.utils.test import get_crawler
from twisted.internet.defer import Deferred

from scrapy_rep.components.robots import RobotsMiddleware
from scrapy_rep.runtime.settings import TUNE
from tests.support.crawl import BASE_SETTINGS


def deferred(coro: Awaitable[Any]) -> Deferred[Any]:
    return Deferred.fromFuture(asyncio.ensure_future(coro))


class Slot:
    closing = None


class FakeEngine:
    """The fetch seam: every robots.txt answers ``status``; each request is watched."""

    def __init__(self, status: int) -> None:
        self.status = status
        self._slot = Slot()
        self.sent: list[weakref.ref[Request]] = []

    async def download_async(self, request: Request) -> Response:
        self.sent.append(weakref.ref(request))
        return Response(request.url, status=self.status, request=request)


@pytest_twisted.ensureDeferred
async def test_ten_thousand_origins_of_404_leave_no_request_behind() -> None:
    async def scenario() -> None:
        crawler = get_crawler(settings_dict={**BASE_SETTINGS, TUNE: {"cache_max_origins": 100}})
        engine = FakeEngine(404)
        crawler.engine = engine  # type: ignore[assignment]
        middleware = RobotsMiddleware(crawler)
        asking: list[weakref.ref[Request]] = []
        for n in range(10_000):
            page = Request(f"http://h{n}.example/page")
            asking.append(weakref.ref(page))
            assert await middleware.process_request(page) is None  # 404: allowed
            del page
        gc.collect()
        assert len(engine.sent) == 10_000  # one robots.txt each
        assert [ref for ref in engine.sent if ref() is not None] == []
        assert [ref for ref in asking if ref() is not None] == []
        assert middleware.service.fetcher.asked == {}
        assert middleware.service.resolver.pending_since("http://h0.example:80") is None
        assert len(middleware.service.resolver.cache) <= 100

    await deferred(scenario())

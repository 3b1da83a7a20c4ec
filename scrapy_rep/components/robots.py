"""The Scrapy downloader middleware: the crawl's own requests, asked of the service.

What is left here is what a downloader middleware alone can do: let the request through
(after its slot's Crawl-delay), drop it so its errback hears why, or hand it back to be
parked outside Scrapy's queues.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy import Request

from scrapy_rep.core.decision import DOWNLOAD, DROP
from scrapy_rep.core.origin import origin_or_none, robots_url
from scrapy_rep.crawl import graph
from scrapy_rep.crawl import meta as M
from scrapy_rep.crawl.exceptions import RepIgnoreRequest

if TYPE_CHECKING:
    import asyncio

    from scrapy.crawler import Crawler
    from scrapy.http import Response


class RobotsMiddleware:
    """Obeys robots.txt per RFC 9309, pauses origins that cannot be read, says why."""

    def __init__(self, crawler: Crawler) -> None:
        self.service = service = graph.of(crawler)
        self.admission = service.admission
        self.holding = service.holding

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RobotsMiddleware:
        return cls(crawler)

    async def process_request(
        self, request: Request, spider: Any = None
    ) -> Request | Response | None:
        meta = request.meta
        if meta.get(M.ROBOTS_REQUEST):
            return None
        origin = origin_or_none(request.url)
        if origin is None:
            return None  # data:, file:, ... are not governed by robots.txt
        if meta.get(M.DONT_OBEY):  # it opts out of robots.txt, not of REP_EXCLUDE
            if self.admission.excluded is not None:
                record = self.admission.excluded_record(origin, request, downloader=True)
                if record is not None:
                    raise RepIgnoreRequest(record)
            return None
        service = self.service
        withheld_reason = meta.pop(M.DROP, None)
        if withheld_reason is not None:
            self.holding.drop_held(origin, request, withheld_reason)
        if request.url.endswith("/robots.txt") and request.url == robots_url(origin):
            cached = await self.admission.robots_for_spider(origin, request)
            if cached is not None:
                return cached
        record, policy = await self.admission.answer(origin, request, downloader=True)
        action = record["action"]
        if action == DOWNLOAD:
            assert policy is not None
            pushback = service.pushback
            while True:
                # at first contact with no room: it waits before it reserves a moment
                held: str | asyncio.Future[str | None] | None = None
                if pushback is not None:
                    held = pushback.room(origin)
                if held is None:
                    paced = service.pace(request, origin, policy)
                    # the reserved send time of a delayed or paced origin
                    turn = await paced if paced is not None else None
                    # a page paused its origin meanwhile, or its ramp is full (at first
                    # contact: it waits for room, then for its moment again)
                    if pushback is not None:
                        held = pushback.sending(request, origin, turn)
                if held is not None and not isinstance(held, str):
                    held = await held
                    if held is None:
                        continue
                return None if held is None else self.holding.to_parking(request, held)
        if action == DROP:
            if service.pushback is not None:  # a ramp's request that will never answer
                service.pushback.settled(origin)
            raise RepIgnoreRequest(record)
        # held by the gate, or REP_*_ACTION = "park": parked before the scheduler takes it
        return self.holding.to_parking(request, record["reason"])

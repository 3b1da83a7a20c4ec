"""The one page-status middleware (:data:`~scrapy_rep.core.pushback.DEFAULT_PAGE_ACTIONS`):
walls go to :class:`~scrapy_rep.crawl.walls.LicenceWalls`, the rest (429, 503, 401/403
blocks) to :class:`~scrapy_rep.crawl.pushback.PageSignals`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy_rep.core.walls import WALL_STATUSES
from scrapy_rep.crawl import graph
from scrapy_rep.crawl import meta as M

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response


class PushbackMiddleware:
    """Reads each page's status through the page status table: walls, pauses and blocks."""

    def __init__(self, crawler: Crawler) -> None:
        service = graph.of(crawler)
        self.signals = service.pushback
        self.walls = service.walls
        if self.signals is not None:  # the answers are heard: a first contact may ramp
            self.signals.heard = True

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PushbackMiddleware:
        return cls(crawler)

    def process_response(
        self, request: Request, response: Response, spider: Any = None
    ) -> Request | Response:
        # a wall row's status (or a 401's License challenge): one set lookup a response;
        # a dont_obey_robotstxt request's wall too, never a robots.txt fetch's
        if response.status in WALL_STATUSES and not request.meta.get(M.ROBOTS_REQUEST):
            response = self.walls.process_response(request, response)  # raises for a wall
        if self.signals is None:
            return response
        return self.signals.response(request, response)

    def process_exception(
        self, request: Request, exception: BaseException, spider: Any = None
    ) -> Request | None:
        if self.signals is None:
            return None
        return self.signals.exception(request, exception)

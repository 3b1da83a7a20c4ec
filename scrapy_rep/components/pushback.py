"""``PushbackMiddleware``: the one page-status middleware. It reads a page's status through
the page status table (:data:`~scrapy_rep.core.pushback.DEFAULT_PAGE_ACTIONS`): a wall row's
response goes to the crawl's :class:`~scrapy_rep.crawl.walls.LicenceWalls`, the others (429,
503, 401/403 blocks) to its :class:`~scrapy_rep.crawl.pushback.PageSignals`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy_rep.core.walls import WALL_STATUSES
from scrapy_rep.crawl import graph
from scrapy_rep.crawl import meta as M

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

#: between HttpCompressionMiddleware (590) and RedirectMiddleware (600): a response reaches
#: this middleware's ``process_response`` before MetaRefreshMiddleware (580) follows a
#: wall's (or a 429's) meta refresh, before HttpCompressionMiddleware inflates its body, and
#: before RetryMiddleware (550) and the spider; after a redirect is followed


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

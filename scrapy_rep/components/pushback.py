"""``PushbackMiddleware``: a page's 429/503 (and 401/403 walls) taken before RetryMiddleware
and handed to the crawl's :class:`~scrapy_rep.crawl.pushback.PageSignals`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy_rep.crawl import graph

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

#: above RetryMiddleware (550) and AjaxCrawlMiddleware (560), below MetaRefreshMiddleware
#: (580): a response reaches this middleware's ``process_response`` before RetryMiddleware's
PUSHBACK_PRIORITY = 570


class PushbackMiddleware:
    """Takes a page's 429/503 (and 401/403 walls) before RetryMiddleware (see
    :mod:`scrapy_rep.crawl.pushback`)."""

    def __init__(self, crawler: Crawler) -> None:
        self.signals = graph.of(crawler).pushback

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PushbackMiddleware:
        return cls(crawler)

    def process_response(
        self, request: Request, response: Response, spider: Any = None
    ) -> Request | Response:
        if self.signals is None:
            return response
        return self.signals.response(request, response)

    def process_exception(
        self, request: Request, exception: BaseException, spider: Any = None
    ) -> Request | None:
        if self.signals is None:
            return None
        return self.signals.exception(request, exception)

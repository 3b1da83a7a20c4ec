"""The spider middleware that applies page directives to what a callback yields
(docs/page-directives.md). Requests dropped here never reach the scheduler, so no
errback fires; the stats and the audit log say what happened.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from scrapy import Request
from scrapy.exceptions import NotConfigured
from scrapy.http import HtmlResponse
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.response import get_base_url

from scrapy_rep.core.decision import page_drop
from scrapy_rep.core.directives import (
    NO_DIRECTIVES,
    PageDirectives,
    link_key,
    meta_robots,
    nofollow_only,
    page_directives,
)
from scrapy_rep.core.origin import origin_or_none
from scrapy_rep.crawl import meta as M
from scrapy_rep.crawl.telemetry import Telemetry
from scrapy_rep.runtime.settings import RepSettings, is_enabled

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from scrapy_rep.core.uses import UseAnswer


_REL_SAID = '<a rel="nofollow">'


@dataclass
class Page:
    """What one response's output is filtered by."""

    directives: PageDirectives
    rel: bool  # REP_REL_NOFOLLOW applies (an HTML page)
    nofollow_only: frozenset[str] | None = None  # computed at the first request yielded
    #: a declared use the response refuses, under REP_USE_ACTION = "drop": its items go
    refused: UseAnswer | None = None
    #: the response of a dont_obey_robotstxt request: its items are never dropped here
    keep_items: bool = False


class PageDirectivesMiddleware:
    """Applies ``nofollow``, ``noindex`` and ``rel=nofollow`` to what a page's callback yields."""

    def __init__(self, crawler: Crawler) -> None:
        if not is_enabled(crawler.settings.get):
            raise NotConfigured("REP_ENABLED is off")
        config = RepSettings.of(crawler)
        if not config.page_directives and not config.uses:
            raise NotConfigured("REP_PAGE_DIRECTIVES is off and REP_USES declares no use")
        self.crawler = crawler
        self.directives = config.page_directives
        self.telemetry = Telemetry.of(crawler)  # the crawl's one sink
        self.token = config.token
        self.keep_noindex = config.page_noindex_action == "keep"
        self.rel_nofollow = config.rel_nofollow
        self.clock: Callable[[], float] = config.clock.now
        # read in process_spider_input, used in process_spider_output; gone with the response
        self._pages: WeakKeyDictionary[Response, Page | None] = WeakKeyDictionary()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PageDirectivesMiddleware:
        return cls(crawler)

    def process_spider_input(self, response: Response, spider: Any = None) -> None:
        """Read the page before its callback, and show the callback what it says."""
        page = self._read(response)
        self._pages[response] = page
        meta = response.meta
        if page is not None and page.directives is not NO_DIRECTIVES:
            meta[M.PAGE] = page.directives.to_dict()
        elif M.PAGE in meta:  # copied from another page's meta: not this page's
            del meta[M.PAGE]

    def process_spider_output(
        self, response: Response, result: Iterable[Any], spider: Any = None
    ) -> Iterator[Any]:
        page = self._page(response)
        for output in result:
            if page is None or self._allow(response, page, output):
                yield output

    async def process_spider_output_async(
        self, response: Response, result: AsyncIterator[Any], spider: Any = None
    ) -> AsyncIterator[Any]:
        page = self._page(response)
        async for output in result:
            if page is None or self._allow(response, page, output):
                yield output

    def _page(self, response: Response) -> Page | None:
        """Read once per response: output recovered from an exception comes here again."""
        try:
            return self._pages[response]
        except KeyError:  # an errback's output: process_spider_input did not see it
            page = self._pages[response] = self._read(response)
            return page

    def _read(self, response: Response) -> Page | None:
        """What filters this response's output; None when nothing does."""
        if _exempt(response):
            return None
        page = self._read_page(response)
        if page is not None and response.request is not None:
            page.keep_items = bool(response.request.meta.get(M.DONT_OBEY))
        return page

    def _read_page(self, response: Response) -> Page | None:
        """What the page says (the uses' subclass adds their answers)."""
        return self._read_directives(response, None) if self.directives else None

    def _read_directives(
        self, response: Response, metas: list[tuple[str, str]] | None
    ) -> Page | None:
        """What the page directives filter in this response's output; None when nothing."""
        html = isinstance(response, HtmlResponse)
        if html and M.BROWSER_INITIAL_METAS in response.meta:  # a render: its first HTML too
            metas = _with_initial(response, metas, self.token)
        directives = page_directives(
            self.token,
            self.clock(),
            headers=response.headers.getlist(b"X-Robots-Tag"),
            robots_tag=response.headers.getlist(b"Robots-Tag"),  # draft-illyes-repext
            body=response.body if html and metas is None else None,
            metas=metas,
        )
        rel = self.rel_nofollow and html
        if directives is NO_DIRECTIVES:
            return Page(directives, rel) if rel else None
        if not html and _is_sitemap(response):
            return None
        self.telemetry.page_said(response.url, self.token, directives)
        return Page(directives, rel)  # noarchive, nosnippet alone: shown to the callback only

    def _allow(self, response: Response, page: Page, output: Any) -> bool:
        directives = page.directives
        if isinstance(output, Request):
            if output.meta.get("dont_obey_robotstxt"):
                return True
            if directives.nofollow:
                said = directives.source("nofollow")
                why = f"the page {response.url} says nofollow ({said})"
                self._drop(output, "page-nofollow", said, why)
                return False
            if page.rel and isinstance(response, HtmlResponse):
                if page.nofollow_only is None:
                    page.nofollow_only = nofollow_only(
                        response.selector.root, get_base_url(response), response.encoding
                    )
                if link_key(output.url) in page.nofollow_only:
                    why = f"the page {response.url} links to it only with rel=nofollow"
                    self._drop(output, "link-nofollow", _REL_SAID, why)
                    return False
            return True
        if page.keep_items:  # dont_obey_robotstxt: what the page says drops none of its items
            return True
        if not directives.noindex:
            if page.refused is not None:
                self._drop_item(response, page.refused)
                return False
            return True
        self.telemetry.noindex_item(response.url, directives.source("noindex"), self.keep_noindex)
        return self.keep_noindex

    def _drop_item(self, response: Response, refused: UseAnswer) -> None:
        """An item of a response that refuses a declared use (only the subclass's)."""

    def _drop(self, request: Request, reason: str, said: str, detail: str) -> None:
        origin = origin_or_none(request.url)
        record = page_drop(origin or "", self.token, request.url, reason, said, detail)
        self.telemetry.final(origin, record)  # stats, the close report, the audit log


def _with_initial(
    response: Response, metas: list[tuple[str, str]] | None, token: str
) -> list[tuple[str, str]]:
    """A rendered page's robots meta tags: the final DOM's and its initial HTML's (kept by the
    browser guard), so a script that removes a ``nofollow`` does not undo it."""
    final = metas if metas is not None else meta_robots(response.body, token)
    return [*final, *response.meta[M.BROWSER_INITIAL_METAS]]


def _exempt(response: Response) -> bool:
    """Responses to robots.txt and sitemap requests: page directives do not govern them."""
    request = response.request
    meta = request.meta if request is not None else {}
    if meta.get(M.ROBOTS_REQUEST) or meta.get(M.SITEMAP):
        return True
    # (the parse only for a URL that may be one: urlparse_cached keeps a weak entry per response)
    if "/robots.txt" in response.url and urlparse_cached(response).path == "/robots.txt":
        return True
    callback = getattr(request, "callback", None)
    return getattr(callback, "__name__", None) == "_parse_sitemap"  # SitemapSpider's


def _is_sitemap(response: Response) -> bool:
    """A sitemap fetched by a callback of the spider's own (sitemaps often say ``noindex``)."""
    start = response.body[:2048]
    if start[:2] == b"\x1f\x8b":  # gzipped: only the name can tell
        return "sitemap" in urlparse_cached(response).path.lower()
    return b"<urlset" in start or b"<sitemapindex" in start

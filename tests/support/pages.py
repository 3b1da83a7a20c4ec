"""Pages for the page-directive crawls: a spider that follows links and keeps items, the
pages it reads, and the forms a page says ``noindex``/``nofollow`` in.

``FORMS`` and ``REL_PAGE`` serve the real crawls (tests/integration) and the
middleware's in-process tests (tests/test_page_directives.py) alike.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse

from scrapy.http import Response, TextResponse

from tests.support.crawl import CrawlResult, ItemSpider, crawl, item_urls
from tests.support.fakesite import Origin, Reply

#: (how the page says it, noindex, nofollow)
FORMS: list[tuple[str, dict[str, Any], bool, bool]] = [
    ("meta robots", {"head": '<meta name="robots" content="noindex, nofollow">'}, True, True),
    ("meta token", {"head": '<meta name="TestBot" content="nofollow">'}, False, True),
    ("meta other", {"head": '<meta name="otherbot" content="noindex, nofollow">'}, False, False),
    ("header", {"headers": {"X-Robots-Tag": "noindex"}}, True, False),
    ("header prefix", {"headers": {"X-Robots-Tag": "testbot: nofollow"}}, False, True),
    ("header other", {"headers": {"X-Robots-Tag": "otherbot: noindex, nofollow"}}, False, False),
    ("none", {"headers": {"X-Robots-Tag": "NONE"}}, True, True),
    (
        "unavailable_after past",
        {"headers": {"X-Robots-Tag": "unavailable_after: Sat, 01 Jan 2000 00:00:00 GMT"}},
        True,
        False,
    ),
    (
        "unavailable_after future",
        {"head": '<meta name="robots" content="unavailable_after: 2999-01-01">'},
        False,
        False,
    ),
    (
        "unavailable_after invalid",
        {"headers": {"X-Robots-Tag": "unavailable_after: someday, nofollow"}},
        False,
        True,
    ),
    (
        "combination",
        {
            "head": '<meta name="robots" content="index, follow">',
            "extra_headers": [
                ("X-Robots-Tag", "otherbot: none"),
                ("X-Robots-Tag", "testbot: noindex"),
            ],
        },
        True,
        False,
    ),
]

REL_PAGE = (
    '<a href="/sponsored" rel="nofollow sponsored">ad</a>'
    '<a href="/both#x" rel="nofollow">both</a><a href="/both">both again</a>'
    '<a href="/ugc" rel="ugc">ugc</a>'
    '<map><area href="/area" rel="nofollow"></map>'
    '<a href="/exempt-nf" rel="nofollow">exempt</a>'
)


class PageSpider(ItemSpider):
    """An item per page; follows every ``<a href>`` and ``<area href>``, and ``also[path]``.

    URLs containing ``exempt`` are requested with ``dont_obey_robotstxt``.
    """

    name = "pages"

    def __init__(self, urls: Any = (), also: dict[str, list[str]] | None = None, **kw: Any):
        super().__init__(urls, follow=True, **kw)
        self.also = also or {}
        self.page_meta: dict[str, Any] = {}

    def parse(self, response: Response) -> Iterator[Any]:
        self.result.downloaded.append(response.url)
        self.page_meta[response.url] = response.meta.get("rep_page")
        yield self.item(response)
        hrefs = response.css("a::attr(href), area::attr(href)").getall() if _html(response) else []
        for href in [*hrefs, *self.also.get(urlparse(response.url).path, [])]:
            request = self.request(response.urljoin(href))
            if "exempt" in request.url:
                request.meta["dont_obey_robotstxt"] = True
            yield request


def _html(response: Response) -> bool:
    return isinstance(response, TextResponse) and hasattr(response, "css")


def page(head: str = "", links: tuple[str, ...] = (), **reply: Any) -> Reply:
    anchors = "".join(f'<a href="{href}">{href}</a>' for href in links)
    body = f"<html><head><title>t</title>{head}</head><body>{anchors}</body></html>"
    return Reply(body=body.encode(), **reply)


def paths(result: CrawlResult) -> list[str]:
    return sorted(urlparse(url).path for url in result.downloaded)


def items(result: CrawlResult) -> list[str]:
    return sorted(urlparse(url).path for url in item_urls(result))


def spider_of(result: CrawlResult) -> PageSpider:
    assert result.crawler is not None
    spider = result.crawler.spider
    assert isinstance(spider, PageSpider)
    return spider


async def crawl_pages(
    origin: Origin, settings: dict[str, Any] | None = None, **kw: Any
) -> CrawlResult:
    return await crawl([origin.url_for("/")], settings, spider=PageSpider, **kw)

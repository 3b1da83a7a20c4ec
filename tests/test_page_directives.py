"""PageDirectivesMiddleware in-process: Scrapy's own responses, through a real crawler.

The crawler is Scrapy's, from ``get_crawler()`` with the add-on and a spider;
the responses are real ``HtmlResponse``/``TextResponse`` objects made here, and
the middleware is called as Scrapy's scraper calls it (``process_spider_input``
before the callback, ``process_spider_output`` on what it yields). Nothing is
fetched. The same forms in real crawls: ``tests/integration/test_page_directives.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import Any

import pytest
import pytest_twisted
import scrapy
from scrapy import Spider
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Headers, HtmlResponse, Response, TextResponse, XmlResponse
from scrapy.utils.test import get_crawler

from scrapy_rep.components.page import PageDirectivesMiddleware
from scrapy_rep.crawl.parts import PAGE_DIRECTIVES_PRIORITY
from scrapy_rep.crawl.telemetry import Telemetry
from scrapy_rep.runtime.settings import SettingError
from tests.support.crawl import BASE_SETTINGS
from tests.support.pages import FORMS, REL_PAGE

SITE = "http://127.0.0.1:1"


class Pages(Spider):
    name = "pages"


def crawler_of(**settings: Any) -> Crawler:
    """Scrapy's crawler with the add-on, its spider made as a crawl makes it."""
    crawler = get_crawler(Pages, settings_dict={**BASE_SETTINGS, **settings})
    crawler.spider = Pages.from_crawler(crawler)
    return crawler


def middleware_of(crawler: Crawler) -> PageDirectivesMiddleware:
    return PageDirectivesMiddleware.from_crawler(crawler)


def _middleware(**settings: Any) -> PageDirectivesMiddleware:
    return middleware_of(crawler_of(**settings))


def html(
    path: str,
    head: str = "",
    links: tuple[str, ...] = (),
    headers: dict[str, str] | None = None,
    extra_headers: Iterable[tuple[str, str]] = (),
    request: scrapy.Request | None = None,
    body: bytes | None = None,
    cls: type[TextResponse] = HtmlResponse,
) -> TextResponse:
    """A response to ``path`` as a site sends it (headers repeated as ``extra_headers``)."""
    url = SITE + path
    if body is None:
        anchors = "".join(f'<a href="{href}">{href}</a>' for href in links)
        body = f"<html><head><title>t</title>{head}</head><body>{anchors}</body></html>".encode()
    sent = Headers(headers or {})
    for name, value in extra_headers:
        sent.appendlist(name, value)
    return cls(url, body=body, headers=sent, request=request or scrapy.Request(url))


def scrape(
    middleware: PageDirectivesMiddleware, response: Response, output: list[Any]
) -> list[Any]:
    """What the spider gets to keep of ``output``, its callback's for ``response``."""
    spider = middleware.crawler.spider
    middleware.process_spider_input(response, spider)
    return list(middleware.process_spider_output(response, output, spider))


def stats(crawler: Crawler) -> dict[str, Any]:
    Telemetry.of(crawler).flush()
    assert crawler.stats is not None
    return {k: v for k, v in crawler.stats.get_stats().items() if k.startswith("rep/")}


def follow(*paths: str) -> list[scrapy.Request]:
    return [scrapy.Request(SITE + path) for path in paths]


# -- every form a page says it in --------------------------------------------------------------


@pytest.mark.parametrize(("form", "reply", "noindex", "nofollow"), FORMS, ids=[f[0] for f in FORMS])
def test_every_directive_form(
    form: str, reply: dict[str, Any], noindex: bool, nofollow: bool
) -> None:
    crawler = crawler_of()
    middleware = middleware_of(crawler)
    response = html("/p", links=("/p-child",), **reply)
    item = {"url": response.url}
    (child,) = follow("/p-child")
    kept = scrape(middleware, response, [item, child])
    assert (item in kept) is not noindex
    assert (child in kept) is not nofollow
    counted = stats(crawler)
    assert counted.get("rep/page/noindex", 0) == int(noindex)
    assert counted.get("rep/page/nofollow", 0) == int(nofollow)
    assert counted.get("rep/dropped/page-nofollow", 0) == int(nofollow)
    assert counted.get("rep/page/invalid_date", 0) == int(form == "unavailable_after invalid")
    said = response.meta.get("rep_page")
    if noindex or nofollow:
        assert said is not None and said["noindex"] is noindex and said["nofollow"] is nofollow


def test_the_callback_sees_this_pages_directives_not_another_ones() -> None:
    middleware = _middleware()
    request = scrapy.Request(SITE + "/plain", meta={"rep_page": {"nofollow": True}})
    response = html("/plain", request=request)
    (child,) = follow("/child")
    assert scrape(middleware, response, [child]) == [child]
    assert "rep_page" not in response.meta  # copied from the page before: taken away


def test_a_pdf_says_it_in_its_headers() -> None:
    crawler = crawler_of()
    response = TextResponse(
        SITE + "/doc.pdf",
        body=b"%PDF-1.4 robots noindex",
        headers=Headers(
            {"Content-Type": "application/pdf", "X-Robots-Tag": ["noarchive", "testbot: none"]}
        ),
        request=scrapy.Request(SITE + "/doc.pdf"),
    )
    assert scrape(middleware_of(crawler), response, [{"url": "x"}, *follow("/from-doc")]) == []
    meta = response.meta["rep_page"]
    assert meta["noarchive"] and meta["noindex"] and meta["nofollow"]
    assert stats(crawler)["rep/page/noindex/items-dropped"] == 1


# -- noindex, rel=nofollow -----------------------------------------------------------------------


@pytest.mark.parametrize("action", ["drop", "keep"])
def test_noindex_items_dropped_or_kept(action: str) -> None:
    crawler = crawler_of(REP_PAGE_NOINDEX_ACTION=action)
    response = html("/secret", '<meta name="robots" content="noindex">')
    item, (child,) = {"url": response.url}, follow("/secret-child")
    kept = scrape(middleware_of(crawler), response, [item, child])
    assert kept == ([item, child] if action == "keep" else [child])  # noindex alone follows
    counted = stats(crawler)
    assert counted["rep/page/noindex"] == 1
    assert counted.get("rep/page/noindex/items-kept", 0) == int(action == "keep")
    assert counted.get("rep/page/noindex/items-dropped", 0) == int(action == "drop")


@pytest.mark.parametrize("rel_nofollow", [False, True])
def test_rel_nofollow_on_and_off(rel_nofollow: bool) -> None:
    crawler = crawler_of(REP_REL_NOFOLLOW=rel_nofollow)
    response = html("/", body=f"<html><body>{REL_PAGE}</body></html>".encode())
    asked = follow("/sponsored", "/both", "/ugc", "/area")
    exempt = scrapy.Request(SITE + "/exempt-nf", meta={"dont_obey_robotstxt": True})
    kept = scrape(middleware_of(crawler), response, [*asked, exempt])
    only_nofollow = {SITE + "/sponsored", SITE + "/area"}
    expected = [r for r in asked if not rel_nofollow or r.url not in only_nofollow]
    assert kept == [*expected, exempt]
    counted = stats(crawler)
    assert counted.get("rep/dropped/link-nofollow", 0) == (2 if rel_nofollow else 0)
    assert counted.get("rep/page/nofollow", 0) == 0


# -- what is not governed ------------------------------------------------------------------------


def test_switched_off_there_is_no_middleware() -> None:
    with pytest.raises(NotConfigured):
        _middleware(REP_PAGE_DIRECTIVES=False)


def test_dont_obey_robotstxt_requests_and_the_items_of_their_pages_are_kept() -> None:
    middleware = _middleware()
    response = html("/p", '<meta name="robots" content="none">')
    exempt = scrapy.Request(SITE + "/exempt-1", meta={"dont_obey_robotstxt": True})
    assert scrape(middleware, response, [exempt, *follow("/child")]) == [exempt]
    own = html(
        "/q",
        '<meta name="robots" content="none">',
        request=scrapy.Request(SITE + "/q", meta={"dont_obey_robotstxt": True}),
    )
    item = {"url": own.url}
    assert scrape(middleware, own, [item]) == [item]


def test_robots_txt_and_sitemap_responses_are_not_subject() -> None:
    crawler = crawler_of()
    middleware = middleware_of(crawler)
    robots = TextResponse(
        SITE + "/robots.txt",
        body=b"User-agent: *\nAllow: /\n",
        headers=Headers({"X-Robots-Tag": "none"}),
        request=scrapy.Request(SITE + "/robots.txt"),
    )
    (child,) = follow("/from-robots")
    assert scrape(middleware, robots, [child]) == [child]
    urlset = (
        b'<?xml version="1.0" encoding="UTF-8"?>'
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"></urlset>'
    )
    sitemap = XmlResponse(
        SITE + "/sitemap.xml",
        body=urlset,
        headers=Headers({"X-Robots-Tag": "noindex, nofollow"}),
        request=scrapy.Request(SITE + "/sitemap.xml"),
    )
    (listed,) = follow("/from-sitemap")
    assert scrape(middleware, sitemap, [listed]) == [listed]
    assert not [key for key in stats(crawler) if key.startswith("rep/page")]


# -- the hooks: an errback's output, the asynchronous form --------------------------------------


def test_an_errbacks_output_is_filtered_without_process_spider_input() -> None:
    crawler = crawler_of()
    middleware = middleware_of(crawler)
    gone = html("/gone", headers={"X-Robots-Tag": "nofollow"})
    (after,) = follow("/after-error?from=gone")
    assert list(middleware.process_spider_output(gone, [after])) == []
    assert stats(crawler)["rep/dropped/page-nofollow"] == 1


@pytest_twisted.ensureDeferred
async def test_the_asynchronous_output_hook_filters_alike() -> None:
    middleware = _middleware()
    response = html("/p", '<meta name="robots" content="noindex, nofollow">')
    (child,) = follow("/c")

    async def output() -> AsyncIterator[Any]:
        yield {"url": response.url}
        yield child

    middleware.process_spider_input(response)
    kept = [o async for o in middleware.process_spider_output_async(response, output())]
    assert kept == []


# -- settings -------------------------------------------------------------------------------------


def test_addon_enables_the_spider_middleware() -> None:
    crawler = get_crawler(settings_dict=BASE_SETTINGS)
    found = crawler.settings.getdict("SPIDER_MIDDLEWARES")
    assert found[PageDirectivesMiddleware] == PAGE_DIRECTIVES_PRIORITY


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("REP_PAGE_NOINDEX_ACTION", "hide"),
        ("REP_REL_NOFOLLOW", "perhaps"),
        ("REP_PAGE_DIRECTIVES", 2),
    ],
)
def test_bad_settings_name_the_setting_and_value(name: str, value: Any) -> None:
    with pytest.raises(SettingError, match=rf"{name}.*{value!r}"):
        _middleware(**{name: value})


def test_synchronous_output_hook_filters_too() -> None:
    middleware = _middleware()
    request = scrapy.Request("http://127.0.0.1:1/p")
    body = b'<html><head><meta name="robots" content="none"></head><body></body></html>'
    response = HtmlResponse(request.url, body=body, request=request)
    output = [{"url": request.url}, scrapy.Request("http://127.0.0.1:1/c")]
    keep = scrapy.Request("http://127.0.0.1:1/k", meta={"dont_obey_robotstxt": True})
    assert list(middleware.process_spider_output(response, [*output, keep])) == [keep]
    untouched = HtmlResponse(request.url, body=b"<html></html>", request=request)
    assert list(middleware.process_spider_output(untouched, output)) == output

"""Page-level directives in real crawls on loopback, with the add-on.

Each test asserts what the server saw (hits) and what the spider's callbacks
and the item pipelines got, plus the stats that say why.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
import pytest_twisted
import scrapy
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.http import HtmlResponse, Response, TextResponse
from scrapy.spiders import SitemapSpider
from scrapy.utils.test import get_crawler

from scrapy_rep.adapter.page import PageDirectivesMiddleware
from scrapy_rep.adapter.telemetry import Telemetry
from scrapy_rep.addon import PAGE_DIRECTIVES_PRIORITY
from scrapy_rep.cli.explain import explain
from scrapy_rep.core.decision import Decision
from scrapy_rep.runtime.settings import SettingError
from tests.support.audit import records
from tests.support.crawl import BASE_SETTINGS, CrawlResult, ListSpider, crawl
from tests.support.fakesite import FakeSite, Origin, Reply


class PageSpider(ListSpider):
    """An item per page; follows every ``<a href>`` and ``<area href>``, and ``also[path]``.

    URLs containing ``exempt`` are requested with ``dont_obey_robotstxt``.
    """

    name = "pages"

    def __init__(self, urls: Any = (), also: dict[str, list[str]] | None = None, **kw: Any):
        super().__init__(urls, follow=True, **kw)
        self.also = also or {}
        self.page_meta: dict[str, Any] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> PageSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.scraped, signal=signals.item_scraped)
        return spider

    def scraped(self, item: Any) -> None:
        self.result.items.append(item["url"])

    def parse(self, response: Response) -> Iterator[Any]:
        self.result.downloaded.append(response.url)
        self.page_meta[response.url] = response.meta.get("rep_page")
        yield {"url": response.url}
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
    return sorted(urlparse(url).path for url in result.items)


def spider_of(result: CrawlResult) -> PageSpider:
    assert result.crawler is not None
    spider = result.crawler.spider
    assert isinstance(spider, PageSpider)
    return spider


async def crawl_pages(
    origin: Origin, settings: dict[str, Any] | None = None, **kw: Any
) -> CrawlResult:
    return await crawl([origin.url_for("/")], settings, spider=PageSpider, **kw)


# -- nofollow ------------------------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_nofollow_page_links_are_not_crawled_while_a_normal_pages_are(
    site: FakeSite,
) -> None:
    a = site.add("a")
    a.links("/", ["/nofollow", "/normal"])
    a.page("/nofollow", page('<meta name="robots" content="nofollow">', ("/nf-child",)))
    a.links("/normal", ["/normal-child"])
    result = await crawl_pages(a)
    assert a.hits("/nf-child") == 0
    assert a.hits("/normal-child") == 1
    assert paths(result) == ["/", "/nofollow", "/normal", "/normal-child"]
    assert items(result) == paths(result)  # nofollow keeps the page's own items
    assert result.stat("rep/page/nofollow") == 1
    assert result.stat("rep/dropped/page-nofollow") == 1
    assert result.stat("rep/page/noindex") == 0
    assert result.dropped == {}  # no errback fires for a spider-middleware drop
    assert spider_of(result).page_meta[a.url_for("/nofollow")]["nofollow"] is True
    assert spider_of(result).page_meta[a.url_for("/normal")] is None
    # counted where every drop counts: the close report's per-origin counters
    assert result.crawler is not None
    assert Telemetry.of(result.crawler).counts.total.dropped == {"page-nofollow": 1}


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


@pytest.mark.parametrize(("form", "reply", "noindex", "nofollow"), FORMS, ids=[f[0] for f in FORMS])
@pytest_twisted.ensureDeferred
async def test_every_directive_form(
    site: FakeSite, form: str, reply: dict[str, Any], noindex: bool, nofollow: bool
) -> None:
    a = site.add("a")
    a.links("/", ["/p"])
    a.page("/p", page(links=("/p-child",), **reply))
    result = await crawl_pages(a)
    assert a.hits("/p") == 1
    assert a.hits("/p-child") == (0 if nofollow else 1)
    assert ("/p" in items(result)) is not noindex
    assert "/p" in paths(result)  # the callback always gets the page
    assert result.stat("rep/page/noindex") == int(noindex)
    assert result.stat("rep/page/nofollow") == int(nofollow)
    assert result.stat("rep/page/invalid_date") == int(form == "unavailable_after invalid")


@pytest_twisted.ensureDeferred
async def test_x_robots_tag_on_a_pdf(site: FakeSite) -> None:
    a = site.add("a")
    a.links("/", ["/doc.pdf", "/plain.pdf"])
    pdf = {"Content-Type": "application/pdf"}
    a.page(
        "/doc.pdf",
        Reply(
            body=b"%PDF-1.4 robots noindex",
            headers=pdf,
            extra_headers=[("X-Robots-Tag", "noarchive"), ("X-Robots-Tag", "testbot: none")],
        ),
    )
    a.page("/plain.pdf", Reply(body=b"%PDF-1.4", headers=pdf))
    also = {"/doc.pdf": ["/from-doc"], "/plain.pdf": ["/from-plain"]}
    result = await crawl_pages(a, also=also)
    assert a.hits("/doc.pdf") == 1 and a.hits("/from-doc") == 0
    assert a.hits("/from-plain") == 1
    assert "/doc.pdf" not in items(result) and "/plain.pdf" in items(result)
    meta = spider_of(result).page_meta[a.url_for("/doc.pdf")]
    assert meta["noarchive"] and meta["noindex"] and meta["nofollow"]
    assert result.stat("rep/dropped/page-nofollow") == 1
    assert result.stat("rep/page/noindex/items-dropped") == 1


# -- noindex -------------------------------------------------------------------------------------


@pytest.mark.parametrize("action", ["drop", "keep"])
@pytest_twisted.ensureDeferred
async def test_noindex_items_dropped_or_kept(site: FakeSite, action: str) -> None:
    a = site.add("a")
    a.links("/", ["/secret", "/public"])
    a.page("/secret", page('<meta name="robots" content="noindex">', ("/secret-child",)))
    result = await crawl_pages(a, {"REP_PAGE_NOINDEX_ACTION": action})
    assert a.hits("/secret-child") == 1  # noindex alone still follows
    assert paths(result) == ["/", "/public", "/secret", "/secret-child"]
    expected = ["/", "/public", "/secret-child"] + (["/secret"] if action == "keep" else [])
    assert items(result) == sorted(expected)
    assert result.stat("rep/page/noindex") == 1
    kept, dropped = (1, 0) if action == "keep" else (0, 1)
    assert result.stat("rep/page/noindex/items-kept") == kept
    assert result.stat("rep/page/noindex/items-dropped") == dropped


# -- rel=nofollow --------------------------------------------------------------------------------

REL_PAGE = (
    '<a href="/sponsored" rel="nofollow sponsored">ad</a>'
    '<a href="/both#x" rel="nofollow">both</a><a href="/both">both again</a>'
    '<a href="/ugc" rel="ugc">ugc</a>'
    '<map><area href="/area" rel="nofollow"></map>'
    '<a href="/exempt-nf" rel="nofollow">exempt</a>'
)


@pytest.mark.parametrize("rel_nofollow", [False, True])
@pytest_twisted.ensureDeferred
async def test_rel_nofollow_on_and_off(site: FakeSite, rel_nofollow: bool) -> None:
    a = site.add("a")
    a.page("/", Reply(body=f"<html><body>{REL_PAGE}</body></html>".encode()))
    result = await crawl_pages(a, {"REP_REL_NOFOLLOW": rel_nofollow})
    assert a.hits("/both") == 1 and a.hits("/ugc") == 1
    assert a.hits("/exempt-nf") == 1  # dont_obey_robotstxt
    for only_nofollow in ("/sponsored", "/area"):
        assert a.hits(only_nofollow) == (0 if rel_nofollow else 1)
    assert result.stat("rep/dropped/link-nofollow") == (2 if rel_nofollow else 0)
    assert result.stat("rep/page/nofollow") == 0
    assert result.dropped == {}


# -- the switch, the exemptions ------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_switched_off(site: FakeSite) -> None:
    a = site.add("a")
    a.links("/", ["/p"])
    a.page("/p", page('<meta name="robots" content="none">', ("/p-child",)))
    result = await crawl_pages(a, {"REP_PAGE_DIRECTIVES": False, "REP_REL_NOFOLLOW": True})
    assert a.hits("/p-child") == 1
    assert "/p" in items(result)
    assert not [key for key in result.stats if key.startswith("rep/page")]
    assert spider_of(result).page_meta[a.url_for("/p")] is None


@pytest_twisted.ensureDeferred
async def test_dont_obey_robotstxt_requests_are_kept(site: FakeSite) -> None:
    a = site.add("a")
    a.links("/", ["/p"])
    a.page("/p", page('<meta name="robots" content="nofollow">', ("/exempt-1", "/child")))
    result = await crawl_pages(a)
    assert a.hits("/exempt-1") == 1
    assert a.hits("/child") == 0
    assert result.stat("rep/dropped/page-nofollow") == 1


@pytest_twisted.ensureDeferred
async def test_robots_txt_and_sitemap_responses_are_not_subject(site: FakeSite) -> None:
    a = site.add("a")
    sitemap = a.url_for("/sitemap.xml")
    a.robots(
        Reply(
            body=f"User-agent: *\nAllow: /\nSitemap: {sitemap}\n".encode(),
            headers={"X-Robots-Tag": "none"},
        )
    )
    urlset = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>{a.url_for('/from-sitemap')}</loc></url></urlset>"
    )
    a.page(
        "/sitemap.xml",
        Reply(
            body=urlset.encode(),
            headers={"Content-Type": "application/xml", "X-Robots-Tag": "noindex, nofollow"},
        ),
    )
    result = await crawl([a.robots_url], spider=Sitemaps)
    assert a.hits("/from-sitemap") == 1
    assert result.downloaded == [a.url_for("/from-sitemap")]
    assert result.stat("rep/dropped/page-nofollow") == 0
    assert result.stat("rep/page/nofollow") == 0


class Sitemaps(SitemapSpider):
    name = "sitemaps"

    def __init__(self, urls: Any = (), result: CrawlResult | None = None, **kw: Any) -> None:
        self.sitemap_urls = list(urls)
        super().__init__(**kw)
        self.result = result or CrawlResult()

    def parse(self, response: Response) -> None:
        self.result.downloaded.append(response.url)


# -- the audit log -------------------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_drops_are_decision_records_in_the_audit_log(site: FakeSite, tmp_path: Path) -> None:
    a = site.add("a")
    a.links("/", ["/p", "/r"])
    a.page("/p", page(links=("/p-child",), headers={"X-Robots-Tag": "testbot: nofollow"}))
    a.page("/r", Reply(body=b'<html><body><a href="/ad" rel="nofollow">ad</a></body></html>'))
    log = tmp_path / "decisions.jsonl"
    result = await crawl_pages(a, {"REP_DECISION_LOG": str(log), "REP_REL_NOFOLLOW": True})
    assert a.hits("/p-child") == 0 and a.hits("/ad") == 0
    page_drops = {r["url"]: r for r in records(log, "decision") if r["policy_status"] == "page"}
    assert set(page_drops) == {a.url_for("/p-child"), a.url_for("/ad")}
    fields = set(Decision.__dataclass_fields__)
    child = page_drops[a.url_for("/p-child")]
    assert set(child) == fields | {"type", "at", "crawl"}
    assert child["action"] == "drop" and child["reason"] == "page-nofollow"
    assert child["product_token"] == "testbot" and child["origin"] == a.url
    assert child["matched_rule"] == "X-Robots-Tag (testbot:): nofollow"
    assert a.url_for("/p") in child["detail"]
    assert page_drops[a.url_for("/ad")]["reason"] == "link-nofollow"
    assert result.stat("rep/dropped/link-nofollow") == 1
    action, lines = explain(str(log), a.url_for("/p-child"))
    assert action == "drop"
    assert "  directive X-Robots-Tag (testbot:): nofollow" in lines
    assert not [line for line in lines if line.startswith("  policy")]


# -- the middleware by itself: settings, the synchronous hook ------------------------------------


def _middleware(**settings: Any) -> PageDirectivesMiddleware:
    crawler = get_crawler(settings_dict={**BASE_SETTINGS, **settings})
    return PageDirectivesMiddleware.from_crawler(crawler)


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


class ErrbackSpider(PageSpider):
    """Its errback follows up on an HTTP error page with another request."""

    name = "errbacks"

    def request(self, url: str | scrapy.Request) -> scrapy.Request:
        return super().request(url).replace(errback=self.follow_up)

    def follow_up(self, failure: Any) -> Iterator[scrapy.Request]:
        response = failure.value.response
        self.result.errors[response.url] = type(failure.value).__name__
        after = f"/after-error?from={urlparse(response.url).path.strip('/')}"
        yield scrapy.Request(response.urljoin(after), callback=self.parse)


@pytest_twisted.ensureDeferred
async def test_errback_output_of_a_nofollow_error_page_is_filtered(site: FakeSite) -> None:
    a = site.add("a")
    a.links("/", ["/gone", "/missing"])
    a.page("/gone", Reply(status=404, body=b"gone", headers={"X-Robots-Tag": "nofollow"}))
    a.page("/missing", Reply(status=410, body=b"missing"))
    a.links("/after-error", [])
    result = await crawl([a.url_for("/")], spider=ErrbackSpider)
    assert sorted(result.errors) == [a.url_for("/gone"), a.url_for("/missing")]
    assert a.hits("/after-error?from=missing") == 1
    assert a.hits("/after-error?from=gone") == 0
    assert result.stat("rep/dropped/page-nofollow") == 1
    assert result.stat("rep/page/nofollow") == 1

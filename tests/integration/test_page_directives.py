"""Page-level directives in real crawls on loopback, with the add-on.

The middleware by itself, on responses made in the test: ``tests/test_page_directives.py``.

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
from scrapy.http import Response
from scrapy.spiders import SitemapSpider

from scrapy_rep.cli.explain import explain
from scrapy_rep.crawl.telemetry import Telemetry
from tests.support.audit import records
from tests.support.crawl import CrawlResult, crawl
from tests.support.decision import EVERY_FIELD
from tests.support.fakesite import FakeSite, Reply
from tests.support.pages import (
    FORMS,
    REL_PAGE,
    PageSpider,
    crawl_pages,
    items,
    page,
    paths,
    spider_of,
)

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
    fields = set(EVERY_FIELD)
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

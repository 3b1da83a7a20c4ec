"""Declared uses end to end: real crawls of a site that says what its content may be used for.

The site (``tests/support/use_site.py``) has a Cloudflare-style robots.txt
(``Content-Signal`` in ``User-Agent: *``), a tdmrep.json, ``Content-Usage``
and ``Content-Signal`` headers, ``noai`` pages and TDMRep headers and meta
tags. Each test judges by what the servers saw, what reached the item
pipelines, the stats and the audit log.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest_twisted
from scrapy.http import Response

from tests.support.audit import of, records
from tests.support.crawl import CrawlResult, ItemSpider, crawl
from tests.support.fakesite import FakeSite, Reply
from tests.support.use_site import AFTER, BEFORE, PRESS_PAGES, SHOP_PAGES, UseSite, build

TDMREP = "/.well-known/tdmrep.json"


class UseSpider(ItemSpider):
    """Follows every link; one item per page, carrying the page's ``rep_use``."""

    name = "uses"

    def __init__(self, urls: Any = (), **kw: Any) -> None:
        super().__init__(urls, follow=True, **kw)
        self.uses: dict[str, Any] = {}

    def item(self, response: Response) -> dict[str, Any]:
        self.uses[response.url] = response.meta.get("rep_use")
        return {"url": response.url, "rep_use": response.meta.get("rep_use")}


async def crawl_site(
    site: UseSite, tmp_path: Path, **settings: Any
) -> tuple[CrawlResult, list[dict[str, Any]]]:
    log = tmp_path / "audit.jsonl"
    result = await crawl(
        site.start_urls, {"REP_DECISION_LOG": str(log), **settings}, spider=UseSpider
    )
    return result, records(log)


def item_urls(result: CrawlResult) -> set[str]:
    return {item["url"] for item in result.items}


def press_pages(site: UseSite, *when: str) -> set[str]:
    return {site.press_url(path) for path, (_a, w, _h, _m) in PRESS_PAGES.items() if w in when}


def shop_pages(site: UseSite) -> set[str]:
    return {site.shop.url_for(path) for path in SHOP_PAGES}


@pytest_twisted.ensureDeferred
async def test_drop_fetches_and_yields_nothing_refused_for_the_declared_use(
    site: FakeSite, tmp_path: Path
) -> None:
    uses = build(site)
    result, audit = await crawl_site(uses, tmp_path, REP_USES=["train-ai"], REP_USE_ACTION="drop")
    refused_before = press_pages(uses, BEFORE) | {uses.shop.url_for("/")}
    # downloaded: never a page refused before fetching (the shop's file refuses everything)
    assert uses.pages_seen() == uses.every_page() - press_pages(uses, BEFORE) - shop_pages(uses)
    assert not uses.pages_seen() & refused_before
    assert uses.shop.hit_paths().count("/robots.txt") == 1
    # yielded: nothing of a page whose own response refuses
    assert item_urls(result) == {
        uses.press_url("/"),
        uses.press_url("/blog/plain"),
        uses.press_url("/articles/open/free"),
    }
    assert all(item["rep_use"] == {"train-ai": "allowed"} for item in result.items)
    assert result.stat("rep/page/items-dropped/use-refused") == len(press_pages(uses, AFTER))
    assert {url: reason for url, reason in result.dropped.items()} == dict.fromkeys(
        refused_before, "use-refused"
    )
    assert result.stat("rep/dropped/use-refused") == len(refused_before)
    # tdmrep.json: once, on the origin whose pages it had to answer for
    assert uses.press.hits(TDMREP) == 1
    assert uses.shop.hits(TDMREP) <= 1
    dropped = of(audit, "item_dropped")
    assert {r["url"] for r in dropped} == press_pages(uses, AFTER)
    reserved = result.decisions[uses.press_url("/articles/reserved")]
    assert reserved["uses"]["train-ai"] == {
        "answer": "refused",
        "source": "tdmrep.json location /articles/*",
    }


@pytest_twisted.ensureDeferred
async def test_record_fetches_everything_and_annotates_every_response_and_item(
    site: FakeSite, tmp_path: Path
) -> None:
    uses = build(site)
    result, audit = await crawl_site(uses, tmp_path, REP_USES=["train-ai", "search"])
    assert uses.pages_seen() == uses.every_page()
    assert not result.dropped
    assert item_urls(result) == uses.every_page()
    expected = (
        {uses.press_url("/"): "allowed"}
        | {url: "refused" for url in shop_pages(uses)}
        | {uses.press_url(path): answer for path, (answer, *_rest) in PRESS_PAGES.items()}
    )
    assert {item["url"]: item["rep_use"]["train-ai"] for item in result.items} == expected
    assert all(item["rep_use"]["search"] == "allowed" for item in result.items)
    # the response's TDMRep header lifted the file's reservation for that response only
    page_uses = {r["url"]: r["uses"] for r in of(audit, "page_use")}
    assert set(page_uses) == uses.every_page()
    assert page_uses[uses.press_url("/articles/lifted")]["train-ai"] == {
        "answer": "allowed",
        "source": "header tdm-reservation: 0",
    }
    assert page_uses[uses.press_url("/blog/content-usage")]["train-ai"] == {
        "answer": "refused",
        "source": "header Content-Usage: train-ai=n",
    }
    assert page_uses[uses.press_url("/blog/content-signal")]["train-ai"] == {
        "answer": "refused",
        "source": "header Content-Signal: ai-train=no",
    }
    assert page_uses[uses.press_url("/blog/header-noai")]["train-ai"]["source"] == (
        "X-Robots-Tag (testbot:) noai"
    )
    lifted = result.decisions[uses.press_url("/articles/lifted")]
    assert lifted["uses"]["train-ai"]["answer"] == "refused"  # at request time: the file's
    assert result.stat("rep/page/use/train-ai/refused") == sum(
        1 for answer in expected.values() if answer == "refused"
    )
    assert result.stat("rep/page/items-dropped/use-refused") == 0
    assert uses.press.hits(TDMREP) == 1


@pytest_twisted.ensureDeferred
async def test_no_declared_use_changes_nothing_and_never_asks_for_tdmrep_json(
    site: FakeSite, tmp_path: Path
) -> None:
    uses = build(site)
    result, audit = await crawl_site(uses, tmp_path)
    assert uses.pages_seen() == uses.every_page()
    assert item_urls(result) == uses.every_page()
    assert all(item["rep_use"] is None for item in result.items)
    assert uses.press.hits(TDMREP) == 0 and uses.shop.hits(TDMREP) == 0
    assert not of(audit, "page_use") and not of(audit, "tdmrep")
    assert not any(key.startswith(("rep/page/use", "rep/tdmrep")) for key in result.stats)


@pytest_twisted.ensureDeferred
async def test_a_declared_use_tdmrep_does_not_speak_of_never_asks_for_tdmrep_json(
    site: FakeSite, tmp_path: Path
) -> None:
    uses = build(site)
    result, _audit = await crawl_site(uses, tmp_path, REP_USES=["ai-input"], REP_USE_ACTION="drop")
    assert uses.press.hits(TDMREP) == 0 and uses.shop.hits(TDMREP) == 0
    noai = {uses.press_url("/blog/header-noai"), uses.press_url("/blog/meta-noai")}
    assert item_urls(result) == uses.every_page() - noai
    assert uses.pages_seen() == uses.every_page()


@pytest_twisted.ensureDeferred
async def test_uses_are_answered_with_the_page_directives_switched_off(
    site: FakeSite, tmp_path: Path
) -> None:
    uses = build(site)
    uses.press.page(
        "/blog/plain",
        Reply(
            body=b'<html><head><meta name="robots" content="noindex"></head></html>',
            headers={"Content-Type": "text/html", "Content-Usage": "search=n"},
        ),
    )
    result, _audit = await crawl_site(
        uses, tmp_path, REP_USES=["search"], REP_USE_ACTION="drop", REP_PAGE_DIRECTIVES=False
    )
    plain = uses.press_url("/blog/plain")
    assert plain not in item_urls(result)  # refused for search: dropped, noindex or not
    assert uses.press_url("/") in item_urls(result)
    assert result.stat("rep/page/noindex") == 0  # the directives themselves are not read

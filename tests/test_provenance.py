"""Provenance on every item (``REP_ITEM_PROVENANCE``), in-process: a page fetched through the
crawl's downloader middlewares on the rig, its callback's output through its spider
middlewares, as Scrapy's scraper runs them. The feed of a real crawl is
``tests/integration/test_provenance.py``.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
import pytest_twisted
import scrapy
from scrapy import Request
from scrapy.http import Response

from scrapy_rep.components.provenance import ItemProvenanceMiddleware
from tests.support.rig import Middlewares, rig_for

SITE = "http://a.example"
ROBOTS = (200, {}, b"User-agent: *\nDisallow: /private\n")


class Book(scrapy.Item):
    title = scrapy.Field()


ANSWERS = {"http://a.example:80": ROBOTS, f"{SITE}/book": (200, {}, b"<html>a book</html>")}


async def scraped(mw: Middlewares, request: Request, *output: Any) -> list[Any]:
    """``request`` downloaded, and what its callback yields let through the spider middlewares."""
    response = await mw.fetch(request)
    assert isinstance(response, Response)
    return await mw.scrape(response, output)


@pytest_twisted.ensureDeferred
async def test_each_item_gets_the_pages_provenance_and_requests_pass_unchanged() -> None:
    rig = rig_for(ANSWERS, REP_ITEM_PROVENANCE="_rep")
    mw = Middlewares(rig)

    async def scenario() -> None:
        follow = Request(f"{SITE}/next")
        item, request = await scraped(mw, Request(f"{SITE}/book"), {"title": "t"}, follow)
        assert request is follow and "_rep" not in request.meta
        found = item["_rep"]
        assert (found["url"], found["origin"], found["status"]) == (
            f"{SITE}/book",
            "http://a.example:80",
            200,
        )
        assert found["product_token"] == "testbot"
        assert found["fetched_at"] == rig.clock.now()  # when the downloader received it
        assert found["fetched_at_iso"]
        decision = found["decision"]
        assert (decision["rep_decision"], decision["action"]) == ("allow", "download")
        policy = found["policy"]
        assert (policy["status"], policy["http_status"]) == ("ok", 200)
        assert policy["url"] == f"{SITE}/robots.txt" and policy["digest"]

    await rig.run(scenario())


@pytest_twisted.ensureDeferred
async def test_a_request_not_judged_says_so_and_an_item_without_the_field_is_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    rig = rig_for(ANSWERS, REP_ITEM_PROVENANCE="_rep")
    mw = Middlewares(rig)

    async def scenario() -> None:
        exempt = Request(f"{SITE}/book", meta={"dont_obey_robotstxt": True}, dont_filter=True)
        (item,) = await scraped(mw, exempt, {"title": "t"})
        assert item["_rep"]["decision"] is None
        assert item["_rep"]["not_judged"] == "dont_obey_robotstxt"
        with caplog.at_level(logging.ERROR, logger="scrapy_rep"):
            books = await scraped(mw, Request(f"{SITE}/book"), Book(title="a"), Book(title="b"))
        assert [dict(book) for book in books] == [{"title": "a"}, {"title": "b"}]  # unchanged
        (said,) = [r for r in caplog.records if r.levelno == logging.ERROR]
        assert "Book has no field '_rep'" in said.getMessage()

    await rig.run(scenario())


@pytest_twisted.ensureDeferred
async def test_off_by_default_there_is_no_middleware_and_items_pass_unchanged() -> None:
    rig = rig_for(ANSWERS)
    mw = Middlewares(rig)

    async def scenario() -> None:
        (item,) = await scraped(mw, Request(f"{SITE}/book"), {"title": "t"})
        assert item == {"title": "t"}
        assert not any(isinstance(m, ItemProvenanceMiddleware) for m in mw.spider.middlewares)

    await rig.run(scenario())

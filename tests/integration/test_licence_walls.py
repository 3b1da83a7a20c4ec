"""Licence and payment walls in a real crawl: not retried, no items, recorded, origins walled."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
import pytest_twisted
import scrapy
from scrapy.http import Response

from scrapy_rep import cli
from scrapy_rep.core.report import report_lines
from scrapy_rep.crawl.telemetry import Telemetry
from tests.support.audit import of, records
from tests.support.crawl import ItemSpider, crawl, item_urls
from tests.support.fakesite import FakeSite, Reply

ROBOTS = b"User-agent: *\nAllow: /\nLicense: https://a.example/license.xml\n"
CHALLENGE = 'License realm="news", server="https://license.example/token"'


class WallItemSpider(ItemSpider):
    """An item for every response its callback gets, whatever the status."""

    # a wall would reach the callback
    custom_settings: ClassVar[dict[str, Any]] = {"HTTPERROR_ALLOW_ALL": True}

    def item(self, response: Response) -> dict[str, Any]:
        return {"url": response.url, "status": response.status}


@pytest_twisted.ensureDeferred
async def test_walls_are_recorded_never_retried_and_wall_off_their_origin(
    site: FakeSite, tmp_path: Path
) -> None:
    a = site.add("a").robots(Reply(body=ROBOTS))
    a.page("/paid", Reply(status=402, headers={"crawler-price": "USD 0.01"}))
    a.page("/licensed", Reply(status=401, headers={"WWW-Authenticate": CHALLENGE}))
    b = site.add("b", host="127.0.0.2").robots(Reply(body=b"User-agent: *\nAllow: /\n"))
    b.page("/paid", Reply(status=402))
    c = site.add("c", host="127.0.0.3").robots(Reply(body=b"User-agent: *\nAllow: /\n"))
    c.page("/basic", Reply(status=401, headers={"WWW-Authenticate": 'Basic realm="x"'}))
    c.page("/paid", Reply(status=402))
    log, html = tmp_path / "audit.jsonl", tmp_path / "report.html"
    first = [a.url_for("/paid"), a.url_for("/licensed"), b.url_for("/paid"), c.url_for("/basic")]
    # asked for after the walls (a lower priority, one request at a time)
    later = [scrapy.Request(a.url_for("/after"), priority=-10)]
    later.append(scrapy.Request(b.url_for("/after"), priority=-10))
    # dont_obey_robotstxt opts out of robots.txt, not of a wall
    later.append(scrapy.Request(c.url_for("/paid"), meta={"dont_obey_robotstxt": True}))
    settings = {
        "REP_DECISION_LOG": str(log),
        "REP_REPORT": str(html),
        "REP_BLOCK_AFTER": 2,
        "RETRY_ENABLED": True,
        "RETRY_HTTP_CODES": [401, 402, 503],  # even then: a wall is not retried
        "CONCURRENT_REQUESTS": 1,  # the walls first, then the later requests
    }
    result = await crawl([*first, *later], settings, spider=WallItemSpider)

    assert a.hits("/paid") == 1 and a.hits("/licensed") == 1 and b.hits("/paid") == 1
    # REP_BLOCK_AFTER walls in a row hold their origin like a block: its other requests
    # are not fetched and end blocked; one wall alone blocks nothing
    assert a.hits("/after") == 0 and b.hits("/after") == 1
    assert result.dropped == {
        a.url_for("/paid"): "licence-required",
        a.url_for("/licensed"): "licence-required",
        b.url_for("/paid"): "licence-required",
        a.url_for("/after"): "blocked",
        c.url_for("/paid"): "licence-required",
    }
    # no item of a wall; a 401 that is no licence wall is a page as before
    assert item_urls(result) == sorted([c.url_for("/basic"), b.url_for("/after")])
    assert result.stat("rep/walls/payment") == 3 and result.stat("rep/walls/licence") == 1
    assert result.stat("rep/walls/origins-walled") == 1
    # each wall is its request's final answer, a drop: rep/downloaded + rep/dropped/* =
    # requests (the responses are counted in rep/walls/* as well)
    assert result.stat("rep/dropped/licence-required") == 4
    assert result.stat("rep/dropped/blocked") == 1  # /after, never fetched
    licensed = result.decisions[a.url_for("/licensed")]
    assert licensed["matched_rule"] == "401 licence, licence server https://license.example/token"
    walls = {r["url"]: r for r in of(records(log), "licence_wall")}
    assert walls[a.url_for("/paid")]["price"] == "USD 0.01"
    assert walls[a.url_for("/paid")]["licenses"] == ["https://a.example/license.xml"]
    assert walls[a.url_for("/licensed")]["walled"] is True
    assert walls[a.url_for("/licensed")]["headers"]["www-authenticate"] == [CHALLENGE]
    # the close report and the HTML report list the origins behind walls
    assert result.crawler is not None
    lines = report_lines(Telemetry.of(result.crawler).counts)
    assert "  licence and payment walls: 4 responses" in lines
    page = html.read_text()
    assert "Origins behind licence and payment walls" in page
    assert "https://license.example/token" in page and "https://a.example/license.xml" in page


@pytest_twisted.ensureDeferred
async def test_a_wall_is_each_walled_requests_last_decision_explained_and_never_downloaded(
    site: FakeSite, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = site.add("a").robots(Reply(body=ROBOTS))
    a.page("/paid", Reply(status=402, headers={"crawler-price": "USD 0.01"}))
    # two challenges in one field value (RFC 9110 §11.6.1): a licence wall all the same
    both = 'Basic realm="members", License server="https://license.example/token"'
    a.page("/both", Reply(status=401, headers={"WWW-Authenticate": both}))
    a.page("/free", Reply(body=b"<html><body>free</body></html>"))
    log = tmp_path / "audit.jsonl"
    paid, licensed, free = a.url_for("/paid"), a.url_for("/both"), a.url_for("/free")
    unjudged = scrapy.Request(a.url_for("/paid?raw"), meta={"dont_obey_robotstxt": True})
    settings = {
        "REP_DECISION_LOG": str(log),
        "RETRY_ENABLED": True,
        "RETRY_HTTP_CODES": [401, 402],  # even then: a wall is not retried
    }
    result = await crawl([paid, licensed, free, unjudged], settings, spider=WallItemSpider)

    assert a.hits("/both") == 1  # not retried
    assert result.dropped[licensed] == "licence-required"
    assert item_urls(result) == [free]  # no item of a wall
    # each walled URL's last decision is the wall: licence-required, policy_status wall;
    # the dont_obey_robotstxt one (never judged) has its record too
    last = {r["url"]: r for r in of(records(log), "decision")}
    for url in (paid, licensed, unjudged.url):
        assert last[url]["action"] == "drop", last[url]
        assert (last[url]["reason"], last[url]["policy_status"]) == ("licence-required", "wall")
    assert last[licensed]["matched_rule"] == (
        "401 licence, licence server https://license.example/token"
    )
    assert last[free]["action"] == "download"
    # explain tells the wall, and exits 1 (not downloaded)
    for url, said in ((paid, "crawler-price: USD 0.01"), (unjudged.url, "402 payment")):
        assert cli.main(["explain", str(log), url]) == 1
        out = capsys.readouterr().out
        assert "-> drop (licence-required)" in out and said in out, out
        assert "  source    the response: a licence or payment wall, not robots.txt" in out
        assert "ALLOW -> download" not in out.splitlines()[1], out
    # the close report: 1 downloaded, the walls dropped (licence-required), never downloaded
    assert result.crawler is not None
    counts = Telemetry.of(result.crawler).counts
    assert (counts.total.downloaded, counts.total.dropped) == (1, {"licence-required": 3})
    assert result.stat("rep/downloaded") == 1
    assert result.stat("rep/dropped/licence-required") == 3


@pytest_twisted.ensureDeferred
async def test_a_wall_page_that_refreshes_elsewhere_is_still_a_wall(site: FakeSite) -> None:
    # a paywall page that sends the browser on to a subscribe page by a meta refresh: the
    # wall is caught before Scrapy's MetaRefreshMiddleware (580) follows it
    a = site.add("a").robots(Reply(body=ROBOTS))
    refresh = b'<html><head><meta http-equiv="refresh" content="0; url=/subscribe"></head></html>'
    a.page("/paid", Reply(status=402, body=refresh, headers={"Content-Type": "text/html"}))
    a.page("/subscribe", Reply(body=b"<html>subscribe</html>"))
    result = await crawl([a.url_for("/paid")], {"METAREFRESH_ENABLED": True})
    assert result.dropped == {a.url_for("/paid"): "licence-required"}
    assert a.hits("/subscribe") == 0
    assert result.stat("rep/walls/payment") == 1

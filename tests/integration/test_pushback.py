"""Pushback end to end: real Scrapy crawls (RetryMiddleware on, at Scrapy's defaults) against
a loopback site that answers 429 + Retry-After, 503 windows and a wall of 403s; what the
crawler did is read from the server's own request log."""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
import scrapy
from scrapy import signals
from scrapy.exceptions import IgnoreRequest

from scrapy_rep.runtime.settings import TUNE
from tests.support.crawl import CrawlResult, ListSpider, crawl
from tests.support.fakesite import FakeSite, Reply
from tests.support.pushback_site import (
    Entry,
    PushbackSite,
    max_in_flight_after,
    page_paths,
    pages,
)

#: Scrapy's defaults for retries (BASE_SETTINGS switches them off for other tests)
RETRY_ON = {"RETRY_ENABLED": True, TUNE: {"pushback.backoff_start": 1.0}}
#: a request sent while the crawler had not yet heard its origin's 429 reaches the server
#: at most this long after it (loopback): later ones were sent during the pause
IN_FLIGHT_MARGIN = 0.5


@pytest.fixture
def pbsite() -> Iterator[PushbackSite]:
    with PushbackSite() as s:
        yield s


def served(entries: list[Entry]) -> set[str]:
    return {e.path for e in pages(entries) if e.status == 200}


def pause_windows(
    entries: list[Entry], seconds: float, status: int = 429
) -> list[tuple[float, float]]:
    """The windows in which the crawler must have sent nothing: from each refusal (plus the
    in-flight margin) to the end of the pause it asked for."""
    return [(e.at + IN_FLIGHT_MARGIN, e.at + seconds) for e in pages(entries) if e.status == status]


def sent_during(entries: list[Entry], windows: list[tuple[float, float]]) -> list[Entry]:
    return [e for e in pages(entries) if any(a <= e.at < b for a, b in windows)]


def no_retry_gave_up(result: CrawlResult) -> None:
    assert not result.errors, result.errors
    assert result.stat("retry/max_reached") == 0
    assert result.stat("retry/reason_count/429 Unknown Status") == 0


@pytest_twisted.ensureDeferred
async def test_429_pauses_the_origin_holds_the_refused_page_and_resumes_with_one_in_flight(
    pbsite: PushbackSite,
) -> None:
    a = pbsite.add("a", rate=4.0, burst=3, retry_after=2, pages=16, latency=0.3)
    result = await crawl([a.url_for("/")], {**RETRY_ON}, follow=True)
    log = a.log()
    refused = [e for e in pages(log) if e.status == 429]
    assert refused, "the site never pushed back: the test proves nothing"
    # 0 lost: every page was fetched with a 200 in the end, none given up by RetryMiddleware
    assert served(log) == set(page_paths(16))
    no_retry_gave_up(result)
    assert result.stat("retry/count") == 0  # the 429s were never RetryMiddleware's
    assert result.stat("rep/pushback/refused/429") == len(refused)
    assert result.stat("rep/pushback/pauses/rate-limited") >= 1
    # nothing sent during a pause the site asked for
    assert sent_during(log, pause_windows(log, 2.0)) == []
    # one request in flight when each pause ends (the next waits for its healthy answer)
    for e in refused:
        after = [x for x in pages(log) if x.at >= e.at + 2.0]
        if after:
            assert max_in_flight_after(log, after[0].at, 0.25) == 1, after[:3]


@pytest_twisted.ensureDeferred
async def test_a_503_window_pauses_only_its_origin_others_keep_their_pace(
    pbsite: PushbackSite,
) -> None:
    a = pbsite.add("a", pages=10, latency=0.1, unavailable=(0.0, 0.5), unavailable_retry_after=2)
    b = pbsite.add("b", pages=40, latency=0.3)
    # little global concurrency: held requests of `a` taking any of it would slow `b` down
    settings = {**RETRY_ON, "CONCURRENT_REQUESTS": 4}
    result = await crawl([a.url_for("/"), b.url_for("/")], settings, follow=True)
    log_a, log_b = a.log(), b.log()
    refused = [e for e in pages(log_a) if e.status == 503]
    assert refused
    assert served(log_a) == set(page_paths(10))  # the refused page too: 0 lost
    assert served(log_b) == set(page_paths(40))
    no_retry_gave_up(result)
    assert result.stat("rep/pushback/pauses/service-unavailable") >= 1
    windows = pause_windows(log_a, 2.0, status=503)
    assert sent_during(log_a, windows) == []
    # `b` was crawled during `a`'s pause, at its own concurrency
    during = sent_during(log_b, windows)
    assert during, "b sent nothing while a was paused"
    assert max(e.in_flight for e in during) >= 2


class SendingSpider(ListSpider):
    """Notes when each request left the crawler for the network (reached the downloader,
    past every downloader middleware), on the wall clock log records carry."""

    sent: list[tuple[float, str]]

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> Any:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.sent = []
        crawler.signals.connect(spider.on_sent, signal=signals.request_reached_downloader)
        return spider

    def on_sent(self, request: scrapy.Request, spider: scrapy.Spider) -> None:
        self.sent.append((time.time(), request.url))


@pytest_twisted.ensureDeferred
async def test_a_wall_of_403s_stops_the_origin_after_k_and_its_held_requests_end_blocked(
    pbsite: PushbackSite, caplog: pytest.LogCaptureFixture
) -> None:
    a = pbsite.add("a", pages=80, fanout=8, latency=0.05, wall_after=6)
    b = pbsite.add("b", pages=10, latency=0.05)
    settings = {**RETRY_ON, "REP_BLOCK_AFTER": 3}
    with caplog.at_level(logging.WARNING, logger="scrapy_rep"):
        result = await crawl(
            [a.url_for("/"), b.url_for("/")], settings, spider=SendingSpider, follow=True
        )
    refusals = [e for e in pages(a.log()) if e.status == 403]
    assert len(refusals) >= 3
    # K, plus the requests already sent when the crawler heard the K-th: nothing sent after
    # it. Read on the crawler's side (when it blocked the origin, when each request left):
    # the server's clock would also count a loaded machine's delay in delivering a request
    # sent before the block.
    (block,) = [r for r in caplog.records if "is blocked" in r.getMessage()]
    assert result.crawler is not None
    sent = result.crawler.spider.sent
    assert [u for t, u in sent if u.startswith(a.url) and t < block.created]  # it did send
    assert [u for t, u in sent if u.startswith(a.url) and t >= block.created] == []
    assert served(b.log()) == set(page_paths(10))
    blocked = [url for url, reason in result.dropped.items() if reason == "blocked"]
    assert blocked, "the held requests of the blocked origin ended without a record"
    assert all(url.startswith(a.url) for url in blocked)
    assert result.decisions[blocked[0]]["reason"] == "blocked"
    assert result.stat("rep/pushback/pauses/blocked") == 1
    warnings = [r for r in caplog.records if "is blocked" in r.getMessage()]
    assert len(warnings) == 1
    text = warnings[0].getMessage()
    assert a.url in text and "403" in text and "Stop and diagnose" in text


@pytest_twisted.ensureDeferred
async def test_a_lone_403_is_that_urls_answer(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(body=b"User-agent: *\nAllow: /\n"))
    a.page("/secret", Reply(status=403, body=b"no"))
    paths = ["/", "/1", "/secret", "/2", "/3", "/4"]
    for path in paths:
        if path != "/secret":
            a.page(path, Reply(body=b"<html>ok</html>"))
    result = await crawl([a.url_for(p) for p in paths], {**RETRY_ON, "CONCURRENT_REQUESTS": 1})
    assert result.stat("rep/pushback/pauses/blocked") == 0
    assert result.stat("rep/parked") == 0
    assert result.errors == {a.url_for("/secret"): "HttpError"}  # its own answer, as without us
    assert sorted(result.downloaded) == sorted(a.url_for(p) for p in paths if p != "/secret")


@pytest_twisted.ensureDeferred
async def test_a_row_switched_off_leaves_429_to_scrapy(pbsite: PushbackSite) -> None:
    a = pbsite.add("a", rate=2.0, burst=2, retry_after=2, pages=8, latency=0.1)
    settings = {**RETRY_ON, "REP_PAGE_STATUS_ACTIONS": {"429": "off"}}
    result = await crawl([a.url_for("/")], settings, follow=True)
    assert result.stat("retry/count") > 0  # Scrapy's retries, as without scrapy-rep
    assert result.stat("rep/pushback/refused/429") == 0


@pytest_twisted.ensureDeferred
async def test_dont_obey_robotstxt_requests_are_not_paused(pbsite: PushbackSite) -> None:
    a = pbsite.add("a", rate=1.0, burst=1, retry_after=30, pages=4)
    requests = [
        scrapy.Request(a.url_for(p), meta={"dont_obey_robotstxt": True}) for p in page_paths(4)
    ]
    result = await crawl(requests, {"RETRY_ENABLED": False})
    assert result.stat("rep/pushback/refused/429") == 0
    assert result.stat("rep/parked") == 0


@pytest_twisted.ensureDeferred
async def test_a_request_held_past_rep_park_timeout_ends_with_a_record_and_its_errback(
    pbsite: PushbackSite,
) -> None:
    a = pbsite.add("a", rate=1.0, burst=1, retry_after=30, pages=4, fanout=3)
    urls = [a.url_for(p) for p in page_paths(4)]
    result = await crawl(urls, {**RETRY_ON, "REP_PARK_TIMEOUT": 1.0})
    expired = {url for url, reason in result.dropped.items() if reason == "park-expired"}
    assert expired  # errback heard it, with the decision record
    assert all(result.decisions[url]["action"] == "drop" for url in expired)
    assert not result.errors
    assert len(result.downloaded) + len(expired) == len(urls)


@pytest_twisted.ensureDeferred
async def test_with_the_sqlite_store_a_pause_survives_a_restart(
    site: FakeSite, tmp_path: Path
) -> None:
    a = site.add("a").robots(Reply(body=b"User-agent: *\nAllow: /\n"))
    a.page("/1", Reply(status=429, headers={"Retry-After": "60"}))
    a.page("/2", Reply(body=b"ok"))
    settings = {
        **RETRY_ON,
        "REP_STORE": f"sqlite:{tmp_path / 'rep.sqlite'}",
        "REP_PARK_TIMEOUT": 0.5,
    }
    first = await crawl([a.url_for("/1")], settings)
    assert first.dropped == {a.url_for("/1"): "park-expired"}  # held, then given up
    hits = a.hits()
    second = await crawl([a.url_for("/2")], settings)  # a new crawl: the pause stands
    assert a.hits() == hits  # nothing sent to the paused origin, robots.txt included
    assert second.dropped == {a.url_for("/2"): "park-expired"}
    assert second.stat("rep/parked/rate-limited") == 1
    assert second.stat("rep/pushback/pauses/rate-limited") == 1  # adopted from the file


@pytest_twisted.ensureDeferred
async def test_every_held_request_says_why_in_records_explain_and_both_reports(
    pbsite: PushbackSite, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from scrapy_rep.cli.explain import explain
    from tests.support.audit import records

    a = pbsite.add("a", rate=3.0, burst=2, retry_after=1, pages=8, latency=0.2)
    log, page = tmp_path / "audit.jsonl", tmp_path / "report.html"
    settings = {**RETRY_ON, "REP_DECISION_LOG": str(log), "REP_REPORT": str(page)}
    with caplog.at_level(logging.INFO, logger="scrapy_rep"):
        result = await crawl([a.url_for("/")], settings, follow=True)
    refused = [e for e in pages(a.log()) if e.status == 429]
    assert refused
    found = records(log)
    pauses = [r for r in found if r["type"] == "page_pause"]
    assert pauses and all(r["cause"] == "rate-limited" and r["status"] == 429 for r in pauses)
    assert pauses[0]["retry_after"] == 1.0 and pauses[0]["url"].startswith(a.url)
    assert pauses[0]["until"] > pauses[0]["started"]
    assert len([r for r in found if r["type"] == "page_resume"]) == len(pauses)
    held = [r for r in found if r["type"] == "parked" and r["reason"] == "rate-limited"]
    assert held
    # the refused page: explain tells the pause, its page, its Retry-After and its end
    url = a.url_for(refused[0].path)
    action, lines = explain(str(log), url)
    text = "\n".join(lines)
    assert action == "download"  # sent again after the pause, and fetched
    assert "rate-limited" in text and "HTTP 429" in text and "Retry-After: 1.0s" in text
    assert "paused    origin rate-limited" in text
    # the close report and the HTML report show the episodes
    report = next(r.getMessage() for r in caplog.records if "scrapy-rep report:" in r.getMessage())
    assert "pauses for what pages said: rate-limited" in report
    html = page.read_text()
    assert 'id="t-pauses"' in html and "tl-pause tl-rate-limited" in html
    assert result.stat("rep/pushback/released/rate-limited") == len(held)


@pytest_twisted.ensureDeferred
async def test_requests_waiting_in_the_download_slot_are_taken_back_not_sent(
    pbsite: PushbackSite,
) -> None:
    # DOWNLOAD_DELAY keeps judged requests waiting in the origin's slot queue
    a = pbsite.add("a", rate=3.0, burst=2, retry_after=2, pages=10, fanout=9, latency=0.05)
    settings = {**RETRY_ON, "DOWNLOAD_DELAY": 0.2}
    result = await crawl([a.url_for("/")], settings, follow=True)
    log = a.log()
    assert [e for e in pages(log) if e.status == 429]
    assert result.stat("rep/pushback/unsent") > 0  # they were judged and queued already
    assert sent_during(log, pause_windows(log, 2.0)) == []
    assert served(log) == set(page_paths(10))
    no_retry_gave_up(result)


@pytest_twisted.ensureDeferred
async def test_rep_enabled_off_leaves_429_to_scrapy(pbsite: PushbackSite) -> None:
    a = pbsite.add("a", rate=2.0, burst=2, retry_after=2, pages=8, latency=0.1)
    result = await crawl([a.url_for("/")], {**RETRY_ON, "REP_ENABLED": False}, follow=True)
    assert [e for e in pages(a.log()) if e.status == 429]
    assert result.stat("retry/count") > 0
    assert not any(key.startswith("rep/") for key in result.stats)


@pytest_twisted.ensureDeferred
async def test_a_ramp_whose_requests_robots_txt_drops_goes_on(pbsite: PushbackSite) -> None:
    robots = b"User-agent: *\nDisallow: /p/1\nDisallow: /p/2\nDisallow: /p/3\n"
    a = pbsite.add("a", pages=9, robots=robots, unavailable=(0.0, 0.3), unavailable_retry_after=1)
    # every page asked at once: the first 503 holds them all, the disallowed ones too
    urls = [a.url_for(p) for p in page_paths(9)]
    settings = {**RETRY_ON, "REP_PARK_TIMEOUT": 30.0, "CONCURRENT_REQUESTS_PER_DOMAIN": 1}
    result = await crawl(urls, settings)
    assert [e for e in pages(a.log()) if e.status == 503]
    allowed = {p for p in page_paths(9) if p not in ("/p/1", "/p/2", "/p/3")}
    assert served(a.log()) == allowed
    assert set(result.dropped.values()) <= {"disallow-rule"}
    no_retry_gave_up(result)


@pytest_twisted.ensureDeferred
async def test_refusals_of_links_another_site_pointed_to_block_nothing(
    site: FakeSite, tmp_path: Path
) -> None:
    allow = Reply(body=b"User-agent: *\nAllow: /\n")
    e = site.add("e").robots(allow)
    v = site.add("v", host="127.0.0.2").robots(allow)
    w = site.add("w", host="127.0.0.3").robots(allow)
    for n in range(3):
        v.page(f"/private/{n}", Reply(status=403, body=b"no"))
        w.page(f"/premium/{n}", Reply(status=402, headers={"crawler-price": "USD 0.01"}))
    # e (a directory, say) links to three refused URLs of v and three walled pages of w
    refused = [v.url_for(f"/private/{n}") for n in range(3)]
    e.links("/", [*refused, *(w.url_for(f"/premium/{n}") for n in range(3))])
    public = [o.url_for(f"/p{n}") for o in (v, w) for n in range(10)]
    # v and w serve a page first (v's 403s could then be a wall), then e's links are
    # followed, then the public pages: one request at a time, in that order
    seeds = [
        scrapy.Request(v.url_for("/"), priority=20),
        scrapy.Request(w.url_for("/"), priority=20),
        scrapy.Request(e.url_for("/"), priority=10),
        *(scrapy.Request(url, priority=-10) for url in public),
    ]
    settings = {
        **RETRY_ON,
        "REP_BLOCK_AFTER": 3,
        "REP_STORE": f"sqlite:{tmp_path / 'rep.sqlite'}",
        "CONCURRENT_REQUESTS": 1,
    }
    result = await crawl(seeds, settings, follow=True)
    assert v.hits("/private/2") == 1 and w.hits("/premium/2") == 1  # all six were asked
    assert result.stat("rep/pushback/pauses/blocked") == 0
    lost = {url: reason for url, reason in result.dropped.items() if url in public}
    assert lost == {}
    assert sorted(u for u in result.downloaded if u in public) == sorted(public)
    # nothing kept in the store either: the next crawl fetches them again
    again = await crawl([v.url_for("/p0"), w.url_for("/p0")], settings)
    assert sorted(again.downloaded) == sorted([v.url_for("/p0"), w.url_for("/p0")])


@pytest_twisted.ensureDeferred
async def test_one_sites_held_requests_do_not_crowd_out_another_sites(site: FakeSite) -> None:
    from scrapy_rep.crawl.telemetry import Telemetry

    allow = Reply(body=b"User-agent: *\nAllow: /\n")
    a = site.add("a").robots(allow)
    b = site.add("b", host="127.0.0.2").robots(allow)
    for n in range(30):  # a: every page asks for a long pause first
        a.page(f"/{n}", Reply(status=429, headers={"Retry-After": "2"}), Reply(body=b"ok"))
    for n in range(5):  # b: a 1 s pause, asked once a has filled the lot
        b.page(
            f"/{n}",
            Reply(status=429, headers={"Retry-After": "1"}, delay=0.5),
            Reply(body=b"ok"),
        )
    seeds = [scrapy.Request(a.url_for(f"/{n}"), priority=10) for n in range(30)]
    seeds += [scrapy.Request(b.url_for(f"/{n}")) for n in range(5)]
    settings = {**RETRY_ON, "REP_PARK_MAX": 10}
    result = await crawl(seeds, settings)
    b_urls = {b.url_for(f"/{n}") for n in range(5)}
    assert {u: r for u, r in result.dropped.items() if u in b_urls} == {}
    assert b_urls <= set(result.downloaded)
    # the overflow fell on the site that held more than its share, and is counted there
    overflow = {u for u, r in result.dropped.items() if r == "park-overflow"}
    assert overflow and all(u.startswith(a.url) for u in overflow)
    assert result.crawler is not None
    counts = Telemetry.of(result.crawler).counts
    assert counts.origins[a.url].dropped["park-overflow"] == len(overflow)
    assert "park-overflow" not in counts.origins[b.url].dropped
    # nothing lost in silence: every page of a was downloaded or dropped with a reason
    assert len([u for u in result.downloaded if u.startswith(a.url)]) + len(overflow) == 30


@pytest_twisted.ensureDeferred
async def test_a_new_worker_reads_the_stores_page_pauses_per_origin_as_asked(
    site: FakeSite, redis_server: str, caplog: pytest.LogCaptureFixture
) -> None:
    import time

    from scrapy_rep.core.origin import origin_of
    from scrapy_rep.core.pushback import PauseState
    from scrapy_rep.runtime.store.redis import RedisStore
    from tests.support.rig import in_loop

    allow = Reply(body=b"User-agent: *\nAllow: /\n")
    a = site.add("a").robots(allow)
    b = site.add("b", host="127.0.0.2").robots(allow)
    paused_b = origin_of(b.url)

    async def fill() -> None:  # a cluster's pauses for thousands of other origins, and b's
        store = RedisStore.from_url(redis_server)
        now = time.time()
        try:
            for i in range(2_000):
                origin = f"http://paused{i}.example:80"
                state = PauseState(now + 600, "rate-limited", 429, origin, 600.0, 1, now)
                await store.save_pause(origin, state)
            state = PauseState(now + 600, "rate-limited", 429, b.url_for("/x"), 600.0, 1, now)
            await store.save_pause(paused_b, state)
        finally:
            await store.close()

    await in_loop(fill())
    caplog.set_level(logging.INFO, logger="scrapy_rep")
    settings = {"REP_STORE": redis_server, "REP_PARK_TIMEOUT": 1.0}
    result = await crawl([a.url_for("/1"), b.url_for("/1")], settings)
    assert result.downloaded == [a.url_for("/1")]
    assert result.dropped == {b.url_for("/1"): "park-expired"}  # b's pause honoured
    assert b.hits("/1") == 0
    # only the pause of an origin this crawl asked for is read and said
    said = [r.getMessage() for r in caplog.records if "paused until" in r.getMessage()]
    assert len(said) == 1 and paused_b in said[0], said[:3]


@pytest_twisted.ensureDeferred
async def test_store_forget_lifts_a_running_crawls_page_pause_and_show_lists_it(
    site: FakeSite, tmp_path: Path
) -> None:
    import json
    import sqlite3
    import time

    from twisted.internet import task
    from twisted.internet.defer import Deferred

    from scrapy_rep.core.origin import origin_of
    from tests.support.store_cli import store_cli

    a = site.add("a").robots(Reply(body=b"User-agent: *\nAllow: /\n"))
    a.page("/1", Reply(status=429, headers={"Retry-After": "3600"}), Reply(body=b"ok"))
    a.page("/2", Reply(body=b"ok"))
    path = tmp_path / "rep.sqlite"
    settings = {
        **RETRY_ON,
        "REP_STORE": f"sqlite:{path}",
        "CONCURRENT_REQUESTS": 1,
        "CLOSESPIDER_TIMEOUT": 30,  # without the forget: held until here, then dropped
    }
    running = Deferred.fromCoroutine(crawl([a.url_for("/1"), a.url_for("/2")], settings))

    def paused() -> bool:
        if not path.exists():
            return False
        db = sqlite3.connect(path)
        try:
            found = db.execute("SELECT count(*) FROM rep_policy WHERE pause NOT NULL")
            return bool(found.fetchone()[0] == 1)
        except sqlite3.OperationalError:  # the crawl has not made the table yet
            return False
        finally:
            db.close()

    from twisted.internet import reactor

    deadline = time.monotonic() + 15
    while not paused() and time.monotonic() < deadline:
        await task.deferLater(reactor, 0.05, lambda: None)
    assert paused(), "the crawl never saved its page pause"
    origin = origin_of(a.url)
    shown = store_cli("show", origin, "--sqlite", str(path))
    assert shown.returncode == 0, shown.stderr
    pause = json.loads(shown.stdout)["page_pause"]
    assert (pause["cause"], pause["status"], pause["url"]) == ("rate-limited", 429, a.url_for("/1"))
    listed = json.loads(store_cli("show", "--sqlite", str(path)).stdout)
    assert [e["page_pause"]["cause"] for e in listed if e["origin"] == origin] == ["rate-limited"]
    forgot = store_cli("forget", origin, "--sqlite", str(path))
    assert forgot.returncode == 0 and "forgot" in forgot.stdout, forgot.stderr
    result = await running
    # the running crawl heard it: the held pages went, long before the pause's end
    assert sorted(result.downloaded) == [a.url_for("/1"), a.url_for("/2")]
    assert result.dropped == {}


#: each of these consumes a response before the pushback middleware can hear it
CONSUMED = {
    "redirect": Reply(status=301, headers={"Location": "/dir/"}),
    "meta-refresh": Reply(
        body=b'<html><head><meta http-equiv="refresh" content="0; url=/dir/"></head></html>',
        headers={"Content-Type": "text/html"},
    ),
    "licence-wall": Reply(status=402, body=b"pay"),
    "ignored": Reply(body=b"<html>taken</html>", headers={"X-Take": "1"}),
}


class TakesMarkedResponses:
    """A project's downloader middleware above scrapy-rep's pushback one: it ignores some."""

    def process_response(self, request: scrapy.Request, response: Any) -> Any:
        if response.headers.get(b"X-Take"):
            raise IgnoreRequest("taken")
        return response


@pytest.mark.parametrize("answer", sorted(CONSUMED))
@pytest_twisted.ensureDeferred
async def test_a_redirect_after_a_pause_counts_back_and_the_origin_goes_on(
    site: FakeSite, answer: str
) -> None:
    a = site.add("a").robots(Reply(body=b"User-agent: *\nAllow: /\n"))
    # /dir answers 429 first; sent again after the pause it is the first request out, and
    # its answer is taken by a middleware that runs before scrapy-rep's pushback one
    a.page("/dir", Reply(status=429, headers={"Retry-After": "1"}), CONSUMED[answer])
    a.page("/dir/", Reply(body=b"<html>dir</html>"))
    later = [f"/p/{i}" for i in range(11)]
    for path in later:
        a.page(path, Reply(body=b"<html>ok</html>"))
    settings = {
        **RETRY_ON,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "REP_PARK_TIMEOUT": 20.0,  # a stalled origin ends here, its pages park-expired
        "METAREFRESH_ENABLED": True,
        "DOWNLOADER_MIDDLEWARES": {f"{__name__}.TakesMarkedResponses": 700},
    }
    first = scrapy.Request(a.url_for("/dir"), priority=1)  # asked first, held first
    result = await crawl([first, *(a.url_for(p) for p in later)], settings)
    assert a.hits("/dir") == 2  # the 429, then the answer a middleware took
    assert result.stat("rep/pushback/refused/429") == 1
    assert "park-expired" not in result.dropped.values(), result.dropped
    expected = [*later] if answer in ("licence-wall", "ignored") else ["/dir/", *later]
    assert sorted(result.downloaded) == sorted(a.url_for(p) for p in expected)


@pytest_twisted.ensureDeferred
async def test_a_429_page_that_refreshes_elsewhere_pauses_its_origin(site: FakeSite) -> None:
    # the page status table is read before MetaRefreshMiddleware (580): a 429 page's meta
    # refresh does not send the crawler on at once, around the pause it asks for
    a = site.add("a").robots(Reply(body=b"User-agent: *\nAllow: /\n"))
    refresh = b'<html><head><meta http-equiv="refresh" content="0; url=/busy"></head></html>'
    busy = Reply(
        status=429, body=refresh, headers={"Retry-After": "1", "Content-Type": "text/html"}
    )
    a.page("/p", busy, Reply(body=b"<html>ok</html>"))
    a.page("/busy", Reply(body=b"<html>busy</html>"))
    result = await crawl([a.url_for("/p")], {**RETRY_ON, "METAREFRESH_ENABLED": True})
    assert a.hits("/busy") == 0 and a.hits("/p") == 2
    assert result.downloaded == [a.url_for("/p")]
    assert result.stat("rep/pushback/refused/429") == 1


@pytest_twisted.ensureDeferred
async def test_a_site_answering_429_for_ever_is_given_up_and_the_spider_closes(
    site: FakeSite,
) -> None:
    a = site.add("a").robots(Reply(body=b"User-agent: *\nAllow: /\n"))
    paths = [f"/p/{i}" for i in range(6)]
    for path in paths:
        a.page(path, Reply(status=429, headers={"Retry-After": "1"}))
    b = site.add("b").robots(Reply(body=b"User-agent: *\nAllow: /\n"))
    b.page("/", Reply(body=b"<html>ok</html>"))
    # far beyond what the bounded tries take (1 + 1.5 + 2 + 2.5 s): a crawl that waits for
    # REP_PARK_TIMEOUT ends its requests park-expired
    settings = {**RETRY_ON, "REP_PARK_TIMEOUT": 40.0, "CONCURRENT_REQUESTS_PER_DOMAIN": 1}
    result = await crawl([a.url_for(p) for p in paths] + [b.url_for("/")], settings)
    assert result.downloaded == [b.url_for("/")]
    assert result.dropped == {a.url_for(p): "pushback-gave-up" for p in paths}
    record = result.decisions[a.url_for(paths[0])]
    assert record["action"] == "drop" and "429" in record["detail"]
    assert result.stat("rep/dropped/pushback-gave-up") == len(paths)
    # GIVE_UP_AFTER pauses in a row, each ended by one request sent again
    assert result.stat("rep/pushback/pauses/rate-limited") == 5
    assert result.stat("finish_reason") == "finished"


@pytest.mark.parametrize("status", [429, 503])
@pytest_twisted.ensureDeferred
async def test_each_held_request_has_a_record_naming_the_pause_that_held_it(
    pbsite: PushbackSite, tmp_path: Path, status: int
) -> None:
    from scrapy_rep.cli.explain import explain
    from tests.support.audit import records

    if status == 429:
        a = pbsite.add("a", rate=3.0, burst=2, retry_after=1, pages=12, latency=0.2)
    else:
        a = pbsite.add(
            "a", pages=12, latency=0.2, unavailable=(0.0, 0.3), unavailable_retry_after=1
        )
    log = tmp_path / "audit.jsonl"
    await crawl([a.url_for("/")], {**RETRY_ON, "REP_DECISION_LOG": str(log)}, follow=True)
    refused = {a.url_for(e.path) for e in pages(a.log()) if e.status == status}
    assert refused
    cause = "rate-limited" if status == 429 else "service-unavailable"
    found = records(log)
    held = [r for r in found if r["type"] == "parked" and r["reason"] == cause]
    assert held
    first = min(r["started"] for r in found if r["type"] == "page_pause")
    for record in held:  # each names the status, the Retry-After read and the page
        assert record["status"] == status, record
        assert record["retry_after"] == 1.0, record
        assert record["page"] in refused, record
        assert record["until"] > first, record  # the pause that held it, or its slow start
    _action, lines = explain(str(log), held[-1]["url"])
    text = "\n".join(lines)
    assert f"parked    {cause}: HTTP {status} to {held[-1]['page']} (Retry-After: 1.0s)" in text


@pytest_twisted.ensureDeferred
async def test_the_close_report_counts_each_page_sent_again_after_a_pause_once(
    pbsite: PushbackSite, caplog: pytest.LogCaptureFixture
) -> None:
    a = pbsite.add("a", rate=4.0, burst=3, retry_after=1, pages=16, latency=0.1)
    b = pbsite.add("b", pages=6, unavailable=(0.0, 0.3), unavailable_retry_after=1)
    with caplog.at_level(logging.INFO, logger="scrapy_rep"):
        result = await crawl([a.url_for("/"), b.url_for("/")], {**RETRY_ON}, follow=True)
    assert [e for e in pages(a.log()) if e.status == 429]  # pages sent again after a pause
    assert [e for e in pages(b.log()) if e.status == 503]
    assert served(a.log()) == set(page_paths(16)) and served(b.log()) == set(page_paths(6))
    total = 17 + 7  # "/" and the pages of each origin, each one final answer
    assert result.stat("rep/downloaded") == total
    report = next(r.getMessage() for r in caplog.records if "scrapy-rep report:" in r.getMessage())
    assert report.startswith(
        f"scrapy-rep report: 2 origins, {total} requests: {total} downloaded"
    ), report


#: the migration guide's route by hand: every part the add-on installs, listed
BY_HAND = {
    "ADDONS": {},
    "ROBOTSTXT_OBEY": False,
    "DOWNLOADER_MIDDLEWARES": {
        "scrapy_rep.RobotsMiddleware": 100,
        "scrapy_rep.components.pushback.PushbackMiddleware": 570,
        "scrapy_rep.components.body_guard.BodyGuard": 595,
        "scrapy_rep.components.identity.IdentityGuard": 1_000_000,
    },
    "SPIDER_MIDDLEWARES": {"scrapy_rep.PageDirectivesMiddleware": 950},
}


@pytest.mark.parametrize("route", ["middleware-only", "guide"])
@pytest_twisted.ensureDeferred
async def test_the_route_by_hand_says_what_it_lacks_or_pauses_as_the_add_on(
    pbsite: PushbackSite, caplog: pytest.LogCaptureFixture, route: str
) -> None:
    a = pbsite.add("a", rate=4.0, burst=3, retry_after=1, pages=12, latency=0.1)
    settings: dict[str, Any] = {**RETRY_ON, **BY_HAND}
    if route == "middleware-only":
        settings["DOWNLOADER_MIDDLEWARES"] = {"scrapy_rep.RobotsMiddleware": 100}
        settings["SPIDER_MIDDLEWARES"] = {}
    with caplog.at_level(logging.INFO, logger="scrapy_rep"):
        result = await crawl([a.url_for("/")], settings, follow=True)
    lacking = [r.getMessage() for r in caplog.records if "without the add-on" in r.getMessage()]
    assert [e for e in pages(a.log()) if e.status == 429]
    if route == "middleware-only":  # pages may be lost to RetryMiddleware: said at start
        (line,) = lacking
        assert "page pauses" in line and "PushbackMiddleware" in line, line
        assert "identity-changed" in line and "noindex" in line and "licence walls" in line
    else:  # the guide's list: nothing lacking, nothing lost
        assert lacking == []
        assert served(a.log()) == set(page_paths(12))
        no_retry_gave_up(result)
        assert result.stat("rep/pushback/pauses/rate-limited") >= 1


@pytest_twisted.ensureDeferred
async def test_a_site_slowing_under_the_crawl_is_sent_to_more_slowly_before_it_refuses(
    pbsite: PushbackSite,
) -> None:
    # 10 pages a second at 30 ms; slower with each request past that in the last second, 600 ms
    # at 30, 503 (no Retry-After) beyond: the crawl's first requests pass 10 within 0.1 s
    s = pbsite.add("s", capacity=10.0, latency=0.03, slow_latency=0.6, pages=80, fanout=4)
    result = await crawl([s.url_for("/")], {**RETRY_ON}, follow=True)
    log = s.log()
    assert served(log) == set(page_paths(80))  # 0 lost
    no_retry_gave_up(result)
    # its first slow answer held it to one request in flight before it refused: no 503, no
    # pause (before: 7 503s, the third slow answer came too late, then a back-off)
    assert [e.at for e in pages(log) if e.status == 503] == []
    assert result.stat("rep/pushback/pauses/service-unavailable") == 0
    assert result.stat("rep/pushback/held/service-unavailable") >= 1  # the latency rule held it


@pytest_twisted.ensureDeferred
async def test_a_first_contact_starts_with_one_request_in_flight_and_no_reason_said(
    pbsite: PushbackSite,
) -> None:
    # thirteen start requests to an origin never heard from, released together once its
    # robots.txt is read (Scrapy 2.19 lets a slot's whole queue go at once): before, all of
    # them in flight before any answer; now one, then one more per answer, up to 8
    a = pbsite.add("a", latency=0.2, pages=12)
    result = await crawl([a.url_for(p) for p in page_paths(12)], {**RETRY_ON})
    log = pages(a.log())
    assert served(log) == set(page_paths(12))
    no_retry_gave_up(result)
    for entry in log:
        answered = sum(1 for e in log if e.at + e.delay < entry.at)
        if answered < 7:  # the ramp (ramp_max 8): in flight at most one more than answered,
            # and one more for an answer whose thread has not yet counted itself out
            assert entry.in_flight <= 2 + answered, (entry, answered)
    assert log[0].in_flight <= 2
    # nothing pushed back: no page held, no pause, no reason
    assert not [k for k in result.stats if k.startswith("rep/pushback/")], result.stats
    assert not [k for k in result.stats if k.startswith(("rep/held", "rep/parked"))], result.stats


# -- the pace learnt: a rate limit's own rate, with AutoThrottle beside it ----------------------

#: 10 pages a second allowed; 60 pages in a tree of three links a page
LIMITED = {"rate": 10.0, "pages": 60, "fanout": 3, "latency": 0.02}
#: AutoThrottle driven hard: no start delay, eight in flight its target
AUTOTHROTTLE_FAST = {
    "AUTOTHROTTLE_ENABLED": True,
    "AUTOTHROTTLE_START_DELAY": 0.0,
    "AUTOTHROTTLE_TARGET_CONCURRENCY": 8.0,
}


def second_half(entries: list[Entry]) -> list[Entry]:
    sent = pages(entries)
    return sent[len(sent) // 2 :]


def median_gap(entries: list[Entry]) -> float:
    gaps = sorted(later.at - earlier.at for earlier, later in itertools.pairwise(entries))
    return gaps[len(gaps) // 2]


def assert_the_rate_was_learnt(result: CrawlResult, log: list[Entry], rate: float) -> None:
    """Every page got, none given up, nothing sent into a pause the site announced; the
    refusals stop once the rate is learnt (at most two in the second half of the sends,
    for a loaded machine's jitter), and the pace kept is near the rate, not far below it."""
    assert [e for e in pages(log) if e.status == 429], "the site never pushed back"
    assert served(log) == set(page_paths(LIMITED["pages"]))
    no_retry_gave_up(result)
    assert sent_during(log, pause_windows(log, 1.0)) == []
    late = second_half(log)
    assert len([e for e in late if e.status == 429]) <= 2, [e.at for e in late if e.status == 429]
    assert median_gap(late) <= 2.5 / rate, [round(e.at, 3) for e in late]


@pytest.mark.parametrize(
    ("burst", "retry_after"),
    [(1, 1), (5, 1), (5, None)],
    ids=["bucket-of-one", "burst-of-five", "burst-of-five-no-retry-after"],
)
@pytest_twisted.ensureDeferred
async def test_a_rate_limit_is_learnt_and_its_refusals_stop(
    pbsite: PushbackSite, burst: int, retry_after: int | None
) -> None:
    # a burst refills during each pause: a pace read from the answers after it would be the
    # burst's, and the site would refuse again every few pages (one pause per ~7 pages)
    a = pbsite.add("a", burst=burst, retry_after=retry_after, **LIMITED)
    result = await crawl([a.url_for("/")], {**RETRY_ON}, follow=True)
    assert_the_rate_was_learnt(result, a.log(), LIMITED["rate"])


@pytest_twisted.ensureDeferred
async def test_autothrottle_cannot_send_into_a_pause_nor_faster_than_the_pace(
    pbsite: PushbackSite,
) -> None:
    # alone, AutoThrottle at these values sends 8 at once: 38 429s and 12 pages given up
    a = pbsite.add("a", burst=5, retry_after=1, **LIMITED)
    result = await crawl([a.url_for("/")], {**RETRY_ON, **AUTOTHROTTLE_FAST}, follow=True)
    assert_the_rate_was_learnt(result, a.log(), LIMITED["rate"])


@pytest_twisted.ensureDeferred
async def test_autothrottle_stays_free_to_go_slower_than_the_site_allows(
    pbsite: PushbackSite,
) -> None:
    # 200 ms answers and a target of half a request in flight: AutoThrottle's delay is 0.4 s,
    # four times the 0.1 s the site's limit allows; scrapy-rep never sends sooner than it
    a = pbsite.add("a", burst=5, retry_after=1, **{**LIMITED, "pages": 20, "latency": 0.2})
    settings = {**RETRY_ON, **AUTOTHROTTLE_FAST, "AUTOTHROTTLE_TARGET_CONCURRENCY": 0.5}
    result = await crawl([a.url_for("/")], settings, follow=True)
    log = a.log()
    assert served(log) == set(page_paths(20))
    assert [e for e in pages(log) if e.status != 200] == []
    assert median_gap(second_half(log)) >= 0.3, [round(e.at, 3) for e in pages(log)]
    assert not [k for k in result.stats if k.startswith("rep/pushback/")], result.stats

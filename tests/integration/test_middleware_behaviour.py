"""The middleware in real crawls: origins, single-flight, expiry, parking, tokens, hooks.

Every test runs a real Scrapy crawl against the loopback fake site. The only
thing faked is the time (``REP_CLOCK``, a ManualClock's ``now``), advanced from inside
the crawl.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterator
from typing import Any

import pytest
import pytest_twisted
import scrapy
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.downloadermiddlewares.useragent import UserAgentMiddleware
from scrapy.http import Response
from scrapy.utils.misc import load_object

from scrapy_rep.components.robots import RobotsMiddleware
from scrapy_rep.crawl import compat
from scrapy_rep.runtime.settings import TUNE, SettingError
from tests.support.clock import ManualClock
from tests.support.crawl import CrawlResult, ListSpider, crawl, crawl_many
from tests.support.decision import FIELDS as RECORD_FIELDS
from tests.support.fakesite import FakeSite, Reply
from tests.support.steps import StepSpider, hit_order


def slot_jitter(slot: Any) -> float:
    """The random variation of a slot's delay, as Scrapy 2.19's ``jitter`` counts it."""
    if compat.SLOT_JITTER:
        return float(slot.jitter)
    return 0.5 if slot.randomize_delay else 0.0


RULES = b"User-agent: *\nDisallow: /private\n"


# -- origins -------------------------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_each_port_and_host_name_is_its_own_origin(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(body=RULES))
    b = site.add("b")  # same host, another port: robots.txt 404, everything allowed
    by_name = f"http://localhost:{a.port}"  # same server as a, another host name
    result = await crawl(
        [a.url_for("/private/1"), b.url_for("/private/1"), by_name + "/private/1", by_name + "/x"]
    )
    assert sorted(result.downloaded) == sorted([b.url_for("/private/1"), by_name + "/x"])
    assert result.dropped == {
        a.url_for("/private/1"): "disallow-rule",
        by_name + "/private/1": "disallow-rule",
    }
    assert a.hits("/robots.txt") == 2  # once as 127.0.0.1, once as localhost
    assert b.hits("/robots.txt") == 1
    assert {result.decisions[u]["origin"] for u in result.decisions} == {
        a.url,
        b.url,
        f"http://localhost:{a.port}",
    }


# -- single-flight --------------------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_single_flight_one_fetch_for_50_concurrent_requests(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(body=RULES, delay=0.5))
    allowed = [a.url_for(f"/page/{i}") for i in range(25)]
    disallowed = [a.url_for(f"/private/{i}") for i in range(25)]
    mixed = [u for pair in zip(allowed, disallowed, strict=True) for u in pair]
    result = await crawl(mixed, {"CONCURRENT_REQUESTS": 64, "CONCURRENT_REQUESTS_PER_DOMAIN": 64})
    assert a.hits("/robots.txt") == 1
    assert result.stat("rep/fetch/count") == 1
    assert sorted(result.downloaded) == sorted(allowed)
    # none slipped through unchecked while the fetch was in flight
    assert result.dropped == {u: "disallow-rule" for u in disallowed}
    assert all(a.hits(f"/private/{i}") == 0 for i in range(25))
    assert all(result.decisions[u]["policy_status"] == "ok" for u in mixed)


# -- expiry ---------------------------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_policy_expires_after_the_ttl(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(body=RULES))
    clock = ManualClock()
    pages = [a.url_for(p) for p in ("/p1", "/p2", "/p3", "/p4")]
    result = await crawl(
        pages,
        {"REP_CLOCK": clock.now, "REP_CACHE_TTL": 100},
        spider=StepSpider,
        advances=[50, 60, 99],  # t=50 fresh, t=110 expired, t=209 fresh again
        clock=clock,
    )
    assert result.downloaded == pages
    assert hit_order(site, "a") == ["/robots.txt", "/p1", "/p2", "/robots.txt", "/p3", "/p4"]
    assert result.stat("rep/cache/expired") == 1


@pytest_twisted.ensureDeferred
async def test_cache_control_max_age_is_respected(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(body=RULES, headers={"Cache-Control": "max-age=200"}))
    clock = ManualClock()
    pages = [a.url_for(p) for p in ("/p1", "/p2", "/p3")]
    result = await crawl(
        pages,
        {"REP_CLOCK": clock.now, "REP_CACHE_TTL": 86_400, TUNE: {"policy.min_ttl": 0}},
        spider=StepSpider,
        advances=[150, 100],  # t=150 fresh, t=250 past max-age
        clock=clock,
    )
    assert result.downloaded == pages
    assert hit_order(site, "a") == ["/robots.txt", "/p1", "/p2", "/robots.txt", "/p3"]


class AdvanceOnHeaders(ListSpider):
    """Advances the clock when the response headers of chosen URLs arrive."""

    name = "advance"

    def __init__(self, clock: ManualClock, advance_on: dict[str, float], **kw: Any) -> None:
        super().__init__(**kw)
        self.clock = clock
        self.advance_on = advance_on

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> AdvanceOnHeaders:
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.on_headers, signal=signals.headers_received)
        return spider

    def on_headers(
        self, headers: Any, body_length: int, request: scrapy.Request, spider: Any
    ) -> None:
        self.clock.advance(self.advance_on.get(request.url, 0))


@pytest_twisted.ensureDeferred
async def test_new_policy_stops_an_already_queued_url(site: FakeSite) -> None:
    """/late is in the scheduler while /early downloads; by the time it leaves, the file
    has expired, and the refetched one disallows it."""
    a = site.add("a").robots(
        Reply(body=b"User-agent: *\nAllow: /\n", headers={"Cache-Control": "max-age=10"}),
        Reply(body=b"User-agent: *\nDisallow: /late\n"),
    )
    clock = ManualClock()
    early, late = a.url_for("/early"), a.url_for("/late")
    result = await crawl(
        [scrapy.Request(early, priority=10), scrapy.Request(late, priority=0)],
        {
            "REP_CLOCK": clock.now,
            TUNE: {"policy.min_ttl": 0},
            "CONCURRENT_REQUESTS": 1,
            "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        },
        spider=AdvanceOnHeaders,
        clock=clock,
        advance_on={early: 20},
    )
    assert result.downloaded == [early]
    assert result.dropped == {late: "disallow-rule"}
    assert hit_order(site, "a") == ["/robots.txt", "/early", "/robots.txt"]
    assert result.decisions[late]["policy_digest"] != result.decisions[early]["policy_digest"]
    assert result.decisions[late]["matched_line"] == 2


# -- paused origins -------------------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_paused_origin_does_not_slow_a_healthy_one(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(status=503), Reply(status=503), Reply(body=RULES))
    b = site.add("b").robots(Reply(body=RULES))
    a_pages = [a.url_for(f"/a/{i}") for i in range(10)]
    b_pages = [b.url_for(f"/b/{i}") for i in range(30)]
    result = await crawl(
        a_pages + b_pages,  # A's requests come first and would fill the downloader
        {
            "CONCURRENT_REQUESTS": 4,
            "CONCURRENT_REQUESTS_PER_DOMAIN": 4,
            "REP_PAUSE_INITIAL": 0.5,
            "REP_PAUSE_MAX": 1.0,
        },
    )
    log = site.hits_log()
    first_a_page = min(i for i, (o, p) in enumerate(log) if o == "a" and p != "/robots.txt")
    last_b_page = max(i for i, (o, p) in enumerate(log) if o == "b" and p != "/robots.txt")
    assert last_b_page < first_a_page
    # A's pages were parked, then released and downloaded after its robots.txt recovered
    a_robots = [i for i, (o, p) in enumerate(log) if o == "a" and p == "/robots.txt"]
    assert len(a_robots) == 3 and a_robots[-1] < first_a_page
    assert sorted(result.downloaded) == sorted(a_pages + b_pages)
    assert result.dropped == {}
    # (B's first requests beyond half of CONCURRENT_REQUESTS were parked while its robots.txt
    # was on its way, and released with it: parked, never waiting in the downloader)
    assert result.stat("rep/parked") == result.stat("rep/released") >= len(a_pages)
    assert result.stat("rep/resumes") == 1
    assert all(result.decisions[u]["policy_status"] == "ok" for u in a_pages)


# -- product tokens -------------------------------------------------------------------------------


class AlphaSpider(ListSpider):
    name = "alpha"
    custom_settings = {"REP_PRODUCT_TOKEN": "alpha"}  # noqa: RUF012


class BetaSpider(ListSpider):
    name = "beta"
    custom_settings = {"REP_PRODUCT_TOKEN": "beta"}  # noqa: RUF012


@pytest_twisted.ensureDeferred
async def test_two_spiders_two_tokens_one_fetch_per_origin(site: FakeSite) -> None:
    body = b"User-agent: alpha\nDisallow: /a\n\nUser-agent: beta\nDisallow: /b\n\n"
    body += b"User-agent: *\nDisallow: /\n"
    one = site.add("one").robots(Reply(body=body, delay=0.3))
    two = site.add("two").robots(Reply(body=body))
    paths = ["/a/1", "/b/1", "/c"]
    urls = [o.url_for(p) for o in (one, two) for p in paths]
    alpha, beta = await crawl_many([(AlphaSpider, urls, {}), (BetaSpider, urls, {})])
    assert sorted(alpha.downloaded) == sorted(
        o.url_for(p) for o in (one, two) for p in ("/b/1", "/c")
    )
    assert alpha.dropped == {o.url_for("/a/1"): "disallow-rule" for o in (one, two)}
    assert sorted(beta.downloaded) == sorted(
        o.url_for(p) for o in (one, two) for p in ("/a/1", "/c")
    )
    assert beta.dropped == {o.url_for("/b/1"): "disallow-rule" for o in (one, two)}
    assert one.hits("/robots.txt") == 1
    assert two.hits("/robots.txt") == 1
    assert {d["product_token"] for d in alpha.decisions.values()} == {"alpha"}
    assert {d["product_token"] for d in beta.decisions.values()} == {"beta"}
    assert alpha.decisions[one.url_for("/a/1")]["group"] == "user-agent: alpha (line 1)"


# -- per-request and per-crawl switches -----------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_dont_obey_robotstxt_meta(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(body=b"User-agent: *\nDisallow: /\n"))
    b = site.add("b").robots(Reply(body=b"User-agent: *\nDisallow: /\n"))
    free = {"dont_obey_robotstxt": True}
    result = await crawl(
        [
            scrapy.Request(a.url_for("/free"), meta=free),
            a.url_for("/obeyed"),
            scrapy.Request(b.url_for("/free"), meta=free),
        ]
    )
    assert sorted(result.downloaded) == sorted([a.url_for("/free"), b.url_for("/free")])
    assert result.dropped == {a.url_for("/obeyed"): "disallow-rule"}
    assert b.hits("/robots.txt") == 0  # nothing on b asked for its robots.txt
    assert a.url_for("/free") not in result.decisions


@pytest_twisted.ensureDeferred
async def test_disallowed_action_park_holds_until_the_file_changes(site: FakeSite) -> None:
    a = site.add("a").robots(
        Reply(body=b"User-agent: *\nDisallow: /later\n"),
        Reply(body=b"User-agent: *\nAllow: /\n"),
    )
    now, later = a.url_for("/now"), a.url_for("/later")
    result = await crawl(
        [now, later],
        {"REP_CACHE_TTL": 1, TUNE: {"disallowed_action": "park", "policy.min_ttl": 0}},
    )
    assert sorted(result.downloaded) == sorted([now, later])
    assert result.dropped == {}
    # held until the file expired (REP_CACHE_TTL=1) and the new one allowed it
    assert hit_order(site, "a") == ["/robots.txt", "/now", "/robots.txt", "/later"]
    assert result.stat("rep/parked/disallow-rule") == 1
    assert result.stat("robotstxt/forbidden") == 1
    assert result.decisions[later]["rep_decision"] == "allow"


def collection_scope(request: scrapy.Request, spider: Any) -> str:
    """The application's own scope: /out is rejected, /maybe is undecided."""
    if "/out" in request.url:
        return "rejected"
    if "/maybe" in request.url:
        return "unresolved"
    return "approved"


@pytest_twisted.ensureDeferred
async def test_collection_hook(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(body=RULES))
    paths = ["/in", "/out/1", "/maybe", "/private/out"]
    result = await crawl(
        [a.url_for(p) for p in paths],
        {"REP_COLLECTION_POLICY": f"{__name__}.collection_scope"},
    )
    assert result.downloaded == [a.url_for("/in")]
    assert result.dropped == {
        a.url_for("/out/1"): "collection-rejected",
        a.url_for("/maybe"): "collection-unresolved",
        a.url_for("/private/out"): "disallow-rule",  # robots.txt speaks first
    }
    assert result.decisions[a.url_for("/out/1")]["rep_decision"] == "allow"
    assert result.decisions[a.url_for("/out/1")]["collection_decision"] == "rejected"
    assert result.decisions[a.url_for("/in")]["collection_decision"] == "approved"
    assert result.stat("rep/dropped/collection-rejected") == 1
    assert a.hits("/out/1") == a.hits("/maybe") == 0


# -- Crawl-delay ----------------------------------------------------------------------------------


class SlotSpider(ListSpider):
    """Notes the download slot's delay as each response arrives."""

    name = "slots"

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.seen_slots: list[tuple[float, float, dict[str, Any]]] = []

    def parse(self, response: Response) -> Iterator[scrapy.Request]:
        downloader = self.crawler.engine.downloader
        key = response.meta["download_slot"]
        slot = downloader.slots[key]
        self.seen_slots.append(
            (slot.delay, slot_jitter(slot), dict(downloader.per_slot_settings.get(key, {})))
        )
        yield from super().parse(response)


async def crawl_delay_slots(
    site: FakeSite, delay: str, settings: dict[str, Any]
) -> tuple[CrawlResult, list[tuple[float, float, dict[str, Any]]]]:
    """Two pages of an origin asking for ``delay``; the slots the spider saw."""
    a = site.add("a").robots(Reply(body=f"User-agent: *\nCrawl-delay: {delay}\n".encode()))
    result = await crawl([a.url_for("/1"), a.url_for("/2")], settings, spider=SlotSpider)
    assert sorted(result.downloaded) == [a.url_for("/1"), a.url_for("/2")]
    assert a.hits("/robots.txt") == 1
    assert result.crawler is not None
    spider = result.crawler.spider
    assert isinstance(spider, SlotSpider)
    assert len(spider.seen_slots) == 2, "the spider saw no slot"
    return result, spider.seen_slots


@pytest_twisted.ensureDeferred
async def test_crawl_delay_sets_the_slot_delay(site: FakeSite) -> None:
    result, slots = await crawl_delay_slots(site, "0.5", {})
    for delay, jitter, per_slot in slots:
        assert delay >= 0.5
        assert jitter == 0  # a Crawl-delay is a minimum: no jitter below it
        assert per_slot["delay"] >= 0.5
    assert result.stat("rep/crawl_delay/applied") >= 1


@pytest_twisted.ensureDeferred
async def test_crawl_delay_is_capped(site: FakeSite) -> None:
    result, slots = await crawl_delay_slots(site, "100", {"REP_CRAWL_DELAY_MAX": 0.2})
    for delay, _jitter, per_slot in slots:
        assert delay == pytest.approx(0.2)
        assert per_slot["delay"] == pytest.approx(0.2)
    assert result.stat("rep/crawl_delay/capped") == 1


@pytest.mark.parametrize("store", ["memory", "redis"])
@pytest_twisted.ensureDeferred
async def test_autothrottle_never_sends_faster_than_the_crawl_delay(
    site: FakeSite, store: str, request: pytest.FixtureRequest
) -> None:
    """AutoThrottle rewrites the slot's delay on every response: the site's Crawl-delay
    stays a floor under it, with the cluster's shared pacing too (before, with Redis: sent
    [2.486, 1.294, 0.5, 0.251, 0.194] s apart, queued in the host's slot behind AutoThrottle's
    start delay, then let go at its pace)."""
    a = site.add("a").robots(Reply(body=b"User-agent: *\nCrawl-delay: 1\n"))
    urls = [a.url_for(f"/{n}") for n in range(6)]
    settings: dict[str, Any] = {"AUTOTHROTTLE_ENABLED": True}  # its start delay: 5 s
    if store == "redis":
        settings["REP_STORE"] = request.getfixturevalue("redis_server")
    result = await crawl(urls, settings)
    assert sorted(result.downloaded) == sorted(urls)
    sent = sorted(hit.at for hit in a.requests() if hit.path != "/robots.txt")
    gaps = [round(later - earlier, 3) for earlier, later in itertools.pairwise(sent)]
    assert len(gaps) == 5
    # the site sees arrivals, not sends: on a loaded machine one arrival can lag its send by a
    # few tenths (one gap shorter, the next longer); the run as a whole keeps the delay
    assert min(gaps) >= 0.7, f"sent {gaps} s apart under AutoThrottle; Crawl-delay: 1"
    assert sent[-1] - sent[0] >= 5 * 1.0, f"sent {gaps} s apart under AutoThrottle"


# -- what the middleware tells -------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_decision_record_has_every_field(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(body=RULES))
    ok, no = a.url_for("/ok"), a.url_for("/private/no")
    result = await crawl([ok, no])
    digest = hashlib.sha256(RULES).hexdigest()[:32]
    for url in (ok, no):
        record = result.decisions[url]
        assert set(RECORD_FIELDS) <= set(record)
        assert json.loads(json.dumps(record)) == record
        assert record["origin"] == a.url
        assert record["product_token"] == "testbot"
        assert record["url"] == url
        assert (record["policy_status"], record["policy_http_status"]) == ("ok", 200)
        assert isinstance(record["policy_fetched_at"], float)
        assert record["policy_digest"] == digest
        assert record["policy_url"] == record["policy_final_url"] == a.robots_url
        assert record["group"] == "user-agent: * (line 1)"
    allowed, dropped = result.decisions[ok], result.decisions[no]
    assert (allowed["rep_decision"], allowed["collection_decision"]) == ("allow", "approved")
    assert (allowed["action"], allowed["reason"]) == ("download", "no-matching-rule")
    assert (allowed["matched_rule"], allowed["matched_line"]) == (None, None)
    assert (dropped["rep_decision"], dropped["action"]) == ("disallow", "drop")
    assert (dropped["matched_rule"], dropped["matched_line"]) == ("disallow: /private", 2)
    assert dropped["reason"] == "disallow-rule"


@pytest_twisted.ensureDeferred
async def test_stats_keys(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(body=RULES))
    urls = [a.url_for(p) for p in ("/1", "/2", "/3", "/private/1", "/private/2")]
    result = await crawl(urls, {"CONCURRENT_REQUESTS": 1})
    expected = {
        "rep/fetch/count": 1,
        "rep/fetch/outcome/2xx": 1,
        "rep/judgements": 5,
        "rep/judgements/allow": 3,
        "rep/judgements/disallow": 2,
        "rep/downloaded": 3,
        "rep/dropped/disallow-rule": 2,
        "robotstxt/forbidden": 2,
    }
    assert {k: result.stat(k) for k in expected} == expected
    assert result.stat("rep/cache/miss") >= 1
    assert result.stat("rep/cache/hit") >= 1
    assert result.stat("rep/cache/miss") + result.stat("rep/cache/hit") == 5
    # bounded dimensions: never a key per origin
    assert not [k for k in result.stats if str(a.port) in k or "127.0.0.1" in k]


# -- set-up ---------------------------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_builtin_configured_explicitly_is_replaced_at_its_priority(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(body=RULES))
    result = await crawl(
        [a.url_for("/x"), a.url_for("/private/x")],
        {
            "ROBOTSTXT_OBEY": True,
            "DOWNLOADER_MIDDLEWARES": {
                "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": 543
            },
        },
    )
    assert result.downloaded == [a.url_for("/x")]
    assert result.dropped == {a.url_for("/private/x"): "disallow-rule"}
    assert a.hits("/robots.txt") == 1  # the built-in would have fetched it again
    crawler = result.crawler
    assert crawler is not None
    priorities = {
        load_object(k): v for k, v in crawler.settings.getwithbase("DOWNLOADER_MIDDLEWARES").items()
    }
    assert priorities[RobotsMiddleware] == 543
    assert priorities[RobotsTxtMiddleware] is None
    assert crawler.engine is not None
    chain = [type(m) for m in crawler.engine.downloader.middleware.middlewares]
    assert RobotsTxtMiddleware not in chain
    assert chain.count(RobotsMiddleware) == 1
    in_order = [priorities[m] for m in chain]
    assert in_order == sorted(in_order)  # ours runs where the built-in was configured
    assert chain.index(UserAgentMiddleware) < chain.index(RobotsMiddleware)
    assert priorities[UserAgentMiddleware] < 543 < priorities[HttpCompressionMiddleware]
    assert chain.index(RobotsMiddleware) < chain.index(HttpCompressionMiddleware)


@pytest_twisted.ensureDeferred
async def test_invalid_product_token_stops_the_crawl(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(body=RULES))
    with pytest.raises(SettingError) as raised:
        await crawl([a.url_for("/x")], {"REP_PRODUCT_TOKEN": "My Bot/1.0"})
    assert str(raised.value).startswith("REP_PRODUCT_TOKEN: invalid product token 'My Bot/1.0'")
    assert a.hits() == 0


# -- accounting -----------------------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_every_yielded_request_is_downloaded_or_dropped_with_a_reason(
    site: FakeSite,
) -> None:
    a = site.add("a").robots(Reply(body=RULES))  # rules
    q = site.add("q")  # 404: everything allowed
    p = site.add("p").robots(Reply(status=503))  # paused, never recovers
    r = site.add("r").robots(Reply(status=503), Reply(body=RULES))  # paused, recovers
    a.links("/", [a.url_for("/1"), a.url_for("/private/1"), p.url_for("/1"), q.url_for("/")])
    a.links(
        "/1",
        [a.url_for("/"), p.url_for("/1"), p.url_for("/2"), r.url_for("/1"), a.url_for("/maybe")],
    )
    q.links("/", [q.url_for("/1"), r.url_for("/1"), r.url_for("/private/1"), p.url_for("/2")])
    q.links("/1", [a.url_for("/private/2"), r.url_for("/2"), p.url_for("/1"), q.url_for("/out")])
    r.links("/1", [r.url_for("/2"), r.url_for("/1"), p.url_for("/1"), a.url_for("/1")])
    result = await crawl(
        [a.url_for("/"), r.url_for("/1")],
        {
            "REP_PAUSE_INITIAL": 0.3,
            "REP_PAUSE_MAX": 0.6,
            TUNE: {"policy.pause_max_tries": 2},
            "REP_COLLECTION_POLICY": f"{__name__}.collection_scope",
        },
        follow=True,
    )
    assert result.errors == {}
    yielded = set(result.yielded)
    assert len(yielded) == 13
    assert set(result.downloaded) | set(result.dropped) == yielded
    assert len(result.downloaded) == len(set(result.downloaded))  # nothing twice
    assert set(result.downloaded).isdisjoint(result.dropped)
    dropped_stats = sum(v for k, v in result.stats.items() if k.startswith("rep/dropped/"))
    assert result.stat("rep/downloaded") + dropped_stats == len(yielded)
    assert result.dropped == {
        a.url_for("/private/1"): "disallow-rule",
        a.url_for("/private/2"): "disallow-rule",
        r.url_for("/private/1"): "disallow-rule",
        p.url_for("/1"): "policy-unresolved",
        p.url_for("/2"): "policy-unresolved",
        a.url_for("/maybe"): "collection-unresolved",
        q.url_for("/out"): "collection-rejected",
    }
    assert p.hits("/robots.txt") == 2
    assert r.hits("/robots.txt") == 2


@pytest_twisted.ensureDeferred
async def test_park_overflow_and_expiry_reach_the_errback(site: FakeSite) -> None:
    """REP_PARK_MAX bounds the held set; what does not fit, or waits too long, is
    dropped in the downloader, so the spider's errback gets a RepIgnoreRequest."""
    a = site.add("a").robots(Reply(status=503))
    urls = [a.url_for(f"/p{i}") for i in range(5)]
    result = await crawl(
        urls,
        {
            "REP_PARK_MAX": 2,
            "REP_PARK_TIMEOUT": 0.2,
            "REP_PAUSE_INITIAL": 30,
            "REP_PAUSE_MAX": 30,
            "REP_PENDING_WAIT": 0,
        },
    )
    assert result.downloaded == []
    assert set(result.dropped) == set(urls)
    reasons = sorted(result.dropped.values())
    assert reasons.count("park-overflow") >= 1
    assert set(reasons) <= {"park-overflow", "park-expired"}
    assert result.stat("rep/dropped/park-overflow") + result.stat(
        "rep/dropped/park-expired"
    ) == len(urls)
    assert a.hits() == a.hits("/robots.txt") == 1


@pytest_twisted.ensureDeferred
async def test_manual_setup_beside_the_builtin_warns(
    site: FakeSite, caplog: pytest.LogCaptureFixture
) -> None:
    """Without the add-on, enabling ours next to an active built-in fetches twice: say so."""
    a = site.add("a").robots(Reply(body=b"User-agent: *\nDisallow: /x\n"))
    settings = {
        "ADDONS": {},
        "ROBOTSTXT_OBEY": True,
        "DOWNLOADER_MIDDLEWARES": {"scrapy_rep.RobotsMiddleware": 101},
    }
    with caplog.at_level("WARNING"):
        await crawl([a.url_for("/")], settings)
    assert any("RobotsTxtMiddleware is active too" in r.getMessage() for r in caplog.records)
    assert a.hits("/robots.txt") == 2  # the warning is about this


@pytest_twisted.ensureDeferred
async def test_warns_when_the_token_is_not_in_the_user_agent_sent(
    site: FakeSite, caplog: pytest.LogCaptureFixture
) -> None:
    """RFC 9309 §2.2.1: the crawler should send its product token in User-Agent."""
    a = site.add("a").robots(Reply(body=b"User-agent: *\nDisallow: /x\n"))
    with caplog.at_level("WARNING"):
        await crawl([a.url_for("/")], {"REP_PRODUCT_TOKEN": "otherbot"})
    warned = [r for r in caplog.records if "is not in the User-Agent sent" in r.getMessage()]
    assert len(warned) == 1 and "otherbot" in warned[0].getMessage()
    caplog.clear()
    with caplog.at_level("WARNING"):
        await crawl([a.url_for("/")], {"REP_PRODUCT_TOKEN": "testbot"})
    assert not [r for r in caplog.records if "is not in the User-Agent sent" in r.getMessage()]


@pytest_twisted.ensureDeferred
async def test_addon_switches_the_builtin_off_where_obey_is_on(
    site: FakeSite, caplog: pytest.LogCaptureFixture
) -> None:
    """ROBOTSTXT_OBEY = True (new projects' default) with the add-on: one middleware, one fetch.

    Before Scrapy 2.15 the built-in's import-path key in DOWNLOADER_MIDDLEWARES_BASE
    is not overridden by a class key: the add-on switches both off.
    """
    a = site.add("a").robots(Reply(body=RULES))
    with caplog.at_level("WARNING"):
        result = await crawl([a.url_for("/x"), a.url_for("/private/x")], {"ROBOTSTXT_OBEY": True})
    assert result.downloaded == [a.url_for("/x")]
    assert result.dropped == {a.url_for("/private/x"): "disallow-rule"}
    assert a.hits("/robots.txt") == 1
    assert not [r for r in caplog.records if "is active too" in r.getMessage()]
    assert result.crawler is not None and result.crawler.engine is not None
    chain = [type(m) for m in result.crawler.engine.downloader.middleware.middlewares]
    assert RobotsTxtMiddleware not in chain
    assert chain.count(RobotsMiddleware) == 1


@pytest.mark.skipif(
    compat.ROBOTS_PARSED is None,
    reason=f"robots_parsed needs Scrapy >= 2.18; this is Scrapy {compat.SCRAPY_VERSION}",
)
@pytest_twisted.ensureDeferred
async def test_robots_parsed_is_sent_once_per_fetch(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(body=RULES))
    heard: list[tuple[Any, str]] = []

    class HearingSpider(ListSpider):
        @classmethod
        def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> HearingSpider:
            spider = super().from_crawler(crawler, *args, **kwargs)
            crawler.signals.connect(spider.on_parsed, signal=compat.ROBOTS_PARSED)
            return spider

        def on_parsed(self, robotparser: Any, request: scrapy.Request, spider: Any) -> None:
            heard.append((robotparser, request.url))

    await crawl([a.url_for("/x"), a.url_for("/private/x")], spider=HearingSpider)
    assert len(heard) == 1
    robots, url = heard[0]
    assert url == a.url_for("/x")  # the first request that asked for the fetch
    assert robots.allowed(a.url_for("/x"), "testbot")  # Scrapy's order: URL, then agent
    assert not robots.allowed(a.url_for("/private/x"), "testbot")


@pytest_twisted.ensureDeferred
async def test_missing_features_are_said_once_and_the_crawl_works(
    site: FakeSite, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As on Scrapy < 2.18: no robots_parsed to send; one INFO line says so; rules still apply."""
    monkeypatch.setattr(compat, "ROBOTS_PARSED", None)
    monkeypatch.setattr(compat, "_told", False)
    a = site.add("a").robots(Reply(body=RULES))
    b = site.add("b").robots(Reply(body=RULES))
    with caplog.at_level("INFO"):
        results = await crawl_many(
            [
                (ListSpider, [a.url_for("/x"), a.url_for("/private/x")], {}),
                (ListSpider, [b.url_for("/x")], {}),
            ]
        )
    assert results[0].downloaded == [a.url_for("/x")]
    assert results[0].dropped == {a.url_for("/private/x"): "disallow-rule"}
    assert results[1].downloaded == [b.url_for("/x")]
    told = [r for r in caplog.records if "need a newer Scrapy" in r.getMessage()]
    assert len(told) == 1 and told[0].levelname == "INFO"
    assert "robots_parsed" in told[0].getMessage()

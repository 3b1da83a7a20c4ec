"""One real crawl per row of the status table (docs/design.md, "The status table").

Each test says which URLs were downloaded, which were dropped and why, and
how often robots.txt was fetched. Paused origins use short back-offs so the
crawl ends; the fake site's hit log shows that nothing of a paused origin
was fetched before its robots.txt could be read.
"""

from __future__ import annotations

import email.utils
import time
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted

from scrapy_rep.runtime.settings import TUNE
from tests.support.audit import audited_crawl, of
from tests.support.crawl import crawl
from tests.support.fakesite import FakeSite, Origin, Reply

RULES = b"User-agent: *\nDisallow: /private\nAllow: /private/open\n"
#: back-offs of 0.3 s then 0.6 s, given up on the second failed fetch
PAUSE: dict[str, Any] = {
    "REP_PAUSE_INITIAL": 0.3,
    "REP_PAUSE_MAX": 0.6,
    TUNE: {"policy.pause_max_tries": 2},
}
PATHS = ["/", "/private/x", "/private/open/y", "/public"]


def urls(origin: Origin, paths: list[str] = PATHS) -> list[str]:
    return [origin.url_for(p) for p in paths]


def page_hits(site: FakeSite, name: str) -> list[int]:
    """Positions in the site-wide hit log of ``name``'s requests other than robots.txt."""
    return [i for i, (o, path) in enumerate(site.hits_log()) if o == name and path != "/robots.txt"]


def robots_hits(site: FakeSite, name: str) -> list[int]:
    return [i for i, (o, path) in enumerate(site.hits_log()) if o == name and path == "/robots.txt"]


def assert_rules_applied(result: Any, origin: Origin) -> None:
    assert sorted(result.downloaded) == sorted(urls(origin, ["/", "/private/open/y", "/public"]))
    assert result.dropped == {origin.url_for("/private/x"): "disallow-rule"}
    assert result.errors == {}


# -- 2xx ------------------------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_200_rules_apply(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(body=RULES))
    result = await crawl(urls(a))
    assert_rules_applied(result, a)
    assert a.hits("/robots.txt") == 1
    assert a.hits("/private/x") == 0
    dropped = result.decisions[a.url_for("/private/x")]
    assert (dropped["matched_rule"], dropped["matched_line"]) == ("disallow: /private", 2)
    allowed = result.decisions[a.url_for("/private/open/y")]
    assert (allowed["matched_rule"], allowed["reason"]) == ("allow: /private/open", "allow-rule")
    assert result.stat("rep/fetch/outcome/2xx") == 1
    # robots.txt is fetched before any page of the origin
    assert robots_hits(site, "a")[0] < min(page_hits(site, "a"))


# -- 4xx: unavailable, everything allowed -----------------------------------------------------


@pytest.mark.parametrize("status", [404, 410])
@pytest_twisted.ensureDeferred
async def test_4xx_allows_everything(site: FakeSite, status: int) -> None:
    # the error page says "Disallow: /": it must not be parsed as rules
    a = site.add("a").robots(Reply(status=status, body=b"User-agent: *\nDisallow: /\n"))
    result = await crawl(urls(a))
    assert sorted(result.downloaded) == sorted(urls(a))
    assert result.dropped == {}
    assert a.hits("/robots.txt") == 1
    for url in urls(a):
        record = result.decisions[url]
        assert record["reason"] == "robots-unavailable"
        assert record["policy_status"] == "unavailable"
        assert record["policy_http_status"] == status


# -- pause rows: 401, 403, 429, 5xx, network ----------------------------------------------------

NEVER_RECOVERS = {
    "401": (Reply(status=401), "401"),
    "403": (Reply(status=403), "403"),
    "429": (Reply(status=429), "429"),
    "500": (Reply(status=500), "5xx"),
    "503": (Reply(status=503), "5xx"),
    "reset": (Reply(reset=True), "network"),
    "hang": (Reply(hang=True), "network"),
}


@pytest.mark.parametrize("case", list(NEVER_RECOVERS))
@pytest_twisted.ensureDeferred
async def test_pause_that_never_recovers_drops_unresolved(site: FakeSite, case: str) -> None:
    reply, outcome = NEVER_RECOVERS[case]
    a = site.add("a").robots(reply)
    result = await crawl(urls(a), {**PAUSE, "REP_FETCH_TIMEOUT": 1})
    assert result.downloaded == []
    assert page_hits(site, "a") == []  # not one page while paused, nor after giving up
    assert result.dropped == {url: "policy-unresolved" for url in urls(a)}
    assert result.errors == {}
    assert a.hits("/robots.txt") == 2  # the first try, and one refetch after the back-off
    assert result.stat(f"rep/fetch/outcome/{outcome}") == 2
    assert result.stat(f"rep/pauses/{outcome}") == 1
    assert result.stat("rep/dropped/policy-unresolved") == len(PATHS)
    assert result.stat("rep/downloaded") == 0
    for url in urls(a):
        assert result.decisions[url]["policy_status"] == "unresolved"
    if outcome == "network":
        assert result.decisions[a.url_for("/")]["policy_http_status"] is None


RECOVERS = {
    "401": Reply(status=401),
    "403": Reply(status=403),
    "429": Reply(status=429),
    "503": Reply(status=503),
    "reset": Reply(reset=True),
}


@pytest.mark.parametrize("case", list(RECOVERS))
@pytest_twisted.ensureDeferred
async def test_pause_then_recovery_releases_parked_requests(site: FakeSite, case: str) -> None:
    bad = RECOVERS[case]
    a = site.add("a").robots(bad, bad, Reply(body=RULES))
    result = await crawl(urls(a), {**PAUSE, TUNE: {"policy.pause_max_tries": 5}})
    assert_rules_applied(result, a)
    assert a.hits("/robots.txt") == 3
    # every page hit comes after the third (good) robots.txt
    assert robots_hits(site, "a")[2] < min(page_hits(site, "a"))
    assert result.stat("rep/resumes") == 1
    assert result.stat("rep/released") == result.stat("rep/parked") > 0
    for url in result.downloaded:
        assert result.decisions[url]["policy_status"] == "ok"


@pytest_twisted.ensureDeferred
async def test_429_retry_after_is_honoured_and_capped(site: FakeSite) -> None:
    """The back-off (30 s) would outlast CLOSESPIDER_TIMEOUT; Retry-After (capped) does not."""
    far = email.utils.formatdate(time.time() + 7 * 86_400, usegmt=True)
    a = site.add("a").robots(Reply(status=429, headers={"Retry-After": "1"}), Reply(body=RULES))
    b = site.add("b").robots(Reply(status=429, headers={"Retry-After": far}), Reply(body=RULES))
    settings = {
        "REP_PAUSE_INITIAL": 30,
        TUNE: {"policy.retry_after_max": 1.5},
        "CLOSESPIDER_TIMEOUT": 10,
    }
    result = await crawl(urls(a) + urls(b), settings)
    assert sorted(result.downloaded) == sorted(
        urls(a, ["/", "/private/open/y", "/public"]) + urls(b, ["/", "/private/open/y", "/public"])
    )
    assert result.dropped == {
        a.url_for("/private/x"): "disallow-rule",
        b.url_for("/private/x"): "disallow-rule",
    }
    assert a.hits("/robots.txt") == b.hits("/robots.txt") == 2
    for name in ("a", "b"):
        assert robots_hits(site, name)[1] < min(page_hits(site, name))
    assert result.stat("rep/pauses/429") == 2
    assert result.stats["finish_reason"] == "finished"


# -- redirects ----------------------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_redirect_chain_to_other_origins_applies_to_the_original(site: FakeSite) -> None:
    a = site.add("a")
    b = site.add("b")  # b's own robots.txt is the default 404: everything allowed there
    c = site.add("c")
    a.robots(Reply(redirect_to=b.url_for("/one")))
    b.page("/one", Reply(status=302, redirect_to=c.url_for("/two")))
    c.page("/two", Reply(status=307, redirect_to=b.url_for("/rules.txt")))
    b.page("/rules.txt", Reply(body=RULES))
    result = await crawl([*urls(a), b.url_for("/private/x")])
    assert sorted(result.downloaded) == sorted(
        [*urls(a, ["/", "/private/open/y", "/public"]), b.url_for("/private/x")]
    )
    assert result.dropped == {a.url_for("/private/x"): "disallow-rule"}
    assert a.hits("/robots.txt") == 1
    assert (b.hits("/one"), c.hits("/two"), b.hits("/rules.txt")) == (1, 1, 1)
    assert b.hits("/robots.txt") == 1  # b's own file, fetched for b's own page
    record = result.decisions[a.url_for("/private/x")]
    assert record["origin"] == a.url  # scheme://host:port
    assert record["policy_url"] == a.robots_url
    assert record["policy_final_url"] == b.url_for("/rules.txt")
    assert result.stat("rep/fetch/redirected") == 1


@pytest.mark.parametrize(("hops", "rules_apply"), [(5, True), (6, False)])
@pytest_twisted.ensureDeferred
async def test_redirect_limit(site: FakeSite, hops: int, rules_apply: bool) -> None:
    """Five hops are followed; a sixth means unavailable (allow all)."""
    a = site.add("a")
    chain = [a.robots_url] + [a.url_for(f"/hop{i}") for i in range(1, hops)]
    final = a.url_for("/final.txt")
    a.robots(Reply(redirect_to=chain[1] if hops > 1 else final))
    for i in range(1, hops):
        target = chain[i + 1] if i + 1 < hops else final
        a.page(f"/hop{i}", Reply(redirect_to=target))
    a.page("/final.txt", Reply(body=RULES))
    result = await crawl(urls(a))
    assert a.hits("/robots.txt") == 1
    assert [a.hits(f"/hop{i}") for i in range(1, hops)] == [1] * (hops - 1)
    if rules_apply:
        assert a.hits("/final.txt") == 1
        assert_rules_applied(result, a)
    else:
        assert a.hits("/final.txt") == 0  # not fetched: the sixth hop is not followed
        assert sorted(result.downloaded) == sorted(urls(a))
        assert result.dropped == {}
        record = result.decisions[a.url_for("/private/x")]
        assert (record["policy_status"], record["reason"]) == ("unavailable", "robots-unavailable")


# -- size cap -----------------------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_700_kib_robots_txt_is_read_to_500_kib(site: FakeSite) -> None:
    head = b"User-agent: *\nDisallow: /early\n"
    pad_line = b"# " + b"x" * 97 + b"\n"  # 100 bytes
    body = head + pad_line * ((600_000 - len(head)) // len(pad_line))
    assert len(body) > 512_000
    body += b"Disallow: /\n"
    body += pad_line * ((700 * 1024 - len(body)) // len(pad_line))
    assert len(body) > 700_000
    a = site.add("a").robots(Reply(body=body))
    result = await crawl(urls(a, ["/early", "/early/x", "/late", "/"]))
    assert sorted(result.downloaded) == sorted(urls(a, ["/late", "/"]))
    assert result.dropped == {
        a.url_for("/early"): "disallow-rule",
        a.url_for("/early/x"): "disallow-rule",
    }
    assert a.hits("/robots.txt") == 1
    assert result.stat("rep/fetch/truncated") == 1


# -- the RFC-literal configuration ---------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_rfc_literal_status_actions(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(status=401))
    b = site.add("b").robots(Reply(status=403))
    c = site.add("c").robots(Reply(status=503))
    d = site.add("d").robots(Reply(status=500))
    settings = {"REP_STATUS_ACTIONS": {"401": "allow", "403": "allow", "5xx": "disallow"}}
    result = await crawl(urls(a) + urls(b) + urls(c) + urls(d), settings)
    assert sorted(result.downloaded) == sorted(urls(a) + urls(b))
    assert result.dropped == {url: "robots-unreachable" for url in urls(c) + urls(d)}
    assert [o.hits("/robots.txt") for o in (a, b, c, d)] == [1, 1, 1, 1]
    assert page_hits(site, "c") == page_hits(site, "d") == []
    # nothing is paused in this configuration (requests beyond half of CONCURRENT_REQUESTS
    # may park while a robots.txt is on its way: origin-pending)
    assert result.stat("rep/parked/origin-paused") == result.stat("rep/pauses/5xx") == 0
    assert result.decisions[a.url_for("/")]["policy_http_status"] == 401
    assert result.decisions[c.url_for("/")]["policy_status"] == "unreachable"


@pytest_twisted.ensureDeferred
async def test_a_redirect_loop_is_recorded_with_the_status_the_server_sent(
    site: FakeSite, tmp_path: Path
) -> None:
    a = site.add("a")
    a.robots(Reply(redirect_to=a.url_for("/loop")))
    a.page("/loop", Reply(redirect_to=a.robots_url))
    _, found = await audited_crawl(tmp_path, [a.url_for("/x")])
    (fetch,) = of(found, "fetch")
    assert fetch["outcome"] == "redirect-limit"
    assert fetch["http_status"] in (301, 302, 303, 307, 308)  # never a made-up 310
    assert fetch["status"] == "unavailable"


@pytest_twisted.ensureDeferred
async def test_a_redirect_without_location_is_its_own_outcome(
    site: FakeSite, tmp_path: Path
) -> None:
    a = site.add("a").robots(Reply(status=302))
    result, found = await audited_crawl(tmp_path, [a.url_for("/x")])
    (fetch,) = of(found, "fetch")
    assert (fetch["outcome"], fetch["http_status"], fetch["status"]) == ("3xx", 302, "unavailable")
    assert result.stat("rep/fetch/outcome/3xx") == 1

"""The JSON Lines audit log and the robots.txt archive, from real crawls."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, ClassVar

import pytest_twisted

from scrapy_rep.core.policy import digest_of
from scrapy_rep.runtime.settings import TUNE
from tests.support.audit import audited_crawl, of, records
from tests.support.crawl import ListSpider, crawl
from tests.support.fakesite import FakeSite, Reply

RULES = b"User-agent: *\nDisallow: /private\n"


@pytest_twisted.ensureDeferred
async def test_one_decision_per_judged_request_one_fetch_per_robots_fetch(
    site: FakeSite, tmp_path: Path
) -> None:
    a = site.add("a").robots(Reply(body=RULES)).page("/gone", Reply(status=404))
    b = site.add("b")  # robots.txt 404: everything allowed
    urls = [a.url_for(p) for p in ("/", "/ok", "/gone", "/private/x")] + [b.url_for("/page")]
    result, found = await audited_crawl(tmp_path, urls)

    decisions = of(found, "decision")
    assert len(decisions) == result.stat("rep/judgements") == len(urls)
    assert sorted(d["url"] for d in decisions) == sorted(urls)
    fetches = of(found, "fetch")
    assert len(fetches) == result.stat("rep/fetch/count") == 2
    assert a.hits("/robots.txt") == b.hits("/robots.txt") == 1
    assert {f["origin"]: f["http_status"] for f in fetches} == {a.url: 200, b.url: 404}
    # every record that names a URL is about one the spider asked for
    assert {r["url"] for r in found if r["type"] != "fetch" and "url" in r} <= set(urls)


@pytest_twisted.ensureDeferred
async def test_target_status_is_kept_apart_from_the_robots_status(
    site: FakeSite, tmp_path: Path
) -> None:
    a = site.add("a").robots(Reply(body=RULES)).page("/gone", Reply(status=404))
    b = site.add("b").robots(Reply(status=410))
    gone, ok, private, free = (
        a.url_for("/gone"),
        a.url_for("/ok"),
        a.url_for("/private/x"),
        b.url_for("/x"),
    )
    _, found = await audited_crawl(tmp_path, [gone, ok, private, free])

    responses = {r["url"]: r for r in of(found, "response")}
    decisions = {r["url"]: r for r in of(found, "decision")}
    assert set(responses) == {gone, ok, free}  # nothing for the dropped URL
    # the page's 404 is the page's; the policy still says robots.txt answered 200
    assert responses[gone]["target_status"] == 404
    assert decisions[gone]["policy_http_status"] == 200
    assert "target_status" not in decisions[gone]
    # and a 200 page on an origin whose robots.txt answered 410
    assert responses[free]["target_status"] == 200
    assert (decisions[free]["policy_status"], decisions[free]["policy_http_status"]) == (
        "unavailable",
        410,
    )
    assert responses[ok]["origin"] == a.url


@pytest_twisted.ensureDeferred
async def test_archive_keeps_each_distinct_body_once(site: FakeSite, tmp_path: Path) -> None:
    other = b"User-agent: *\nDisallow: /other\n"
    origins = [site.add(n).robots(Reply(body=RULES)) for n in ("a", "b")]
    origins.append(site.add("c").robots(Reply(body=other)))
    origins.append(site.add("d").robots(Reply(status=503)))
    _, found = await audited_crawl(
        tmp_path, [o.url_for("/x") for o in origins], **{TUNE: {"policy.pause_max_tries": 1}}
    )

    archive = tmp_path / "archive"
    assert sorted(p.name for p in archive.iterdir()) == sorted(
        f"{digest_of(body)}.txt" for body in (RULES, other)
    )
    assert (archive / f"{digest_of(RULES)}.txt").read_bytes() == RULES
    archived = {f["origin"]: f["archive"] for f in of(found, "fetch")}
    assert (
        archived[origins[0].url]
        == archived[origins[1].url]
        == str(archive / f"{digest_of(RULES)}.txt")
    )
    assert archived[origins[3].url] is None  # a 503 has no body to keep


@pytest_twisted.ensureDeferred
async def test_parked_requests_of_a_slow_fetch_are_released_and_logged(
    site: FakeSite, tmp_path: Path
) -> None:
    # A robots.txt slower than REP_PENDING_WAIT: its requests are parked, then
    # released when it arrives. (Regression: they were parked again, and the
    # crawl hung until CLOSESPIDER_TIMEOUT.)
    a = site.add("a").robots(Reply(body=RULES, delay=1.0))
    urls = [a.url_for(p) for p in ("/1", "/2", "/3", "/private/x")]
    result, found = await audited_crawl(tmp_path, urls, REP_PENDING_WAIT=0.2)

    assert result.stat("finish_reason") == "finished"
    assert sorted(result.downloaded) == sorted(urls[:3])
    assert result.dropped == {urls[3]: "disallow-rule"}
    parked, released = of(found, "parked"), of(found, "released")
    assert parked and Counter(r["url"] for r in parked) == Counter(r["url"] for r in released)
    assert {r["reason"] for r in parked} == {"origin-pending"}
    assert a.hits("/robots.txt") == 1


@pytest_twisted.ensureDeferred
async def test_per_origin_counters_at_close(site: FakeSite, tmp_path: Path) -> None:
    a = site.add("a").robots(Reply(body=RULES))
    b = site.add("b").robots(Reply(status=403))
    urls = [a.url_for("/1"), a.url_for("/2"), a.url_for("/private/x"), b.url_for("/x")]
    result, found = await audited_crawl(
        tmp_path, urls, REP_PAUSE_INITIAL=0.05, **{TUNE: {"policy.pause_max_tries": 2}}
    )

    counters = {r["origin"]: r for r in of(found, "origin")}
    assert set(counters) == {a.url, b.url}
    assert (counters[a.url]["downloaded"], counters[a.url]["dropped"]) == (
        2,
        {"disallow-rule": 1},
    )
    assert (counters[a.url]["status"], counters[a.url]["fetches"]) == ("ok", 1)
    assert counters[b.url]["status"] == "unresolved"
    assert counters[b.url]["fetches"] == b.hits("/robots.txt") == 2
    assert counters[b.url]["dropped"] == {"policy-unresolved": 1}
    assert counters[b.url]["parked"] == 1
    # the counters agree with the stats
    assert sum(c["downloaded"] for c in counters.values()) == result.stat("rep/downloaded")
    assert found[-1]["type"] == "origin"  # written last, and flushed at close


@pytest_twisted.ensureDeferred
async def test_a_log_and_archive_set_in_the_spiders_custom_settings_are_written(
    site: FakeSite, tmp_path: Path
) -> None:
    """The add-on installs the log's writer from the settings it sees: a spider's own
    ``custom_settings`` (the project's name neither) still get the log and the archive."""
    a = site.add("a").robots(Reply(body=RULES))
    log, archive = tmp_path / "spider.jsonl", tmp_path / "bodies"

    class OwnLogSpider(ListSpider):
        custom_settings: ClassVar[dict[str, Any]] = {
            "REP_DECISION_LOG": str(log),
            "REP_POLICY_ARCHIVE": str(archive),
        }

    result = await crawl([a.url_for("/ok"), a.url_for("/private/x")], spider=OwnLogSpider)
    assert result.stat("rep/downloaded") == 1
    found = records(log)
    assert sorted(r["url"] for r in of(found, "decision")) == [
        a.url_for("/ok"),
        a.url_for("/private/x"),
    ]
    assert [r["target_status"] for r in of(found, "response")] == [200]
    assert [r["origin"] for r in of(found, "origin")] == [a.url]
    (fetch,) = of(found, "fetch")
    assert fetch["archive"] == str(archive / f"{digest_of(RULES)}.txt")
    assert (archive / f"{digest_of(RULES)}.txt").read_bytes() == RULES

"""Use preferences from robots.txt in real crawls: recorded, counted, reported, and dropped
under ``REP_USE_ACTION = "drop"`` (loopback origins, a real Scrapy engine)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted

from scrapy_rep.core.report import CrawlCounts, report_lines
from tests.support.crawl import ListSpider, crawl
from tests.support.fakesite import FakeSite, Reply

#: a Cloudflare-style managed file, plus aipref rules: train-ai refused but under /open/
ROBOTS = b"""# As a condition of accessing this website, you agree to abide by the content signals:
User-Agent: *
Content-signal: search=yes
Content-Usage: train-ai=n
Content-Usage: /open/ train-ai=y
Disallow: /private/
User-agent: GPTBot
Disallow: /
"""
PATHS = ["/a", "/b", "/open/c", "/private/d"]
TRAIN = {"REP_USES": ["train-ai"]}


def urls(origin: Any) -> list[str]:
    return [origin.url_for(path) for path in PATHS]


@pytest_twisted.ensureDeferred
async def test_record_fetches_everything_robots_allows_and_annotates_it(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(body=ROBOTS))
    result = await crawl(urls(a), TRAIN)
    assert sorted(result.downloaded) == sorted(urls(a)[:3])
    assert result.dropped == {a.url_for("/private/d"): "disallow-rule"}
    uses = {url: result.decisions[url]["uses"] for url in urls(a)}
    assert uses[a.url_for("/a")]["train-ai"] == {
        "answer": "refused",
        "source": "robots.txt line 4 in group user-agent: * (line 2): Content-Usage: train-ai=n",
    }
    assert uses[a.url_for("/open/c")]["train-ai"]["answer"] == "allowed"
    # a disallowed path has no preference; search is stated for every path
    assert uses[a.url_for("/private/d")]["train-ai"]["answer"] == "unknown"
    assert all(u["search"]["answer"] == "allowed" for u in uses.values())
    assert result.stat("rep/use/train-ai/refused") == 2
    assert result.stat("rep/use/train-ai/allowed") == 1
    assert result.stat("rep/use/train-ai/unknown") == 1
    assert result.stat("rep/use/search/allowed") == 4


@pytest_twisted.ensureDeferred
async def test_drop_downloads_nothing_refused_for_a_declared_use(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(body=ROBOTS))
    result = await crawl(urls(a), {**TRAIN, "REP_USE_ACTION": "drop"})
    assert result.downloaded == [a.url_for("/open/c")]
    assert result.dropped == {
        a.url_for("/a"): "use-refused",
        a.url_for("/b"): "use-refused",
        a.url_for("/private/d"): "disallow-rule",
    }
    assert a.hits("/a") == a.hits("/b") == 0  # the server never saw them
    assert result.stat("rep/dropped/use-refused") == 2
    detail = result.decisions[a.url_for("/a")]["detail"]
    assert detail == (
        "refused for train-ai by robots.txt line 4 in group user-agent: * (line 2): "
        "Content-Usage: train-ai=n"
    )


@pytest_twisted.ensureDeferred
async def test_nothing_declared_changes_nothing_but_the_record(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(body=ROBOTS))
    plain = site.add("plain").robots(Reply(body=b"User-agent: *\nDisallow: /private/\n"))
    result = await crawl([*urls(a), *urls(plain)], {"REP_USE_ACTION": "drop"})
    assert sorted(result.downloaded) == sorted(urls(a)[:3] + urls(plain)[:3])
    # what the site states is recorded all the same; the plain site states nothing
    assert result.decisions[a.url_for("/a")]["uses"]["train-ai"]["answer"] == "refused"
    assert all(result.decisions[url]["uses"] == {} for url in urls(plain))
    assert result.stat("rep/use/train-ai/unknown") == 0


class TokenSpider(ListSpider):
    name = "tokens"
    custom_settings = {  # noqa: RUF012
        "REP_USES": ["train-ai"],
        "REP_USE_ACTION": "drop",
        "REP_USE_TOKENS": {"train-ai": "testbot-training"},
    }


@pytest_twisted.ensureDeferred
async def test_a_policy_token_per_spider(site: FakeSite) -> None:
    body = b"User-agent: testbot-training\nDisallow: /shop/\n\nUser-agent: *\nAllow: /\n"
    a = site.add("a").robots(Reply(body=body))
    result = await crawl([a.url_for("/shop/1"), a.url_for("/blog/1")], spider=TokenSpider)
    assert result.downloaded == [a.url_for("/blog/1")]
    assert result.dropped == {a.url_for("/shop/1"): "use-refused"}
    assert result.decisions[a.url_for("/shop/1")]["uses"]["train-ai"]["source"] == (
        "policy token testbot-training: disallowed by Disallow: /shop/ (line 2) "
        "in group user-agent: testbot-training (line 1)"
    )


@pytest_twisted.ensureDeferred
async def test_close_report_and_audit_log_say_which_uses_were_refused(
    site: FakeSite, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    a = site.add("a").robots(Reply(body=ROBOTS))
    log = tmp_path / "audit.jsonl"
    with caplog.at_level(logging.INFO, logger="scrapy_rep"):
        await crawl(urls(a), {**TRAIN, "REP_DECISION_LOG": str(log)})
    report = next(r.getMessage() for r in caplog.records if "scrapy-rep report" in r.getMessage())
    assert "  uses refused by robots.txt: train-ai 2 (requests)" in report.splitlines()
    assert f"  {a.url}  train-ai 2" in report.splitlines()
    records = [json.loads(line) for line in log.read_text().splitlines()]
    decisions = {r["url"]: r for r in records if r["type"] == "decision"}
    assert decisions[a.url_for("/a")]["uses"]["train-ai"]["answer"] == "refused"
    origins = [r for r in records if r["type"] == "origin"]
    assert origins and origins[0]["uses_refused"] == {"train-ai": 2}


def test_report_lines_without_refusals_say_nothing_of_uses() -> None:
    counts = CrawlCounts()
    counts.downloaded("https://a.example:443")
    assert not any("uses" in line for line in report_lines(counts))
    counts.use_refused("https://a.example:443", "train-ai")
    assert "uses refused by robots.txt: train-ai 1 (requests)" in "\n".join(report_lines(counts))

"""The audit log, the robots.txt archive, ``scrapy-rep explain`` and ``scrapy robots``.

Crawls are real (loopback fake site); ``scrapy robots`` runs as the user
runs it, a subprocess in the example project.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted

from scrapy_rep import cli
from scrapy_rep.audit import AuditLog
from scrapy_rep.cli_explain import explain
from scrapy_rep.policy import digest_of
from scrapy_rep.report import CrawlCounts, report_lines
from tests.crawl import CrawlResult, crawl
from tests.fakesite import FakeSite, Reply

RULES = b"User-agent: *\nDisallow: /private\n"
PROJECT = Path(__file__).resolve().parent.parent / "example_project"


def records(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def of(found: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [r for r in found if r["type"] == kind]


async def audited_crawl(
    tmp_path: Path, urls: list[str], **settings: Any
) -> tuple[CrawlResult, list[dict[str, Any]]]:
    log = tmp_path / "audit.jsonl"
    result = await crawl(
        urls,
        {
            "REP_DECISION_LOG": str(log),
            "REP_POLICY_ARCHIVE": str(tmp_path / "archive"),
            **settings,
        },
    )
    return result, records(log)


# -- the log ----------------------------------------------------------------------------------


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
        tmp_path, [o.url_for("/x") for o in origins], REP_PAUSE_MAX_TRIES=1
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
        tmp_path, urls, REP_PAUSE_INITIAL=0.05, REP_PAUSE_MAX_TRIES=2
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


def test_log_lines_are_whole_and_late_writes_are_ignored(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    first, second = AuditLog(str(path), buffer_records=3), AuditLog(str(path), buffer_records=2)
    for n in range(10):
        first.write("decision", {"n": n, "by": "first"})
        second.write("decision", {"n": n, "by": "second"})
    first.close()
    second.close()
    second.write("decision", {"n": 99})  # after close: dropped, no exception
    found = records(path)
    assert Counter(r["by"] for r in found) == {"first": 10, "second": 10}


# -- explain ----------------------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_explain_answers_why_from_the_log(
    site: FakeSite, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = site.add("a").robots(Reply(body=b"# rules\nUser-agent: *\nDisallow: /private\n"))
    no, yes = a.url_for("/private/x"), a.url_for("/open")
    await audited_crawl(tmp_path, [no, yes])
    log = str(tmp_path / "audit.jsonl")
    digest = digest_of(b"# rules\nUser-agent: *\nDisallow: /private\n")

    assert cli.main(["explain", log, no]) == 1
    out = capsys.readouterr().out
    assert "DISALLOW -> drop (disallow-rule), token testbot" in out
    assert "rule      disallow: /private (line 3)" in out
    assert "group     user-agent: * (line 2)" in out
    assert f"version {digest}, fetched " in out
    assert "line 3    Disallow: /private" in out  # quoted from the archive

    assert cli.main(["explain", log, yes]) == 0
    out = capsys.readouterr().out
    assert "ALLOW -> download (no-matching-rule)" in out
    assert "response  HTTP 200 from the target itself" in out

    # the archive moved: --archive finds the body again
    moved = tmp_path / "moved"
    os.rename(tmp_path / "archive", moved)
    _, lines = explain(log, no)
    assert not any(line.startswith("  line 3") for line in lines)
    _, lines = explain(log, no, str(moved))
    assert any(line.startswith("  line 3    Disallow: /private") for line in lines)

    # a URL the crawl never saw: exit 2, and the origin's URLs as a hint
    assert cli.main(["explain", log, a.url_for("/never")]) == 2
    err = capsys.readouterr().err
    assert "no record of" in err and no in err


@pytest_twisted.ensureDeferred
async def test_explain_tells_the_story_of_a_parked_request(site: FakeSite, tmp_path: Path) -> None:
    a = site.add("a").robots(Reply(status=503), Reply(body=RULES))
    url = a.url_for("/page")
    await audited_crawl(tmp_path, [url], REP_PAUSE_INITIAL=0.05)
    # a crashed crawl leaves a torn last line; explain reads around it
    with open(tmp_path / "audit.jsonl", "a", encoding="utf-8") as f:
        f.write('{"type": "decision", "url": ')

    action, lines = explain(str(tmp_path / "audit.jsonl"), url)
    history = "\n".join(lines[lines.index("  history") :])
    assert action == "download"
    steps = ["parked    origin-paused", "released", "allow -> download", "HTTP 200"]
    positions = [history.index(step) for step in steps]  # each one is there ...
    assert positions == sorted(positions)  # ... in this order


# -- scrapy robots ----------------------------------------------------------------------------


def scrapy_robots(*args: str) -> subprocess.CompletedProcess[str]:
    """``scrapy robots ARGS`` in the example project, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "scrapy", "robots", *args],
        cwd=PROJECT,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_scrapy_robots_gives_the_crawls_answer(site: FakeSite) -> None:
    a = site.add("a").robots(
        Reply(
            body=b"User-agent: demobot\nDisallow: /private\nAllow: /private/open\n\n"
            b"User-agent: *\nDisallow: /\n"
        )
    )
    closed = site.add("closed").robots(Reply(status=503))
    done = scrapy_robots(
        a.url_for("/private/x"), a.url_for("/private/open/y"), closed.url_for("/z")
    )
    out = done.stdout
    assert done.returncode == 1, done.stderr
    assert "product token: demobot" in out  # from the project's USER_AGENT
    assert f"DISALLOW  {a.url_for('/private/x')}" in out
    assert "rule    disallow: /private (line 2)" in out
    assert "group   user-agent: demobot (line 1)" in out
    assert f"ALLOW     {a.url_for('/private/open/y')}" in out
    assert "rule    allow: /private/open (line 3)" in out
    assert f"policy  ok (robots.txt 200 from {a.robots_url}" in out
    assert f"HELD      {closed.url_for('/z')}" in out
    assert "policy  paused (robots.txt 503" in out
    # fetched through the project's settings: its User-Agent, once per origin
    assert a.hits("/robots.txt") == 1
    assert a.requests("/robots.txt")[0].headers["User-Agent"].startswith("demobot/1.0")
    assert a.hits() == 1  # nothing but robots.txt was downloaded


def test_scrapy_robots_takes_a_spiders_token(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(body=b"User-agent: politebot\nDisallow: /\n"))
    mine = scrapy_robots(a.url_for("/x"))
    polite = scrapy_robots("--spider", "polite", a.url_for("/x"))
    assert mine.returncode == 0 and "ALLOW     " in mine.stdout, mine.stderr
    assert polite.returncode == 1, polite.stderr
    assert "product token: politebot" in polite.stdout
    assert "rule    disallow: / (line 2)" in polite.stdout
    assert a.requests("/robots.txt")[-1].headers["User-Agent"].startswith("politebot/")


def test_scrapy_robots_rejects_a_relative_url() -> None:
    done = scrapy_robots("/just/a/path")
    assert done.returncode == 2
    assert "absolute http(s) URLs" in done.stderr


# -- the report -------------------------------------------------------------------------------


def test_report_is_bounded_and_totals_stay_exact() -> None:
    counts = CrawlCounts(max_origins=3)
    for n in range(12):
        origin = f"http://h{n}:80"
        for _ in range(n):
            counts.downloaded(origin)
        counts.dropped(origin, "disallow-rule")
        counts.fetched(origin, "ok")
    counts.dropped(None, "spider-closed")  # a URL with no origin still counts in the totals

    assert len(counts.origins) == 3 and counts.evicted == 9  # the least recently used went
    assert counts.total.downloaded == sum(range(12))
    assert counts.total.dropped == {"disallow-rule": 12, "spider-closed": 1}
    lines = report_lines(counts, top=2)
    assert lines[0].startswith("scrapy-rep report: 12 origins, 79 requests: 66 downloaded, 13")
    assert [line.split()[0] for line in lines[2:4]] == ["http://h11:80", "http://h10:80"]
    assert lines[-1] == "  ... and 10 more origins (in the totals above)"
    assert len(lines) == 5

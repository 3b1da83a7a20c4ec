"""Use preferences from robots.txt in real crawls: recorded, counted, reported, and dropped
under ``REP_USE_ACTION = "drop"`` (loopback origins, a real Scrapy engine)."""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted

from tests.support import processes
from tests.support.audit import audited_crawl, of, records
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
    found = records(log)
    decisions = {r["url"]: r for r in of(found, "decision")}
    assert decisions[a.url_for("/a")]["uses"]["train-ai"]["answer"] == "refused"
    origins = of(found, "origin")
    assert origins and origins[0]["uses_refused"] == {"train-ai": 2}


# -- the commands, run as a user runs them -------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ROOT / "example_project"


def command(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` with this checkout's scrapy_rep first (and the example project's)."""
    paths = [str(ROOT), str(PROJECT), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    return processes.python(*args, cwd=cwd, env=env, timeout=120)


def test_check_answers_each_use_per_url(tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    path.write_bytes(ROBOTS)
    done = command(
        "-m", "scrapy_rep.cli", "check", str(path), "--agent", "mybot", "--use", "train-ai",
        "--use", "ai-input", "/a", "/open/c",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "ALLOW    /a  allowed: no rule matches",
        "  use train-ai  refused  robots.txt line 4 in group user-agent: * (line 2): "
        "Content-Usage: train-ai=n",
        "  use ai-input  unknown  no preference stated",
        "  use search    allowed  robots.txt line 3 in group user-agent: * (line 2): "
        "Content-Signal: search=yes",
        "ALLOW    /open/c  allowed: no rule matches",
        "  use train-ai  allowed  robots.txt line 5 in group user-agent: * (line 2): "
        "Content-Usage: /open/ train-ai=y",
        "  use ai-input  unknown  no preference stated",
        "  use search    allowed  robots.txt line 3 in group user-agent: * (line 2): "
        "Content-Signal: search=yes",
    ]
    # GPTBot's own group says nothing of uses; an unknown use is a usage error
    done = command("-m", "scrapy_rep.cli", "check", str(path), "--agent", "GPTBot", "/a")
    assert done.returncode == 1 and "  use " not in done.stdout
    done = command("-m", "scrapy_rep.cli", "check", str(path), "--agent", "x", "--use", "ai", "/")
    assert done.returncode == 2 and "invalid choice: 'ai'" in done.stderr


def test_lint_diagnoses_use_preference_lines(tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    path.write_bytes(
        b"Content-Signal: ai-train=no\nLicense: https://example.com/license.xml\n"
        b"User-agent: *\nContent-Usage: Train-AI=n\nContent-Signal: ai-train\n"
        b"Content-Usage: /x/\nDisallow: /p\n"
    )
    done = command("-m", "scrapy_rep.cli", "lint", str(path))
    assert done.returncode == 1, done.stderr  # problems found
    kinds = [line.split(": ")[1] for line in done.stdout.splitlines()]
    assert kinds == [
        "content-signal-outside-group",
        "invalid-content-usage",
        "invalid-content-signal",
        "content-usage-without-preference",
        "content-usage-states-nothing",
    ]
    assert "line 4: invalid-content-usage: Content-Usage: Train-AI=n (not an RFC 9651" in (
        done.stdout
    )
    assert done.stderr.startswith(
        "5 diagnostics; 1 groups, 1 rules, 4 use-preference lines, 1 licences, 0 sitemaps, "
    )


def test_scrapy_robots_shows_the_use_answers(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(body=ROBOTS.replace(b"User-Agent: *", b"User-Agent: demobot")))
    done = command(
        "-m", "scrapy", "robots", "-s", "REP_USES=train-ai", a.url_for("/a"), cwd=PROJECT
    )
    assert done.returncode == 0, done.stderr
    assert (
        "  use     train-ai  refused  robots.txt line 4 in group user-agent: demobot (line 2): "
        "Content-Usage: train-ai=n"
    ) in done.stdout.splitlines()
    assert "  use     search    allowed  robots.txt line 3" in done.stdout


@pytest_twisted.ensureDeferred
async def test_explain_shows_the_use_answers_and_the_licences(
    site: FakeSite, tmp_path: Path
) -> None:
    body = b"License: https://example.com/license.xml\n" + ROBOTS
    a = site.add("a").robots(Reply(body=body))
    await audited_crawl(tmp_path, [a.url_for("/a")], REP_USES=["train-ai"], REP_USE_ACTION="drop")
    done = command(
        "-m", "scrapy_rep.cli", "explain", str(tmp_path / "audit.jsonl"), a.url_for("/a")
    )
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert "  decision  ALLOW -> drop (use-refused), token testbot, at" in lines[1]
    assert (
        "  use       train-ai  refused  robots.txt line 5 in group user-agent: * (line 3): "
        "Content-Usage: train-ai=n"
    ) in lines
    assert "  licence   https://example.com/license.xml (RSL, not interpreted)" in lines

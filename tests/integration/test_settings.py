"""A bad setting stops the crawl before any request, with one line naming the setting,
the value and what is accepted; the product token a real crawl matches with.

Reading the settings without a crawl: ``tests/test_settings_read.py``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted

from scrapy_rep.runtime.resolver import SharedResolvers
from scrapy_rep.runtime.settings import (
    RepSettings,
    SettingError,
)
from tests.support.audit import records
from tests.support.crawl import ListSpider, crawl
from tests.support.fakesite import FakeSite, Reply
from tests.support.scrapy_command import make_project, scrapy

# -- in real crawls ---------------------------------------------------------------------------

SHOPBOT_RULES = b"User-agent: shopbot\nDisallow: /private\n\nUser-agent: *\nAllow: /\n"


@pytest_twisted.ensureDeferred
async def test_browser_like_user_agent_is_matched_by_its_crawler_token(site: FakeSite) -> None:
    """``Mozilla/5.0 (compatible; shopbot/1.0)`` obeys the ``shopbot`` group, not ``*``."""
    a = site.add("a").robots(Reply(body=SHOPBOT_RULES))
    result = await crawl(
        [a.url_for("/public"), a.url_for("/private/x")],
        {"USER_AGENT": "Mozilla/5.0 (compatible; shopbot/1.0; +http://127.0.0.1/bot)"},
    )
    assert result.downloaded == [a.url_for("/public")]
    assert result.dropped == {a.url_for("/private/x"): "disallow-rule"}
    assert result.decisions[a.url_for("/public")]["product_token"] == "shopbot"
    assert a.hits("/private/x") == 0


@pytest_twisted.ensureDeferred
async def test_settings_are_read_once_per_crawler(
    site: FakeSite, caplog: pytest.LogCaptureFixture
) -> None:
    """The downloader and the page middleware share one reading: one start-up warning, not two."""
    a = site.add("a").robots(Reply(body=SHOPBOT_RULES))
    with caplog.at_level(logging.WARNING, logger="scrapy_rep"):
        result = await crawl([a.url_for("/x")], {"USER_AGENT": "Mozilla/5.0 (X11; Linux)"})
    assert result.downloaded == [a.url_for("/x")]
    warnings = [r for r in caplog.records if "names no crawler product token" in r.getMessage()]
    assert len(warnings) == 1
    assert result.crawler is not None
    assert RepSettings.of(result.crawler) is RepSettings.of(result.crawler)
    assert RepSettings.of(result.crawler).token == "Mozilla"


@pytest_twisted.ensureDeferred
async def test_misspelt_setting_warns_once_with_the_closest_name(
    site: FakeSite, caplog: pytest.LogCaptureFixture
) -> None:
    """``REP_PRODUCT_TOKN = "alphabot"`` crawled as ``testbot``, silently."""
    a = site.add("a").robots(Reply(body=SHOPBOT_RULES))
    with caplog.at_level(logging.WARNING, logger="scrapy_rep"):
        result = await crawl(
            [a.url_for("/x")], {"REP_PRODUCT_TOKN": "alphabot", "REP_NO_SUCH_THING": 1}
        )
    assert result.downloaded == [a.url_for("/x")]
    unknown = [r.getMessage() for r in caplog.records if "unknown setting" in r.getMessage()]
    assert unknown == [
        "scrapy-rep: unknown setting REP_NO_SUCH_THING is ignored; "
        "see docs/reference.md for the settings",
        "scrapy-rep: unknown setting REP_PRODUCT_TOKN is ignored; did you mean REP_PRODUCT_TOKEN?",
    ]


class ObeyOffSpider(ListSpider):
    custom_settings = {"ROBOTSTXT_OBEY": False}  # noqa: RUF012


@pytest_twisted.ensureDeferred
@pytest.mark.parametrize(
    ("settings", "spider", "who"),
    [
        ({"ROBOTSTXT_OBEY": False}, ListSpider, "the project's settings"),
        ({"ROBOTSTXT_OBEY": "False"}, ListSpider, "the project's settings"),
        ({}, ObeyOffSpider, "the spider's custom_settings"),
        ({}, ListSpider, None),  # Scrapy's default False: nothing to say
        ({"ROBOTSTXT_OBEY": True}, ListSpider, None),
        ({"ROBOTSTXT_OBEY": False, "REP_ENABLED": False}, ListSpider, None),
    ],
)
async def test_explicit_robotstxt_obey_false_is_said_to_be_ignored(
    site: FakeSite,
    caplog: pytest.LogCaptureFixture,
    settings: dict[str, Any],
    spider: type[ListSpider],
    who: str | None,
) -> None:
    a = site.add("a").robots(Reply(body=b"User-agent: *\nDisallow: /private\n"))
    with caplog.at_level(logging.WARNING, logger="scrapy_rep"):
        result = await crawl([a.url_for("/private")], settings, spider=spider)
    said = [r.getMessage() for r in caplog.records if "ROBOTSTXT_OBEY" in r.getMessage()]
    if who is None:
        assert said == []
        return
    assert said == [
        f"scrapy-rep: ROBOTSTXT_OBEY = False (set by {who}) is ignored: robots.txt is still "
        "obeyed; to crawl without robots.txt set REP_ENABLED = False (or, per request, "
        "meta dont_obey_robotstxt = True)"
    ]
    assert result.dropped == {a.url_for("/private"): "disallow-rule"}
    assert a.hits("/private") == 0


@pytest_twisted.ensureDeferred
async def test_missing_collection_policy_stops_the_crawl_with_one_line(site: FakeSite) -> None:
    a = site.add("a").robots(Reply(body=SHOPBOT_RULES))
    with pytest.raises(SettingError) as raised:
        await crawl([a.url_for("/x")], {"REP_COLLECTION_POLICY": "nosuch.module.func"})
    message = str(raised.value)
    assert message.startswith("REP_COLLECTION_POLICY = 'nosuch.module.func': cannot import")
    assert "No module named 'nosuch'" in message and "callable(request, spider)" in message
    assert "\n" not in message
    assert a.hits() == 0
    assert not SharedResolvers._resolvers  # nothing opened for a crawl that never started


@pytest_twisted.ensureDeferred
@pytest.mark.parametrize(
    ("name", "value"), [("REP_FETCH_TIMEOUT", "nan"), ("REP_PAUSE_INITIAL", "inf")]
)
async def test_non_finite_setting_stops_the_crawl(site: FakeSite, name: str, value: str) -> None:
    a = site.add("a").robots(Reply(status=503))
    with pytest.raises(SettingError) as raised:
        await crawl([a.url_for("/x")], {name: value})
    assert str(raised.value) == (
        f"{name} must be a finite number of seconds, at least 0.001 and at most 1e9 (31 years); "
        f"not {value!r}"
    )
    assert a.hits() == 0


@pytest_twisted.ensureDeferred
@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"REP_USE_STALE": False},
            "REP_USE_STALE was removed: the last good copy now always stands in for an "
            "unreachable robots.txt; remove it",
        ),
        (
            {"REP_REPORT_ENABLED": False, "REP_REPORT": True},
            "REP_REPORT_ENABLED was removed: use REP_REPORT (False: no summary at close)",
        ),
        (
            {"REP_STORE": "redis://127.0.0.1:port/0"},
            "REP_STORE = 'redis://127.0.0.1:port/0': Port could not be cast to integer value "
            "as 'port'",
        ),
    ],
)
async def test_a_removed_setting_or_a_bad_redis_url_stops_the_crawl_with_one_line(
    site: FakeSite, values: dict[str, Any], message: str
) -> None:
    a = site.add("a").robots(Reply(body=SHOPBOT_RULES))
    with pytest.raises(SettingError) as raised:
        await crawl([a.url_for("/x")], values)
    assert str(raised.value) == message
    assert a.hits() == 0


@pytest_twisted.ensureDeferred
async def test_decision_log_folder_is_created(site: FakeSite, tmp_path: Path) -> None:
    """As REP_POLICY_ARCHIVE's directory is: a missing folder is no FileNotFoundError."""
    a = site.add("a").robots(Reply(body=SHOPBOT_RULES))
    log = tmp_path / "not" / "yet" / "rep.jsonl"
    result = await crawl([a.url_for("/x")], {"REP_DECISION_LOG": str(log)})
    assert result.downloaded == [a.url_for("/x")]
    assert [r["url"] for r in records(log, "decision")] == [a.url_for("/x")]


@pytest_twisted.ensureDeferred
@pytest.mark.parametrize(
    "off",
    [
        "False",
        0,
        "off",
    ],
)
async def test_rep_enabled_off_turns_robots_txt_handling_off(site: FakeSite, off: Any) -> None:
    """With the add-on, REP_ENABLED off means no robots.txt at all: the built-in stays off too."""
    a = site.add("a").robots(Reply(body=b"User-agent: *\nDisallow: /\n"))
    result = await crawl([a.url_for("/private")], {"REP_ENABLED": off, "ROBOTSTXT_OBEY": True})
    assert result.downloaded == [a.url_for("/private")]
    assert a.hits("/robots.txt") == 0


def test_robotstxt_obey_false_on_the_command_line_is_said_to_be_ignored(
    site: FakeSite, tmp_path: Path
) -> None:
    """``scrapy fetch -s ROBOTSTXT_OBEY=False URL``, a real process: said once, still obeyed."""
    a = site.add("a").robots(Reply(body=b"User-agent: *\nDisallow: /private\n"))
    done = scrapy(
        make_project(tmp_path / "project"),
        "fetch",
        "-s",
        "ROBOTSTXT_OBEY=False",
        "-s",
        "LOG_LEVEL=WARNING",
        a.url_for("/private"),
    )
    said = [line for line in done.stderr.splitlines() if "ROBOTSTXT_OBEY" in line]
    assert len(said) == 1, done.stderr
    assert "ROBOTSTXT_OBEY = False (set by the command line (-s)) is ignored" in said[0]
    assert a.hits("/private") == 0

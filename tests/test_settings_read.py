"""``RepSettings.from_settings``: defaults, clear errors, and where the product token comes from.

No crawl: the settings are read as a crawler reads them. The crawls that a bad
setting stops are in ``tests/integration/test_settings.py``.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import pytest
from scrapy.settings import Settings

from scrapy_rep.core.policy import DEFAULT_ACTIONS, Action, PolicyConfig
from scrapy_rep.core.uses import Declared
from scrapy_rep.crawl.collection import load_collection_policy
from scrapy_rep.robotstxt.agent import crawler_token
from scrapy_rep.runtime.settings import (
    DEFAULTS,
    RepSettings,
    SettingError,
    is_enabled,
    unknown_settings,
)

UA = "testbot/1.0 (+http://127.0.0.1/)"


def read(**values: Any) -> RepSettings:
    return RepSettings.from_settings({"USER_AGENT": UA, **values}.get)


def test_defaults() -> None:
    config = read()
    assert config.token == "testbot"
    assert config.policy == PolicyConfig()
    assert config.policy.actions == DEFAULT_ACTIONS
    assert config.fetch_timeout == DEFAULTS["REP_FETCH_TIMEOUT"]
    assert config.max_redirects == 5
    assert config.policy.ttl == 86_400
    assert config.policy.unreachable_max_age == 30 * 86_400
    assert config.disallowed_action == "drop"
    assert config.collection_policy is None
    assert config.crawl_delay_enabled is True
    assert config.store == "auto"  # SQLite with a JOBDIR, memory without
    assert config.decision_log is None


def test_uses_are_declared_in_the_settings() -> None:
    assert read().declared == Declared()
    config = read(
        REP_USES=["train-ai", "search", "train-ai"],
        REP_USE_ACTION="DROP",
        REP_USE_TOKENS={"train-ai": "shopbot-training"},
    )
    assert config.declared == Declared(
        ("train-ai", "search"), drop=True, tokens={"train-ai": "shopbot-training"}
    )


def test_uses_from_the_command_line() -> None:
    # -s REP_USES=train-ai,search  /  -s 'REP_USES=["train-ai"]'  /  -s 'REP_USE_TOKENS={...}'
    assert read(REP_USES="train-ai, search").uses == ("train-ai", "search")
    assert read(REP_USES='["ai-input"]').uses == ("ai-input",)
    assert read(REP_USES="").uses == ()
    tokens = read(REP_USE_TOKENS='{"search": "shopbot-search"}').use_tokens
    assert tokens == {"search": "shopbot-search"}


def test_defaults_through_scrapy_settings() -> None:
    """Scrapy's own default USER_AGENT ('Scrapy/2.x (+https://scrapy.org)') gives 'Scrapy'."""
    config = RepSettings.from_settings(Settings().get)
    assert config.token == "Scrapy"
    assert config.policy == PolicyConfig()


def test_values_are_read() -> None:
    config = read(
        REP_CACHE_TTL="120",
        REP_PAUSE_INITIAL=0.5,
        REP_STATUS_ACTIONS={403: "ALLOW", "5xx": Action.DISALLOW},
    )
    assert config.policy.ttl == 120.0
    assert config.policy.pause_initial == 0.5
    assert config.policy.actions["403"] is Action.ALLOW
    assert config.policy.actions["5xx"] is Action.DISALLOW
    assert config.policy.actions["401"] is Action.PAUSE  # untouched rows keep their default


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        (
            "REP_CACHE_TTL",
            "a day",
            "REP_CACHE_TTL must be a finite number of seconds, at least 1 and at most 1e9 "
            "(31 years); not 'a day'",
        ),
        (
            "REP_CACHE_TTL",
            0,
            "REP_CACHE_TTL must be a finite number of seconds, at least 1 and at most 1e9 "
            "(31 years); not 0",
        ),
        ("REP_FETCH_TIMEOUT", 0, "REP_FETCH_TIMEOUT must be a finite number of seconds, at least"),
        ("REP_FETCH_TIMEOUT", [], "REP_FETCH_TIMEOUT must be a finite number of seconds"),
        ("REP_FETCH_TIMEOUT", True, "REP_FETCH_TIMEOUT must be a finite number of seconds"),
        ("REP_PAUSE_INITIAL", 0, "REP_PAUSE_INITIAL must be a finite number of seconds, at least"),
        ("REP_PAUSE_MAX", -5, "REP_PAUSE_MAX must be a finite number of seconds, at least"),
        ("REP_PARK_MAX", -1, "REP_PARK_MAX must be a whole number, at least 0"),
        ("REP_PARK_TIMEOUT", 0, "REP_PARK_TIMEOUT must be a finite number of seconds, at least"),
        ("REP_CRAWL_DELAY_MAX", -1, "REP_CRAWL_DELAY_MAX must be a finite number of seconds"),
        ("REP_COLLECTION_UNRESOLVED_ACTION", "allow", "REP_COLLECTION_UNRESOLVED_ACTION must be"),
        (
            "REP_STORE",
            "mongo",
            "REP_STORE must be one of ('memory', 'redis', 'sqlite', 'auto'), a Redis URL "
            "(redis://host:6379/0?prefix=p) or sqlite:///abs/path, sqlite:relative/path; "
            "not 'mongo'",
        ),
        ("REP_STATUS_ACTIONS", ["403"], "REP_STATUS_ACTIONS must be a dict"),
        ("REP_STATUS_ACTIONS", {"302": "allow"}, "unknown outcome '302'; known: 2xx, 4xx"),
        ("REP_STATUS_ACTIONS", {"403": "maybe"}, "unknown action 'maybe'; known: rules, allow"),
        (
            "REP_PAGE_STATUS_ACTIONS",
            {"429": "retry"},
            "unknown action 'retry'; known: pause, block",
        ),
        ("REP_PAGE_STATUS_ACTIONS", {"200": "pause"}, "'200' is no HTTP status from 400 to 599"),
        ("REP_BLOCK_AFTER", 0, "REP_BLOCK_AFTER must be a whole number, at least 1"),
        ("REP_BLOCK_AFTER", 2.5, "REP_BLOCK_AFTER must be a whole number, at least 1; not 2.5"),
        ("REP_BLOCK_AFTER", "five", "REP_BLOCK_AFTER must be a whole number"),
        ("REP_CACHE_MAX_BYTES", 0, "REP_CACHE_MAX_BYTES must be a whole number, at least 1"),
        ("REP_PAGE_DIRECTIVES", "maybe", "REP_PAGE_DIRECTIVES must be a boolean (True/False, 1/0,"),
        ("REP_REL_NOFOLLOW", [], "REP_REL_NOFOLLOW must be a boolean"),
        ("REP_DECISION_LOG", 42, "REP_DECISION_LOG must be a file path, not 42"),
        ("REP_COLLECTION_POLICY", 42, "REP_COLLECTION_POLICY must be the import path of a"),
        ("REP_USES", ["train-ai", "ai-train"], "REP_USES: unknown use 'ai-train'; known: train-ai"),
        ("REP_USES", "trian-ai", "REP_USES: unknown use 'trian-ai'; known: train-ai, ai-input"),
        ("REP_USES", 7, "REP_USES must be a list of uses (train-ai, ai-input, search), not 7"),
        ("REP_USES", "[train-ai", "REP_USES is not valid JSON"),
        ("REP_USE_ACTION", "refuse", "REP_USE_ACTION must be one of ('record', 'drop')"),
        ("REP_USE_TOKENS", ["x"], "REP_USE_TOKENS must be a dict of use -> token"),
        ("REP_USE_TOKENS", {"training": "x"}, "REP_USE_TOKENS: unknown use 'training'"),
        ("REP_USE_TOKENS", {"train-ai": "Bot/1.0"}, "REP_USE_TOKENS['train-ai']: invalid product"),
    ],
)
def test_bad_values_say_what_is_wrong(name: str, value: Any, message: str) -> None:
    with pytest.raises(SettingError) as raised:
        read(**{name: value})
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


#: every setting's default
EVERY_DEFAULT = dict(DEFAULTS)
#: every numeric setting: none of them has a use for nan or an infinity
NUMERIC = [
    name
    for name, default in EVERY_DEFAULT.items()
    if isinstance(default, (int, float)) and not isinstance(default, bool)
]


def test_numeric_settings_are_all_checked() -> None:
    assert len(NUMERIC) == 11
    assert {
        "REP_BLOCK_AFTER",
        "REP_FETCH_TIMEOUT",
        "REP_PENDING_WAIT",
        "REP_CRAWL_DELAY_MAX",
        "REP_WORKER_LEASE",
        "REP_CACHE_MAX_BYTES",
    } <= set(NUMERIC)


@pytest.mark.parametrize("name", NUMERIC)
@pytest.mark.parametrize(
    "value", [float("nan"), float("inf"), float("-inf"), "nan", "inf", "1e999"]
)
def test_non_finite_numbers_are_rejected(name: str, value: Any) -> None:
    """``REP_FETCH_TIMEOUT=nan`` broke every fetch; ``REP_PAUSE_INITIAL=inf`` broke errbacks."""
    with pytest.raises(SettingError) as raised:
        read(**{name: value})
    message = str(raised.value)
    assert message.startswith(f"{name} must be a ")
    assert message.endswith(f"; not {value!r}")
    assert "finite" in message or "whole" in message


@pytest.mark.parametrize("name", [n for n in NUMERIC if isinstance(EVERY_DEFAULT[n], float)])
def test_durations_are_bounded(name: str) -> None:
    """1e308 seconds overflows a timestamp as inf does: every duration is at most 1e9 s."""
    assert read(**{name: 1e9}) is not None
    with pytest.raises(SettingError) as raised:
        read(**{name: 1e308})
    assert str(raised.value).startswith(f"{name} must be a finite number of seconds, at least ")
    assert str(raised.value).endswith(" and at most 1e9 (31 years); not 1e+308")


def test_whole_numbers_may_be_written_as_text_or_floats() -> None:
    config = read(REP_BLOCK_AFTER="7", REP_PARK_MAX=10.0, REP_CACHE_MAX_BYTES=" 3 ")
    assert (config.block_after, config.park_max, config.cache_max_bytes) == (7, 10, 3)
    assert isinstance(config.park_max, int) and isinstance(config.cache_max_bytes, int)


OFF = ("False", "false", "FALSE", "0", 0, False, "no", "off", " Off ")
ON = ("True", "true", "1", 1, True, "yes", "on")


def test_flags_read_like_scrapy_reads_them() -> None:
    """``scrapy crawl -s REP_PAGE_DIRECTIVES=False`` passes a string; it must mean off."""
    for off in OFF:
        config = RepSettings.from_settings(
            Settings({"REP_PAGE_DIRECTIVES": off, "REP_BROWSER_GUARD": off}).get
        )
        assert config.page_directives is False, off
        assert config.browser_guard is False, off
    for on in ON:
        config = RepSettings.from_settings(Settings({"REP_REL_NOFOLLOW": on}).get)
        assert config.rel_nofollow is True, on


def test_rep_enabled_is_read_as_every_other_switch() -> None:
    """One reading of REP_ENABLED: ``is_enabled`` (the middleware's) and ``RepSettings.enabled``."""
    assert is_enabled(Settings().get) is True
    assert RepSettings.from_settings(Settings().get).enabled is True
    for off in OFF:
        assert is_enabled(Settings({"REP_ENABLED": off}).get) is False, off
        assert RepSettings.from_settings(Settings({"REP_ENABLED": off}).get).enabled is False
    for on in ON:
        assert is_enabled(Settings({"REP_ENABLED": on}).get) is True, on
    with pytest.raises(SettingError) as raised:
        is_enabled(Settings({"REP_ENABLED": "nope"}).get)
    assert str(raised.value).startswith("REP_ENABLED must be a boolean (True/False, 1/0")
    assert str(raised.value).endswith("not 'nope'")


# -- REP_COLLECTION_POLICY: imported once, with the setting's name on every error ---------------


def scope(request: Any, spider: Any) -> str:
    return "approved"


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (
            "nosuch.module.func",
            "REP_COLLECTION_POLICY = 'nosuch.module.func': cannot import 'nosuch.module' "
            "(No module named 'nosuch'); expected the import path of a callable(request, spider)",
        ),
        (
            "func",
            "REP_COLLECTION_POLICY = 'func': not a full import path; expected the import path",
        ),
        (
            f"{__name__}.nosuch",
            f"REP_COLLECTION_POLICY = '{__name__}.nosuch': module '{__name__}' has no 'nosuch'; "
            "expected",
        ),
        (
            f"{__name__}.NUMERIC",
            f"REP_COLLECTION_POLICY = '{__name__}.NUMERIC': that is a list, not a callable",
        ),
    ],
)
def test_collection_policy_errors_name_the_setting(path: str, message: str) -> None:
    with pytest.raises(SettingError) as raised:
        load_collection_policy(path)
    assert str(raised.value).startswith(message)
    # the settings keep the path; the adapter imports it when the crawler starts
    with pytest.raises(SettingError) as raised:
        load_collection_policy(read(REP_COLLECTION_POLICY=path).collection_policy)
    assert str(raised.value).startswith(message)


def test_collection_policy_is_loaded() -> None:
    assert load_collection_policy(None) is None
    assert load_collection_policy("") is None
    assert load_collection_policy(f"{__name__}.scope") is scope
    assert load_collection_policy(scope) is scope  # the callable itself, as Scrapy allows
    config = read(REP_COLLECTION_POLICY=f"{__name__}.scope")
    assert load_collection_policy(config.collection_policy) is scope
    assert config.collection_policy == f"{__name__}.scope"
    assert load_collection_policy(read().collection_policy) is None


def test_paths(tmp_path: Path) -> None:
    config = read(REP_DECISION_LOG=tmp_path / "logs" / "rep.jsonl", REP_POLICY_ARCHIVE=tmp_path)
    assert config.decision_log == os.fspath(tmp_path / "logs" / "rep.jsonl")  # a Path is fine
    assert config.policy_archive == os.fspath(tmp_path)
    with pytest.raises(SettingError, match=r"REP_DECISION_LOG must be a file path, not the dir"):
        read(REP_DECISION_LOG=str(tmp_path))
    (tmp_path / "file").write_text("")
    with pytest.raises(SettingError, match=r"REP_POLICY_ARCHIVE must be a directory, not the fi"):
        read(REP_POLICY_ARCHIVE=str(tmp_path / "file"))


# -- the product token ------------------------------------------------------------------------


def test_token_rep_product_token_wins() -> None:
    config = read(REP_PRODUCT_TOKEN="mybot", ROBOTSTXT_USER_AGENT="otherbot")
    assert config.token == "mybot"


def test_token_robotstxt_user_agent_before_user_agent() -> None:
    assert read(ROBOTSTXT_USER_AGENT="OtherBot/2.0 (compatible)").token == "OtherBot"


def test_token_from_user_agent() -> None:
    assert read().token == "testbot"
    assert read(USER_AGENT="my_crawler-x").token == "my_crawler-x"


@pytest.mark.parametrize(
    ("user_agent", "token"),
    [
        ("Mozilla/5.0 (compatible; shopbot/1.0)", "shopbot"),
        ("Mozilla/5.0 (compatible; shopbot/1.0; +https://shop.example/bot)", "shopbot"),
        ("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "Googlebot"),
        (
            "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; "
            "+http://www.bing.com/bingbot.htm) Chrome/116.0.1938.76 Safari/537.36",
            "bingbot",
        ),
        (
            "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 "
            "(KHTML, like Gecko) Chrome/120.0 Mobile Safari/537.36 (compatible; Googlebot/2.1)",
            "Googlebot",
        ),
        ("Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 shopbot/2", "shopbot"),
        ("shopbot/1.0 (+https://shop.example/bot)", "shopbot"),
        ("Scrapy/2.19.0 (+https://scrapy.org)", "Scrapy"),
        ("Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0", None),
        ("Mozilla/5.0 (Windows NT 10.0; Trident/7.0; rv:11.0) like Gecko", None),
        (
            "Mozilla/5.0 (compatible; Yahoo! Slurp; http://help.yahoo.com/help/us/ysearch/slurp)",
            None,
        ),
        ("bot2/1.0", None),
    ],
)
def test_crawler_token_skips_browser_products(user_agent: str, token: str | None) -> None:
    """What ROBOTSTXT_USER_AGENT users expect: the built-in matches a group by substring."""
    assert crawler_token(user_agent) == token
    if token:
        assert read(USER_AGENT=user_agent).token == token
        assert read(ROBOTSTXT_USER_AGENT=user_agent).token == token


def test_token_docstring_examples_run() -> None:
    import doctest

    import scrapy_rep.robotstxt.agent

    failures, tried = doctest.testmod(scrapy_rep.robotstxt.agent)
    assert tried >= 3 and failures == 0


def test_browser_only_user_agent_warns(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="scrapy_rep"):
        assert read(USER_AGENT="Mozilla/5.0 (X11; Linux)").token == "Mozilla"
    (record,) = caplog.records
    message = record.getMessage()
    assert "USER_AGENT 'Mozilla/5.0 (X11; Linux)' names no crawler product token" in message
    assert "matched as 'Mozilla'" in message
    assert "set REP_PRODUCT_TOKEN = 'yourbot'" in message
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="scrapy_rep"):
        assert read(USER_AGENT="Mozilla/5.0 (compatible; shopbot/1.0)").token == "shopbot"
        assert read(REP_PRODUCT_TOKEN="mybot", USER_AGENT="Mozilla/5.0").token == "mybot"
    assert caplog.records == []


@pytest.mark.parametrize("token", ["MyBot/1.0", "my bot", "bot2", "", "*"])
def test_invalid_rep_product_token(token: str) -> None:
    if not token:  # empty means "not set": falls back to USER_AGENT
        assert read(REP_PRODUCT_TOKEN=token).token == "testbot"
        return
    with pytest.raises(SettingError) as raised:
        read(REP_PRODUCT_TOKEN=token)
    message = str(raised.value)
    assert message.startswith("REP_PRODUCT_TOKEN: invalid product token")
    assert repr(token) in message
    assert "letters, '_' and '-'" in message


def test_user_agent_without_a_token() -> None:
    with pytest.raises(SettingError, match=r"USER_AGENT '/1.0' names no product token"):
        read(USER_AGENT="/1.0")
    with pytest.raises(SettingError, match=r"ROBOTSTXT_USER_AGENT .*set REP_PRODUCT_TOKEN"):
        read(ROBOTSTXT_USER_AGENT="(bad)")


def test_no_token_anywhere() -> None:
    with pytest.raises(SettingError, match="no product token: set REP_PRODUCT_TOKEN"):
        RepSettings.from_settings({}.get)


def test_unknown_settings_name_the_closest_known_one() -> None:
    names = ["REP_PRODUCT_TOKN", "REP_FETCH_TIMEOUT", "REP_CLOCK", "REP_XYZZY", "USER_AGENT"]
    assert unknown_settings(names) == [
        ("REP_PRODUCT_TOKN", "REP_PRODUCT_TOKEN"),
        ("REP_XYZZY", None),
    ]
    assert unknown_settings(["REP_CACHE_TTL", "REP_CACHE_TL"]) == [
        ("REP_CACHE_TL", "REP_CACHE_TTL")
    ]

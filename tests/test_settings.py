"""``RepSettings.from_settings``: defaults, clear errors, and where the product token comes from."""

from __future__ import annotations

from typing import Any

import pytest
from scrapy.settings import Settings

from scrapy_rep.policy import DEFAULT_ACTIONS, Action, PolicyConfig
from scrapy_rep.settings import DEFAULTS, RepSettings, SettingError

UA = "testbot/1.0 (+http://127.0.0.1/)"


def read(**values: Any) -> RepSettings:
    return RepSettings.from_settings({"USER_AGENT": UA, **values}.get)


def test_defaults() -> None:
    config = read()
    assert config.token == "testbot"
    assert config.policy == PolicyConfig()
    assert config.policy.actions == DEFAULT_ACTIONS
    assert config.fetch_timeout == DEFAULTS["REP_FETCH_TIMEOUT"][0]
    assert config.max_redirects == 5
    assert config.policy.ttl == 86_400
    assert config.policy.unreachable_max_age == 30 * 86_400
    assert config.disallowed_action == "drop"
    assert config.collection_policy is None
    assert config.crawl_delay_enabled is True
    assert config.store == "auto"  # SQLite with a JOBDIR, memory without
    assert config.decision_log is None


def test_defaults_through_scrapy_settings() -> None:
    """Scrapy's own default USER_AGENT ('Scrapy/2.x (+https://scrapy.org)') gives 'Scrapy'."""
    config = RepSettings.from_settings(Settings().get)
    assert config.token == "Scrapy"
    assert config.policy == PolicyConfig()


def test_values_are_read() -> None:
    config = read(
        REP_CACHE_TTL="120",
        REP_PAUSE_INITIAL=0.5,
        REP_PAUSE_MAX_TRIES="7",
        REP_DISALLOWED_ACTION="PARK",
        REP_STATUS_ACTIONS={403: "ALLOW", "5xx": Action.DISALLOW},
    )
    assert config.policy.ttl == 120.0
    assert config.policy.pause_initial == 0.5
    assert config.policy.pause_max_tries == 7
    assert config.disallowed_action == "park"
    assert config.policy.actions["403"] is Action.ALLOW
    assert config.policy.actions["5xx"] is Action.DISALLOW
    assert config.policy.actions["401"] is Action.PAUSE  # untouched rows keep their default


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("REP_CACHE_TTL", "a day", "REP_CACHE_TTL must be a number, not 'a day'"),
        ("REP_CACHE_TTL", 0, "REP_CACHE_TTL must be at least 1"),
        ("REP_CACHE_MIN_TTL", -1, "REP_CACHE_MIN_TTL must be at least 0"),
        ("REP_FETCH_TIMEOUT", 0, "REP_FETCH_TIMEOUT must be at least"),
        ("REP_FETCH_TIMEOUT", [], "REP_FETCH_TIMEOUT must be a number"),
        ("REP_MAX_REDIRECTS", -1, "REP_MAX_REDIRECTS must be at least 0"),
        ("REP_MAX_REDIRECTS", "five", "REP_MAX_REDIRECTS must be a number"),
        ("REP_PAUSE_INITIAL", 0, "REP_PAUSE_INITIAL must be at least"),
        ("REP_PAUSE_MAX", -5, "REP_PAUSE_MAX must be at least"),
        ("REP_PAUSE_MAX_TRIES", 0, "REP_PAUSE_MAX_TRIES must be at least 1"),
        ("REP_RETRY_AFTER_MAX", -1, "REP_RETRY_AFTER_MAX must be at least 0"),
        ("REP_CACHE_MAX_ORIGINS", 0, "REP_CACHE_MAX_ORIGINS must be at least 1"),
        ("REP_PARK_MAX", -1, "REP_PARK_MAX must be at least 0"),
        ("REP_PARK_TIMEOUT", 0, "REP_PARK_TIMEOUT must be at least"),
        ("REP_CRAWL_DELAY_MAX", -1, "REP_CRAWL_DELAY_MAX must be at least 0"),
        ("REP_DISALLOWED_ACTION", "ignore", "REP_DISALLOWED_ACTION must be one of"),
        ("REP_COLLECTION_UNRESOLVED_ACTION", "allow", "REP_COLLECTION_UNRESOLVED_ACTION must be"),
        (
            "REP_STORE",
            "mongo",
            "REP_STORE must be one of ('memory', 'redis', 'sqlite', 'auto'), not 'mongo'",
        ),
        ("REP_SQLITE_RETENTION", 0, "REP_SQLITE_RETENTION must be at least 1"),
        ("REP_STATUS_ACTIONS", ["403"], "REP_STATUS_ACTIONS must be a dict"),
        ("REP_STATUS_ACTIONS", {"302": "allow"}, "unknown outcome '302'; known: 2xx, 4xx"),
        ("REP_STATUS_ACTIONS", {"403": "maybe"}, "unknown action 'maybe'; known: rules, allow"),
    ],
)
def test_bad_values_say_what_is_wrong(name: str, value: Any, message: str) -> None:
    with pytest.raises(SettingError) as raised:
        read(**{name: value})
    assert message in str(raised.value)


def test_flags_read_like_scrapy_reads_them() -> None:
    """``scrapy crawl -s REP_USE_STALE=False`` passes a string; it must mean off."""
    for off in ("False", "false", "0", 0, False):
        config = RepSettings.from_settings(
            Settings({"REP_USE_STALE": off, "REP_CRAWL_DELAY_ENABLED": off}).get
        )
        assert config.policy.use_stale is False, off
        assert config.crawl_delay_enabled is False, off
    for on in ("True", "1", 1, True):
        config = RepSettings.from_settings(Settings({"REP_USE_STALE": on}).get)
        assert config.policy.use_stale is True, on


# -- the product token ------------------------------------------------------------------------


def test_token_rep_product_token_wins() -> None:
    config = read(REP_PRODUCT_TOKEN="mybot", ROBOTSTXT_USER_AGENT="otherbot")
    assert config.token == "mybot"


def test_token_robotstxt_user_agent_before_user_agent() -> None:
    assert read(ROBOTSTXT_USER_AGENT="OtherBot/2.0 (compatible)").token == "OtherBot"


def test_token_from_user_agent() -> None:
    assert read().token == "testbot"
    assert read(USER_AGENT="Mozilla/5.0 (X11; Linux)").token == "Mozilla"
    assert read(USER_AGENT="my_crawler-x").token == "my_crawler-x"


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
    with pytest.raises(SettingError, match=r"USER_AGENT '/1.0' does not start with a product"):
        read(USER_AGENT="/1.0")
    with pytest.raises(SettingError, match=r"ROBOTSTXT_USER_AGENT .*set REP_PRODUCT_TOKEN"):
        read(ROBOTSTXT_USER_AGENT="(bad)")


def test_no_token_anywhere() -> None:
    with pytest.raises(SettingError, match="no product token: set REP_PRODUCT_TOKEN"):
        RepSettings.from_settings({}.get)

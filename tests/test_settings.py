"""Deprecated settings: no longer rows, still read, checked and honoured for one release.

Each one set is logged once per reading, in one line naming what replaces it
(``DEPRECATED`` in ``scrapy_rep/runtime/settings.py``). No crawl: the settings
are read as a crawler reads them, through Scrapy's ``Settings`` with the
add-on's defaults installed.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import pytest
from scrapy.settings import Settings

from scrapy_rep import Addon
from scrapy_rep.core.policy import PolicyConfig
from scrapy_rep.core.pushback import PushbackConfig
from scrapy_rep.runtime.settings import (
    DEFAULTS,
    DEPRECATED,
    SETTINGS,
    RepSettings,
    SettingError,
    unknown_settings,
)

ROOT = Path(__file__).resolve().parent.parent
UA = "testbot/1.0 (+http://127.0.0.1/)"


def read(**values: Any) -> RepSettings:
    """As a crawler reads them: the add-on's defaults, then the project's ``values``."""
    settings = Settings({"USER_AGENT": UA})
    Addon().update_settings(settings)
    settings.setdict(values, priority="project")
    return RepSettings.from_settings(settings.get)


def warnings(caplog: pytest.LogCaptureFixture, **values: Any) -> tuple[RepSettings, list[str]]:
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="scrapy_rep"):
        config = read(**values)
    return config, [r.getMessage() for r in caplog.records if "deprecated" in r.getMessage()]


def test_deprecated_settings_are_no_rows_and_no_unknown_names() -> None:
    rows = {row.name for row in SETTINGS}
    assert rows.isdisjoint(DEPRECATED)
    assert unknown_settings(DEPRECATED) == []
    for entry in DEPRECATED.values():
        assert not entry.to or entry.to in rows, entry
        assert entry.instead and "\n" not in entry.instead, entry


def test_the_defaults_are_the_fixed_behaviour() -> None:
    config = read()
    assert config.policy == PolicyConfig()
    assert config.policy.min_ttl == DEPRECATED["REP_CACHE_MIN_TTL"].default == 60
    assert config.policy.use_stale is True
    assert config.policy.unreachable_max_age == 30 * 86_400
    assert config.policy.retry_after_max == config.pause_max == 3600
    assert config.disallowed_action == "drop"
    assert config.requeue_parked is True
    assert config.crawl_delay_enabled is True and config.crawl_delay_shared is True
    assert config.worker_check_interval == config.worker_lease / 3 == 10
    assert config.store_retention == 30 * 86_400 and config.lock_timeout == 10
    # the settings diet (issue 38): fixed, or derived from the settings that stay
    assert config.max_redirects == 5 and config.policy.pause_max_tries == 5
    assert config.pushback == PushbackConfig(actions=config.page_status_actions)
    assert (config.pushback.floor, config.pushback.backoff_start) == (1, 5)
    assert (config.pushback.backoff_factor, config.pushback.reset_after) == (2, 10)
    assert config.pushback.block_pause == 6 * 3600
    assert config.cache_compiled_bytes == 256 * 2**20 == config.cache_max_bytes // 8
    assert config.cache_max_origins == 1_048_576 == config.cache_max_bytes // 2048
    assert config.store == "auto" and config.redis_url is None and config.sqlite_path is None
    assert config.redis_prefix == "scrapy-rep"
    assert config.report == config.report_enabled is True and config.report_html is None
    assert config.identity_action == {"token-missing": "warn", "identity-changed": "drop"}
    assert (config.identity_token_action, config.identity_change_action) == ("warn", "drop")


def test_nothing_is_said_when_no_deprecated_setting_is_set(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert warnings(caplog) == (read(), [])


#: a value to set for the deprecated settings whose default was unset, and what it needs
SAMPLES: dict[str, dict[str, Any]] = {
    "REP_REDIS_URL": {"REP_REDIS_URL": "redis://127.0.0.1:1"},
    "REP_SQLITE_PATH": {"REP_SQLITE_PATH": "policies.sqlite"},
    "REP_REPORT_HTML": {"REP_REPORT_HTML": "report.html", "REP_DECISION_LOG": "audit.jsonl"},
}


@pytest.mark.parametrize("name", sorted(DEPRECATED))
def test_each_one_set_is_said_once_in_one_line_naming_the_replacement(
    caplog: pytest.LogCaptureFixture, name: str
) -> None:
    entry = DEPRECATED[name]
    _config, said = warnings(caplog, **SAMPLES.get(name, {name: entry.default}))
    assert len(said) == 1, said
    (line,) = said
    assert "\n" not in line and line.startswith(f"scrapy-rep: {name}")
    assert (entry.to or entry.instead.replace("`", "")) in line


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("REP_CACHE_MIN_TTL", -1),
        ("REP_USE_STALE", "maybe"),
        ("REP_DISALLOWED_ACTION", "ignore"),
        ("REP_WORKER_CHECK_INTERVAL", 0.01),
        ("REP_REDIS_RETENTION", 0),
        ("REP_REDIS_LOCK_TIMEOUT", "soon"),
        ("REP_MAX_REDIRECTS", -1),
        ("REP_CACHE_MAX_ORIGINS", 0),
        ("REP_CACHE_COMPILED_BYTES", "lots"),
        ("REP_PAUSE_MAX_TRIES", 0),
        ("REP_PAGE_PAUSE_MIN", -1),
        ("REP_PAGE_BACKOFF_START", 0),
        ("REP_PAGE_BACKOFF_FACTOR", 0.5),
        ("REP_PAGE_BACKOFF_RESET", 0),
        ("REP_BLOCK_PAUSE", "long"),
        ("REP_STORE_LOCK_TIMEOUT", 0.01),
        ("REP_STORE_RETENTION", 0),
        ("REP_REPORT_ENABLED", "maybe"),
        ("REP_IDENTITY_TOKEN_ACTION", "ignore"),
        ("REP_IDENTITY_CHANGE_ACTION", "allow"),
    ],
)
def test_a_bad_deprecated_value_is_still_an_error_naming_it(name: str, value: Any) -> None:
    with pytest.raises(SettingError) as raised:
        read(**{name: value})
    assert str(raised.value).startswith(f"{name} must be ")


def test_a_fixed_setting_at_its_default_can_be_removed(caplog: pytest.LogCaptureFixture) -> None:
    config, said = warnings(caplog, REP_DISALLOWED_ACTION="drop")
    assert config == read(REP_DISALLOWED_ACTION="drop") and config.disallowed_action == "drop"
    assert said == [
        "scrapy-rep: REP_DISALLOWED_ACTION is deprecated and can be removed: "
        "fixed: a disallowed request is dropped"
    ]


@pytest.mark.parametrize(
    ("name", "value", "honoured"),
    [
        ("REP_CACHE_MIN_TTL", 0, lambda c: c.policy.min_ttl == 0),
        ("REP_USE_STALE", "False", lambda c: c.policy.use_stale is False),
        ("REP_UNREACHABLE_MAX_AGE", 5, lambda c: c.policy.unreachable_max_age == 5),
        ("REP_REQUEUE_PARKED", False, lambda c: c.requeue_parked is False),
        ("REP_DISALLOWED_ACTION", "PARK", lambda c: c.disallowed_action == "park"),
        ("REP_RETRY_AFTER_MAX", 2, lambda c: c.policy.retry_after_max == 2),
        ("REP_CRAWL_DELAY_ENABLED", "off", lambda c: c.crawl_delay_enabled is False),
        ("REP_CRAWL_DELAY_SHARED", 0, lambda c: c.crawl_delay_shared is False),
        ("REP_WORKER_CHECK_INTERVAL", 4, lambda c: c.worker_check_interval == 4),
        ("REP_REDIS_RETENTION", 99, lambda c: c.store_retention == 99),
        ("REP_SQLITE_RETENTION", 60, lambda c: c.store_retention == 60),
        ("REP_STORE_RETENTION", 61, lambda c: c.store_retention == 61),
        ("REP_REDIS_LOCK_TIMEOUT", 2, lambda c: c.lock_timeout == 2),
        ("REP_STORE_LOCK_TIMEOUT", 3, lambda c: c.lock_timeout == 3),
        ("REP_MAX_REDIRECTS", 2, lambda c: c.max_redirects == 2),
        ("REP_CACHE_MAX_ORIGINS", 7, lambda c: c.cache_max_origins == 7),
        ("REP_CACHE_COMPILED_BYTES", 5_000, lambda c: c.cache_compiled_bytes == 5_000),
        ("REP_PAUSE_MAX_TRIES", "2", lambda c: c.policy.pause_max_tries == 2),
        ("REP_PAGE_PAUSE_MIN", 0, lambda c: c.pushback.floor == 0),
        ("REP_PAGE_BACKOFF_START", 0.5, lambda c: c.pushback.backoff_start == 0.5),
        ("REP_PAGE_BACKOFF_FACTOR", 3, lambda c: c.pushback.backoff_factor == 3),
        ("REP_PAGE_BACKOFF_RESET", 1, lambda c: c.pushback.reset_after == 1),
        ("REP_BLOCK_PAUSE", 60, lambda c: c.pushback.block_pause == 60),
    ],
)
def test_another_value_is_honoured_for_this_release(
    caplog: pytest.LogCaptureFixture, name: str, value: Any, honoured: Any
) -> None:
    config, said = warnings(caplog, **{name: value})
    assert honoured(config)
    assert config != read()
    (line,) = said
    assert line.startswith(f"scrapy-rep: {name} = ")
    assert "is deprecated and no longer configurable from the next release: " in line
    assert line.endswith("; honoured until then")


def test_derived_values_follow_their_setting() -> None:
    assert read(REP_PAUSE_MAX=120).policy.retry_after_max == 120
    assert read(REP_PAUSE_MAX=0.5).pushback.floor == 0.5  # the floor is never past the cap
    assert read(REP_FETCH_TIMEOUT=60).lock_timeout == 20
    assert read(REP_FETCH_TIMEOUT=0.5).lock_timeout == 1  # at least 1 s
    small = read(REP_CACHE_MAX_BYTES=2**20)
    assert (small.cache_max_origins, small.cache_compiled_bytes) == (512, 2**17)
    tiny = read(REP_CACHE_MAX_BYTES=1)
    assert (tiny.cache_max_origins, tiny.cache_compiled_bytes) == (1, 1)
    assert read(REP_WORKER_LEASE=3).worker_check_interval == 1
    off = read(REP_CRAWL_DELAY_MAX=0)
    assert off.crawl_delay_enabled is False and off.crawl_delay_max == 0
    assert read(REP_CRAWL_DELAY_MAX=0.5).crawl_delay_enabled is True


#: the audit log a report page is made from
LOG = {"REP_DECISION_LOG": "audit.jsonl"}


@pytest.mark.parametrize(
    ("old", "new", "value", "attribute", "newer"),
    [
        ("REP_REPORT_ENABLED", "REP_REPORT", False, "report", "page.html"),
        ("REP_REPORT_HTML", "REP_REPORT", "old.html", "report", "page.html"),
    ],
)
def test_a_renamed_setting_is_read_as_its_new_name(
    caplog: pytest.LogCaptureFixture, old: str, new: str, value: Any, attribute: str, newer: Any
) -> None:
    config, said = warnings(caplog, **{old: value}, **LOG)
    assert getattr(config, attribute) == value
    assert getattr(read(**{new: value}, **LOG), attribute) == value
    assert said == [
        f"scrapy-rep: {old} is deprecated: use {new} (read as it until the next release)"
    ]
    # the new name, set, wins; the old one is still checked and said
    assert getattr(read(**{old: value, new: newer}, **LOG), attribute) == newer
    # without Scrapy's Settings (nothing installed the defaults): the same
    plain = RepSettings.from_settings({"USER_AGENT": UA, old: value, **LOG}.get)
    assert getattr(plain, attribute) == value


def test_both_old_retentions_set_the_redis_one_is_read() -> None:
    config = read(REP_SQLITE_RETENTION=60, REP_REDIS_RETENTION=99)
    assert config.store_retention == 99
    assert "REP_REDIS_RETENTION" in DEPRECATED["REP_SQLITE_RETENTION"].instead
    assert read(REP_REDIS_RETENTION=99, REP_STORE_RETENTION=61).store_retention == 61
    assert read(REP_REDIS_LOCK_TIMEOUT=2, REP_STORE_LOCK_TIMEOUT=3).lock_timeout == 3


def test_a_crawler_reading_is_said_once(caplog: pytest.LogCaptureFixture) -> None:
    """``RepSettings.of`` reads once per crawler, however many components ask."""
    from scrapy.utils.test import get_crawler

    crawler = get_crawler(settings_dict={"USER_AGENT": UA, "REP_USE_STALE": False})
    with caplog.at_level(logging.WARNING, logger="scrapy_rep"):
        first = RepSettings.of(crawler)
        assert RepSettings.of(crawler) is first
    said = [r.getMessage() for r in caplog.records if "REP_USE_STALE" in r.getMessage()]
    assert len(said) == 1 and first.policy.use_stale is False


#: where users read about settings (and the package's messages): a removed name is only
#: in the deprecated table
USER_TEXTS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "example_project").rglob("*.py")),
    *sorted(p for p in (ROOT / "scrapy_rep").rglob("*.py") if p.name != "settings.py"),
]


def test_the_docs_the_example_and_the_package_name_no_deprecated_setting() -> None:
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, DEPRECATED)) + r")\b")
    deprecated_table = re.compile(r"<!-- rep-table deprecated -->.*?<!-- end rep-table -->", re.S)
    found = {
        str(path.relative_to(ROOT)): sorted(
            set(pattern.findall(deprecated_table.sub("", path.read_text("utf-8"))))
        )
        for path in USER_TEXTS
        if path.exists()
    }
    assert {path: names for path, names in found.items() if names} == {}


def test_the_reference_has_the_deprecated_table() -> None:
    reference = (ROOT / "docs" / "reference.md").read_text("utf-8")
    assert "<!-- rep-table deprecated -->\n| setting |" in reference
    assert set(DEFAULTS).isdisjoint(DEPRECATED)


# -- the settings diet (issue 38): what now says what the removed settings said -----------------


def test_rep_store_takes_a_redis_url_with_its_prefix(caplog: pytest.LogCaptureFixture) -> None:
    config, said = warnings(caplog, REP_STORE="redis://10.0.0.1:6380/2?prefix=shop")
    assert said == []
    assert (config.store, config.redis_url, config.redis_prefix) == (
        "redis",
        "redis://10.0.0.1:6380/2",
        "shop",
    )
    other = read(REP_STORE="rediss://u:p@h:1/0?ssl_cert_reqs=none", REDIS_URL="redis://x:1")
    assert other.redis_url == "rediss://u:p@h:1/0?ssl_cert_reqs=none"  # the URL wins
    assert other.redis_prefix == "scrapy-rep"
    assert read(REP_STORE="unix:///run/redis.sock").redis_url == "unix:///run/redis.sock"


def test_rep_store_redis_reads_redis_url_as_before() -> None:
    assert read(REP_STORE="redis", REDIS_URL="redis://q:1/0").redis_url == "redis://q:1/0"
    assert read(REP_STORE="Redis").redis_url is None  # the store's default, 127.0.0.1:6379


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ("sqlite:///var/crawl/policies.sqlite", "/var/crawl/policies.sqlite"),
        ("sqlite:crawl/policies.sqlite", "crawl/policies.sqlite"),
        ("SQLite:p.sqlite", "p.sqlite"),
    ],
)
def test_rep_store_takes_a_sqlite_file(value: str, path: str) -> None:
    config = read(REP_STORE=value)
    assert (config.store, config.sqlite_path) == ("sqlite", path)


@pytest.mark.parametrize(
    "value", ["sqlite:", "sqlite://host/x", "postgres://h/db", "redis:x", "redis://h?prefix=", 7]
)
def test_a_bad_rep_store_says_what_is_accepted(value: Any) -> None:
    with pytest.raises(SettingError) as raised:
        read(REP_STORE=value)
    message = str(raised.value)
    assert message.startswith("REP_STORE ") and "sqlite:///abs/path" in message


def test_the_old_store_address_settings_are_honoured(caplog: pytest.LogCaptureFixture) -> None:
    config, said = warnings(
        caplog,
        REP_STORE="redis",
        REDIS_URL="redis://queue:1/0",
        REP_REDIS_URL="redis://store:1/0",
        REP_REDIS_PREFIX="old",
    )
    assert (config.redis_url, config.redis_prefix) == ("redis://store:1/0", "old")
    assert said == [
        "scrapy-rep: REP_REDIS_URL is deprecated: use REP_STORE = 'redis://host:6379/0' (a Redis "
        "URL; 'redis' reads REDIS_URL) (honoured until the next release)",
        "scrapy-rep: REP_REDIS_PREFIX is deprecated: use REP_STORE = "
        "'redis://host:6379/0?prefix=...' (the URL's prefix) (honoured until the next release)",
    ]
    # a URL in REP_STORE wins over them
    url = read(
        REP_STORE="redis://new:1/0?prefix=p", REP_REDIS_URL="redis://o:1", REP_REDIS_PREFIX="o"
    )
    assert (url.redis_url, url.redis_prefix) == ("redis://new:1/0", "p")
    sqlite = read(REP_STORE="sqlite", REP_SQLITE_PATH="old.sqlite")
    assert (sqlite.store, sqlite.sqlite_path) == ("sqlite", "old.sqlite")
    assert read(REP_STORE="sqlite:new.sqlite", REP_SQLITE_PATH="old.sqlite").sqlite_path == (
        "new.sqlite"
    )


def test_rep_report_is_on_off_or_a_page() -> None:
    assert (read(REP_REPORT=False).report_enabled, read(REP_REPORT="off").report_html) == (
        False,
        None,
    )
    page = read(REP_REPORT="out/report.html", REP_DECISION_LOG="audit.jsonl")
    assert (page.report_enabled, page.report_html) == (True, "out/report.html")
    with pytest.raises(SettingError, match="REP_REPORT needs REP_DECISION_LOG"):
        read(REP_REPORT="out/report.html")
    with pytest.raises(SettingError, match="REP_REPORT must be True, False or the path"):
        read(REP_REPORT=3)


def test_the_old_report_settings_are_read_as_rep_report(caplog: pytest.LogCaptureFixture) -> None:
    log = {"REP_DECISION_LOG": "audit.jsonl"}
    config, said = warnings(caplog, REP_REPORT_HTML="r.html", **log)
    assert (config.report_enabled, config.report_html) == (True, "r.html")
    assert said == [
        "scrapy-rep: REP_REPORT_HTML is deprecated: use REP_REPORT (read as it until the next "
        "release)"
    ]
    # both: the page, and no summary in the log, as before
    both = read(REP_REPORT_HTML="r.html", REP_REPORT_ENABLED=False, **log)
    assert (both.report_enabled, both.report_html) == (False, "r.html")
    with pytest.raises(SettingError, match="REP_REPORT_HTML needs REP_DECISION_LOG"):
        read(REP_REPORT_HTML="r.html")


def test_rep_identity_action_sets_both_parts_or_some() -> None:
    both = read(REP_IDENTITY_ACTION="off")
    assert (both.identity_token_action, both.identity_change_action) == ("off", "off")
    one = read(REP_IDENTITY_ACTION={"token-missing": "drop"})
    assert (one.identity_token_action, one.identity_change_action) == ("drop", "drop")
    text = read(REP_IDENTITY_ACTION='{"identity-changed": "warn"}')
    assert (text.identity_token_action, text.identity_change_action) == ("warn", "warn")
    with pytest.raises(SettingError, match="REP_IDENTITY_ACTION: unknown part 'proxy'"):
        read(REP_IDENTITY_ACTION={"proxy": "drop"})
    with pytest.raises(SettingError, match=r"REP_IDENTITY_ACTION\['token-missing'\] must be one"):
        read(REP_IDENTITY_ACTION={"token-missing": "allow"})


@pytest.mark.parametrize(
    ("old", "value", "token", "change"),
    [
        ("REP_IDENTITY_TOKEN_ACTION", "drop", "drop", "drop"),
        ("REP_IDENTITY_TOKEN_ACTION", "off", "off", "drop"),
        ("REP_IDENTITY_CHANGE_ACTION", "warn", "warn", "warn"),
        ("REP_IDENTITY_CHANGE_ACTION", "off", "warn", "off"),
    ],
)
def test_an_old_identity_setting_is_read_as_its_part(
    caplog: pytest.LogCaptureFixture, old: str, value: str, token: str, change: str
) -> None:
    config, said = warnings(caplog, **{old: value})
    assert (config.identity_token_action, config.identity_change_action) == (token, change)
    part = DEPRECATED[old].part
    assert said == [
        f"scrapy-rep: {old} is deprecated: use REP_IDENTITY_ACTION = {{{part!r}: ...}} "
        "(read as it until the next release)"
    ]
    # the two old ones together, and without Scrapy's Settings
    plain = RepSettings.from_settings(
        {
            "USER_AGENT": UA,
            "REP_IDENTITY_TOKEN_ACTION": "drop",
            "REP_IDENTITY_CHANGE_ACTION": "off",
        }.get
    )
    assert (plain.identity_token_action, plain.identity_change_action) == ("drop", "off")
    # the new one, set, wins
    assert read(**{old: value, "REP_IDENTITY_ACTION": "warn"}).identity_change_action == "warn"

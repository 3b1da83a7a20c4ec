"""Removed settings, what is made from the rows, and the settings that replaced others.

A removed name still set stops the crawl at start-up with one line naming
what replaces it (``REMOVED`` in ``scrapy_rep/runtime/settings.py``). No
crawl: the settings are read as a crawler reads them, through Scrapy's
``Settings`` with the add-on's defaults installed.
"""

from __future__ import annotations

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
    REMOVED,
    TUNE,
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


def test_removed_names_are_no_rows_and_no_unknown_names() -> None:
    assert set(DEFAULTS).isdisjoint(REMOVED)
    assert unknown_settings(REMOVED) == []
    for name, instead in REMOVED.items():
        assert instead and "\n" not in instead, name
        # what replaces it is a setting, or the behaviour now fixed
        named = set(re.findall(r"\b(?:REP|REDIS)_[A-Z_]+\b", instead))
        assert named <= set(DEFAULTS) | {"REDIS_URL"}, name
        assert named or instead.endswith("; remove it"), name


def test_the_defaults_are_the_fixed_behaviour() -> None:
    config = read()
    assert config.policy == PolicyConfig()
    assert config.policy.min_ttl == 60
    assert config.policy.use_stale is True
    assert config.policy.unreachable_max_age == 30 * 86_400
    assert config.policy.retry_after_max == config.pause_max == 3600
    assert config.disallowed_action == "drop"
    assert config.requeue_parked is True
    assert config.crawl_delay_enabled is True
    assert config.worker_check_interval == config.worker_lease / 3 == 10
    assert config.store_retention == 30 * 86_400 and config.lock_timeout == 10
    # fixed, or derived from the settings that stay
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


@pytest.mark.parametrize("name", sorted(REMOVED))
def test_a_removed_name_set_stops_the_reading_in_one_line_naming_its_replacement(
    name: str,
) -> None:
    for value in (False, "x", 0):  # whatever its value, even its old default
        with pytest.raises(SettingError) as raised:
            read(**{name: value})
        assert str(raised.value) == f"{name} was removed: {REMOVED[name]}"
        # without Scrapy's Settings (nothing installed the defaults): the same
        with pytest.raises(SettingError):
            RepSettings.from_settings({"USER_AGENT": UA, name: value}.get)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("REP_REPORT_ENABLED", {"REP_REPORT": "page.html", "REP_DECISION_LOG": "audit.jsonl"}),
        ("REP_REDIS_URL", {"REP_STORE": "redis://127.0.0.1:1/0"}),
        ("REP_IDENTITY_CHANGE_ACTION", {"REP_IDENTITY_ACTION": "warn"}),
    ],
)
def test_an_old_name_set_beside_its_new_one_is_not_dropped_in_silence(
    old: str, new: dict[str, Any]
) -> None:
    """Before, the new name won and the old one's warning said it was read."""
    read(**new)
    with pytest.raises(SettingError, match=f"^{old} was removed: use "):
        read(**{old: False}, **new)


def test_the_test_seam_replaces_made_values() -> None:
    config = read(**{TUNE: {"max_redirects": 2, "policy.min_ttl": 0}})
    assert (config.max_redirects, config.policy.min_ttl) == (2, 0)
    assert config.policy.ttl == read().policy.ttl
    with pytest.raises(SettingError, match="_REP_TUNE: no value 'nosuch' to tune"):
        read(**{TUNE: {"nosuch": 1}})


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


#: where users read about settings (and the package's messages): no removed name
USER_TEXTS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "example_project").rglob("*.py")),
    *sorted(p for p in (ROOT / "scrapy_rep").rglob("*.py") if p.name != "settings.py"),
]


def test_the_docs_the_example_and_the_package_name_no_removed_setting() -> None:
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, REMOVED)) + r")\b")
    found = {
        str(path.relative_to(ROOT)): sorted(set(pattern.findall(path.read_text("utf-8"))))
        for path in USER_TEXTS
        if path.exists()
    }
    assert {path: names for path, names in found.items() if names} == {}


# -- what now says what the removed settings said ---------------------------------------


def test_rep_store_takes_a_redis_url_with_its_prefix() -> None:
    config = read(REP_STORE="redis://10.0.0.1:6380/2?prefix=shop")
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


def test_rep_identity_action_sets_both_parts_or_some() -> None:
    both = read(REP_IDENTITY_ACTION="off")
    assert both.identity_action == {"token-missing": "off", "identity-changed": "off"}
    one = read(REP_IDENTITY_ACTION={"token-missing": "drop"})
    assert one.identity_action == {"token-missing": "drop", "identity-changed": "drop"}
    text = read(REP_IDENTITY_ACTION='{"identity-changed": "warn"}')
    assert text.identity_action == {"token-missing": "warn", "identity-changed": "warn"}
    with pytest.raises(SettingError, match="REP_IDENTITY_ACTION: unknown part 'proxy'"):
        read(REP_IDENTITY_ACTION={"proxy": "drop"})
    with pytest.raises(SettingError, match=r"REP_IDENTITY_ACTION\['token-missing'\] must be one"):
        read(REP_IDENTITY_ACTION={"token-missing": "allow"})


@pytest.mark.parametrize(
    ("values", "name"),
    [
        ({"REP_STORE": "redis://127.0.0.1:port/0"}, "REP_STORE"),
        ({"REP_STORE": "redis://127.0.0.1:1/0?socket_timeout=soon"}, "REP_STORE"),
        ({"REP_STORE": "redis", "REDIS_URL": "127.0.0.1:6379"}, "REDIS_URL"),
    ],
)
def test_a_redis_url_the_client_cannot_read_is_one_line_naming_its_setting(
    values: dict[str, str], name: str
) -> None:
    """Before, the Redis client's ValueError, naming no setting."""
    from scrapy_rep.runtime.store.factory import open_store

    config = read(**values)
    with pytest.raises(SettingError) as raised:
        open_store(config, None)
    message = str(raised.value)
    assert message.startswith(f"{name} = {config.redis_url!r}: ") and "\n" not in message

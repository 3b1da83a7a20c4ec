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


def test_nothing_is_said_when_no_deprecated_setting_is_set(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert warnings(caplog) == (read(), [])


@pytest.mark.parametrize("name", sorted(DEPRECATED))
def test_each_one_set_is_said_once_in_one_line_naming_the_replacement(
    caplog: pytest.LogCaptureFixture, name: str
) -> None:
    entry = DEPRECATED[name]
    _config, said = warnings(caplog, **{name: entry.default})
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
    assert read(REP_WORKER_LEASE=3).worker_check_interval == 1
    off = read(REP_CRAWL_DELAY_MAX=0)
    assert off.crawl_delay_enabled is False and off.crawl_delay_max == 0
    assert read(REP_CRAWL_DELAY_MAX=0.5).crawl_delay_enabled is True


@pytest.mark.parametrize(
    ("old", "new", "value", "attribute"),
    [
        ("REP_REDIS_RETENTION", "REP_STORE_RETENTION", 99, "store_retention"),
        ("REP_SQLITE_RETENTION", "REP_STORE_RETENTION", 60, "store_retention"),
        ("REP_REDIS_LOCK_TIMEOUT", "REP_STORE_LOCK_TIMEOUT", 2, "lock_timeout"),
    ],
)
def test_a_renamed_setting_is_read_as_its_new_name(
    caplog: pytest.LogCaptureFixture, old: str, new: str, value: float, attribute: str
) -> None:
    config, said = warnings(caplog, **{old: value})
    assert getattr(config, attribute) == value
    assert getattr(read(**{new: value}), attribute) == value
    assert said == [
        f"scrapy-rep: {old} is deprecated: use {new} (read as it until the next release)"
    ]
    # the new name, set, wins; the old one is still checked and said
    assert getattr(read(**{old: value, new: 7}), attribute) == 7
    # without Scrapy's Settings (nothing installed the defaults): the same
    plain = RepSettings.from_settings({"USER_AGENT": UA, old: value}.get)
    assert getattr(plain, attribute) == value


def test_both_old_retentions_set_the_redis_one_is_read() -> None:
    config = read(REP_SQLITE_RETENTION=60, REP_REDIS_RETENTION=99)
    assert config.store_retention == 99
    assert "REP_REDIS_RETENTION" in DEPRECATED["REP_SQLITE_RETENTION"].instead


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
    found = {
        str(path.relative_to(ROOT)): sorted(set(pattern.findall(path.read_text("utf-8"))))
        for path in USER_TEXTS
        if path.exists()
    }
    assert {path: names for path, names in found.items() if names} == {}


def test_the_reference_has_the_deprecated_table() -> None:
    reference = (ROOT / "docs" / "reference.md").read_text("utf-8")
    assert "```{rep-table} deprecated\n```" in reference
    assert set(DEFAULTS).isdisjoint(DEPRECATED)

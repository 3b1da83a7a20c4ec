"""scrapy_rep.crawl.compat without a crawl: the same behaviour on every supported Scrapy.

``make test`` runs these on the newest Scrapy, ``make test-min`` on the oldest; a running
engine's scheduler: ``tests/integration/test_compat.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.settings import Settings
from scrapy.utils.conf import build_component_list
from scrapy.utils.misc import load_object

from scrapy_rep.addon import Addon
from scrapy_rep.components.robots import RobotsMiddleware
from scrapy_rep.crawl import compat


def _chain(settings: Settings) -> list[Any]:
    components = compat.component_priority_dict(settings, "DOWNLOADER_MIDDLEWARES")
    return [load_object(c) for c in build_component_list(components)]


@pytest.mark.parametrize(
    "project",
    [
        {},
        {"DOWNLOADER_MIDDLEWARES": {RobotsTxtMiddleware: 543}},
        {
            "DOWNLOADER_MIDDLEWARES": {
                "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": 7
            }
        },
    ],
    ids=["base-only", "class-key", "path-key"],
)
def test_the_addon_leaves_one_robots_middleware(project: dict[str, Any]) -> None:
    settings = Settings({"ROBOTSTXT_OBEY": True, **project})
    Addon().update_settings(settings)
    chain = _chain(settings)
    assert RobotsTxtMiddleware not in chain
    assert chain.count(RobotsMiddleware) == 1


def test_missing_features_name_the_scrapy_version_they_need() -> None:
    missing = compat.missing_features()
    assert (compat.ROBOTS_PARSED is None) == any("robots_parsed" in m for m in missing)
    assert all(">= 2." in m for m in missing)


def test_scheduler_of_no_engine_is_none() -> None:
    assert compat.scheduler_of(None) is None

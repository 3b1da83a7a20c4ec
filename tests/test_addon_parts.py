"""The add-on's parts and the table the manual route is checked against agree."""

from __future__ import annotations

from scrapy.settings import Settings

from scrapy_rep.addon import Addon
from scrapy_rep.components.identity import IdentityGuard
from scrapy_rep.crawl.parts import PARTS, missing


def test_the_add_on_installs_every_part_the_manual_route_is_checked_for() -> None:
    settings = Settings()
    Addon().update_settings(settings)
    assert missing(settings) == []


def test_robots_middleware_alone_lacks_every_part_and_none_disables_one() -> None:
    settings = Settings({"DOWNLOADER_MIDDLEWARES": {"scrapy_rep.RobotsMiddleware": 100}})
    assert missing(settings) == list(PARTS)
    Addon().update_settings(settings)
    settings.set_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", IdentityGuard, None)
    assert [part[1] for part in missing(settings)] == [
        "scrapy_rep.components.identity.IdentityGuard"
    ]

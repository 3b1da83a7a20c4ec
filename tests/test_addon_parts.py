"""The add-on's parts and the table the manual route is checked against agree."""

from __future__ import annotations

from scrapy.settings import Settings
from scrapy.utils.conf import build_component_list
from scrapy.utils.misc import load_object

from scrapy_rep.addon import Addon
from scrapy_rep.components.identity import IdentityGuard
from scrapy_rep.components.page import PageDirectivesMiddleware
from scrapy_rep.components.page_uses import PageUsesMiddleware
from scrapy_rep.crawl.parts import PARTS, USES_PART, missing


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


def test_a_crawl_declaring_uses_gets_the_page_middleware_that_answers_them() -> None:
    settings = Settings({"REP_USES": ["train-ai"]})
    Addon().update_settings(settings)
    found = {
        load_object(c) for c in build_component_list(settings.getwithbase("SPIDER_MIDDLEWARES"))
    }
    assert PageUsesMiddleware in found and PageDirectivesMiddleware not in found
    assert missing(settings) == []


def test_by_hand_a_crawl_declaring_uses_lacks_the_use_answers_without_their_middleware() -> None:
    settings = Settings(
        {
            "REP_USES": ["train-ai"],
            "SPIDER_MIDDLEWARES": {"scrapy_rep.PageDirectivesMiddleware": 950},
        }
    )
    assert USES_PART in missing(settings) and len(missing(settings)) == len(PARTS)

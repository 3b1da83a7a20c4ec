"""The add-on's parts and the table the manual route is checked against agree."""

from __future__ import annotations

import pytest
from scrapy.settings import Settings
from scrapy.utils.conf import build_component_list
from scrapy.utils.misc import load_object

from scrapy_rep.addon import Addon
from scrapy_rep.components.handover import HeldHandover
from scrapy_rep.components.identity import IdentityGuard
from scrapy_rep.components.page import PageDirectivesMiddleware
from scrapy_rep.components.page_uses import PageUsesMiddleware
from scrapy_rep.crawl.parts import EVERY_PART, missing

#: the parts every crawl needs, then each optional one by its class's name
PARTS = EVERY_PART[:4]
(
    USES_PART,
    HANDOVER_PART,
    COLLECTION_PART,
    SHARED_PAUSES_PART,
    AUDIT_LOG_PART,
    HTML_REPORT_PART,
) = (
    next(part for part in EVERY_PART if part.path.endswith(f".{name}"))
    for name in (
        "PageUsesMiddleware",
        "HeldHandover",
        "CollectionPolicy",
        "SharedPauseStore",
        "AuditLogFiles",
        "HtmlReport",
    )
)


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


@pytest.mark.parametrize(
    "where",
    [{"JOBDIR": "crawls/one"}, {"SCHEDULER": "scrapy_redis.scheduler.Scheduler"}],
    ids=["jobdir", "shared-scheduler"],
)
def test_a_crawl_with_somewhere_to_hand_held_requests_over_gets_the_handover(
    where: dict[str, str],
) -> None:
    settings = Settings(where)
    Addon().update_settings(settings)
    found = {load_object(c) for c in build_component_list(settings.getwithbase("EXTENSIONS"))}
    assert HeldHandover in found
    assert missing(settings) == []


def test_a_default_crawl_gets_no_handover_and_by_hand_lacks_it_only_with_a_jobdir() -> None:
    settings = Settings()
    Addon().update_settings(settings)
    assert HeldHandover not in {load_object(c) for c in settings.getdict("EXTENSIONS")}
    by_hand = {"DOWNLOADER_MIDDLEWARES": {"scrapy_rep.RobotsMiddleware": 100}}
    assert HANDOVER_PART not in missing(Settings(by_hand))
    assert HANDOVER_PART in missing(Settings({**by_hand, "JOBDIR": "crawls/one"}))


@pytest.mark.parametrize(
    ("settings", "part"),
    [
        ({"REP_COLLECTION_POLICY": "project.scope.check"}, COLLECTION_PART),
        ({"REP_STORE": "redis"}, SHARED_PAUSES_PART),
        ({"REP_STORE": "sqlite:///tmp/rep.sqlite"}, SHARED_PAUSES_PART),
        ({"JOBDIR": "crawls/one"}, SHARED_PAUSES_PART),
        ({"REP_REPORT": "report.html", "REP_DECISION_LOG": "audit.jsonl"}, HTML_REPORT_PART),
        ({"REP_DECISION_LOG": "audit.jsonl"}, AUDIT_LOG_PART),
        ({"REP_POLICY_ARCHIVE": "bodies"}, AUDIT_LOG_PART),
    ],
)
def test_an_optional_part_is_installed_when_its_setting_asks_and_lacked_by_hand(
    settings: dict[str, str], part: tuple[str, str, str]
) -> None:
    with_addon = Settings(settings)
    Addon().update_settings(with_addon)
    assert load_object(part[1]) in with_addon.getdict("EXTENSIONS")
    assert missing(with_addon) == []
    by_hand = {"DOWNLOADER_MIDDLEWARES": {"scrapy_rep.RobotsMiddleware": 100}}
    assert part not in missing(Settings(by_hand))
    assert part in missing(Settings({**by_hand, **settings}))


def test_a_default_crawl_installs_none_of_the_optional_extensions() -> None:
    settings = Settings({"REP_STORE": "memory"})
    Addon().update_settings(settings)
    loaded = [load_object(c) for c in settings.getdict("EXTENSIONS")]
    assert not any(c.__module__.startswith("scrapy_rep") for c in loaded)


@pytest.mark.parametrize("report", [None, True, False, "off"])
def test_a_crawl_naming_no_report_page_lacks_no_html_report_by_hand(report: object) -> None:
    """Only a page to write wants the report's extension; the log summary needs none."""
    settings = {"DOWNLOADER_MIDDLEWARES": {"scrapy_rep.RobotsMiddleware": 100}}
    settings |= {"REP_REPORT": report, "REP_DECISION_LOG": "audit.jsonl"}
    assert HTML_REPORT_PART not in missing(Settings(settings))

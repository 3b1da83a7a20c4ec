"""``ADDONS = {"scrapy_rep.Addon": 100}``: the one line that switches scrapy-rep on."""

from __future__ import annotations

from typing import Any

from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.utils.misc import load_object

from scrapy_rep.adapter import browser, compat
from scrapy_rep.adapter.fetch import BodyGuard
from scrapy_rep.adapter.middleware import RobotsMiddleware
from scrapy_rep.adapter.page import PageDirectivesMiddleware
from scrapy_rep.runtime.settings import SETTINGS

#: Scrapy's built-in RobotsTxtMiddleware priority (DOWNLOADER_MIDDLEWARES_BASE)
BUILTIN_PRIORITY = 100
#: between HttpCompressionMiddleware (590) and the downloader: sees raw bodies
BODY_GUARD_PRIORITY = 595
#: spider side of DepthMiddleware (900): sees what the callback yields first, so
#: requests a page's directives drop are not counted, measured or given a referer
#: by the built-in spider middlewares; inside MetaCopyDetectionMiddleware (1000)
PAGE_DIRECTIVES_PRIORITY = 950


def _builtin_priority(settings: Any) -> int:
    """Where the built-in middleware is configured; the user's setting wins."""
    for name in ("DOWNLOADER_MIDDLEWARES", "DOWNLOADER_MIDDLEWARES_BASE"):
        for component, priority in settings.getdict(name).items():
            if priority is not None and load_object(component) is RobotsTxtMiddleware:
                return int(priority)
    return BUILTIN_PRIORITY


class Addon:
    """Swaps Scrapy's RobotsTxtMiddleware for scrapy-rep's, at the same priority.

    Defaults go in at add-on priority, so project and spider settings win.
    """

    def update_settings(self, settings: Any) -> None:
        priority = _builtin_priority(settings)
        put = settings.set_in_component_priority_dict
        compat.disable_component(settings, "DOWNLOADER_MIDDLEWARES", RobotsTxtMiddleware)
        put("DOWNLOADER_MIDDLEWARES", RobotsMiddleware, priority)
        put("DOWNLOADER_MIDDLEWARES", BodyGuard, BODY_GUARD_PRIORITY)
        put("SPIDER_MIDDLEWARES", PageDirectivesMiddleware, PAGE_DIRECTIVES_PRIORITY)
        for row in SETTINGS:
            if row.default is not None:
                settings.set(row.name, row.default, priority="addon")
        if browser.wanted(settings):  # scrapy-playwright installed, configured, guard on
            browser.configure(settings)

"""``ADDONS = {"scrapy_rep.Addon": 100}``: the one line that switches scrapy-rep on."""

from __future__ import annotations

import logging
from typing import Any

from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.settings import SETTINGS_PRIORITIES
from scrapy.utils.misc import load_object

from scrapy_rep.components.page import PageDirectivesMiddleware
from scrapy_rep.components.robots import RobotsMiddleware
from scrapy_rep.crawl import compat, parts
from scrapy_rep.integrations import wiring
from scrapy_rep.runtime.settings import SETTINGS, is_enabled, read_spidermon

logger = logging.getLogger(__name__)

#: Scrapy's built-in RobotsTxtMiddleware priority (DOWNLOADER_MIDDLEWARES_BASE)
BUILTIN_PRIORITY = 100
#: media pipelines' downloads (no callback), answered for the declared uses: outside
#: RetryMiddleware (550) and RedirectMiddleware (600), so it reads the final response
MEDIA_USES_PRIORITY = 540
#: on the engine side of the page directives middleware: marks only the items it keeps
#: (installed only when REP_ITEM_PROVENANCE is set)
ITEM_PROVENANCE_PRIORITY = 940
#: the optional components, by import path: a crawl that leaves them off never imports them
MEDIA_USES = "scrapy_rep.components.media.MediaUsesMiddleware"
ITEM_PROVENANCE = "scrapy_rep.components.provenance.ItemProvenanceMiddleware"


def _builtin_priority(settings: Any) -> int:
    """Where the built-in middleware is configured; the user's setting wins."""
    for name in ("DOWNLOADER_MIDDLEWARES", "DOWNLOADER_MIDDLEWARES_BASE"):
        for component, priority in settings.getdict(name).items():
            if priority is not None and load_object(component) is RobotsTxtMiddleware:
                return int(priority)
    return BUILTIN_PRIORITY


#: who set a setting, by its priority: a user, not Scrapy's or a command's default
_SET_BY = {
    SETTINGS_PRIORITIES["project"]: "the project's settings",
    SETTINGS_PRIORITIES["spider"]: "the spider's custom_settings",
    SETTINGS_PRIORITIES["cmdline"]: "the command line (-s)",
}


def _say_obey_off_is_ignored(settings: Any) -> None:
    """Say once that an explicit ``ROBOTSTXT_OBEY = False`` is ignored: set up by hand the
    docs ask for it (the built-in off), and projects keep it; ``REP_ENABLED`` is the switch."""
    priority = settings.getpriority("ROBOTSTXT_OBEY")
    if priority is None or priority < SETTINGS_PRIORITIES["project"]:
        return
    if settings.getbool("ROBOTSTXT_OBEY") or not is_enabled(settings.get):
        return
    logger.warning(
        "scrapy-rep: ROBOTSTXT_OBEY = False (set by %(who)s) is ignored: robots.txt is still "
        "obeyed; to crawl without robots.txt set REP_ENABLED = False (or, per request, "
        "meta dont_obey_robotstxt = True)",
        {"who": _SET_BY.get(priority, f"settings priority {priority}")},
    )


class Addon:
    """Swaps Scrapy's RobotsTxtMiddleware for scrapy-rep's, at the same priority; defaults go
    in at add-on priority, so project and spider settings win."""

    def update_settings(self, settings: Any) -> None:
        _say_obey_off_is_ignored(settings)
        priority = _builtin_priority(settings)
        put = settings.set_in_component_priority_dict
        compat.disable_component(settings, "DOWNLOADER_MIDDLEWARES", RobotsTxtMiddleware)
        put("DOWNLOADER_MIDDLEWARES", RobotsMiddleware, priority)
        for part in parts.EVERY_PART:  # each optional one only when its setting asks for it
            if part.wanted(settings):
                put(part.setting, load_object(part.path), part.priority)
        if settings.get("REP_USES"):  # what answers uses loads only when one is declared
            put("SPIDER_MIDDLEWARES", PageDirectivesMiddleware, None)  # PageUses in its place
            put("DOWNLOADER_MIDDLEWARES", MEDIA_USES, MEDIA_USES_PRIORITY)
        if settings.get("REP_ITEM_PROVENANCE"):  # only when asked: nothing of it loads when off
            put("SPIDER_MIDDLEWARES", ITEM_PROVENANCE, ITEM_PROVENANCE_PRIORITY)
        for row in SETTINGS:
            if row.default is not None:
                settings.set(row.name, row.default, priority="addon")
        if read_spidermon("REP_SPIDERMON", settings.get("REP_SPIDERMON"), settings.get):
            wiring.enable_spidermon(settings)
        if wiring.browser_wanted(settings):  # scrapy-playwright installed, configured, guard on
            wiring.enable_browser_guard(settings)

"""``ADDONS = {"scrapy_rep.Addon": 100}``: the one line that switches scrapy-rep on."""

from __future__ import annotations

import logging
from typing import Any

from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.settings import SETTINGS_PRIORITIES
from scrapy.utils.misc import load_object

from scrapy_rep.components.body_guard import BodyGuard
from scrapy_rep.components.identity import IDENTITY_PRIORITY, IdentityGuard
from scrapy_rep.components.page import PageDirectivesMiddleware
from scrapy_rep.components.pushback import PUSHBACK_PRIORITY, PushbackMiddleware
from scrapy_rep.components.robots import RobotsMiddleware
from scrapy_rep.crawl import compat, parts
from scrapy_rep.integrations import wiring
from scrapy_rep.runtime.settings import (
    SETTINGS,
    is_enabled,
    read_spidermon,
)

logger = logging.getLogger(__name__)

#: Scrapy's built-in RobotsTxtMiddleware priority (DOWNLOADER_MIDDLEWARES_BASE)
BUILTIN_PRIORITY = 100
#: between HttpCompressionMiddleware (590) and the downloader: sees raw bodies
BODY_GUARD_PRIORITY = 595
#: spider side of DepthMiddleware (900): sees what the callback yields first, so
#: requests a page's directives drop are not counted, measured or given a referer
#: by the built-in spider middlewares; inside MetaCopyDetectionMiddleware (1000)
PAGE_DIRECTIVES_PRIORITY = 950
#: media pipelines' downloads (no callback), answered for the declared uses: outside
#: RetryMiddleware (550) and RedirectMiddleware (600), so it reads the final response
MEDIA_USES_PRIORITY = 540
#: on the engine side of the page directives middleware: marks only the items it keeps
#: (installed only when REP_ITEM_PROVENANCE is set)
ITEM_PROVENANCE_PRIORITY = 940
#: the optional components, by import path: a crawl that leaves them off never imports them
MEDIA_USES = "scrapy_rep.components.media.MediaUsesMiddleware"
#: the page middleware that also answers the declared uses (and installs TDMRep), in place of
#: PageDirectivesMiddleware when REP_USES declares a use
PAGE_USES = "scrapy_rep.components.page_uses.PageUsesMiddleware"
ITEM_PROVENANCE = "scrapy_rep.components.provenance.ItemProvenanceMiddleware"
HTML_REPORT = parts.HTML_REPORT_PART[1]
#: the audit log's writer and the policy archive: only with REP_DECISION_LOG or
#: REP_POLICY_ARCHIVE
AUDIT_LOG = parts.AUDIT_LOG_PART[1]
#: held requests handed over at close (JOBDIR, a shared scrapy-redis queue): only then
HANDOVER = parts.HANDOVER_PART[1]
#: the application's scope hook on the admission path: only with REP_COLLECTION_POLICY
COLLECTION = parts.COLLECTION_PART[1]
#: a page's pause shared through the store: only with a store beyond memory
SHARED_PAUSES = parts.SHARED_PAUSES_PART[1]
#: any place among the extensions: they only fill the graph's slots as the crawler is made
SLOT_PRIORITY = 500
#: any place among the extensions: it acts at engine_stopped, after the sink's close
HTML_REPORT_PRIORITY = 500


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
    """An explicit ``ROBOTSTXT_OBEY = False`` does not switch scrapy-rep off: say so, once.

    Not honoured: without the add-on the docs ask for exactly that setting (so the
    built-in stays off beside scrapy-rep's middleware), and a project keeps it
    after moving to the add-on; switching robots.txt off takes ``REP_ENABLED``.
    Scrapy's own default ``False`` (no template line) says nothing.
    """
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
    """Swaps Scrapy's RobotsTxtMiddleware for scrapy-rep's, at the same priority.

    Defaults go in at add-on priority, so project and spider settings win.
    """

    def update_settings(self, settings: Any) -> None:
        _say_obey_off_is_ignored(settings)
        priority = _builtin_priority(settings)
        put = settings.set_in_component_priority_dict
        compat.disable_component(settings, "DOWNLOADER_MIDDLEWARES", RobotsTxtMiddleware)
        put("DOWNLOADER_MIDDLEWARES", RobotsMiddleware, priority)
        put("DOWNLOADER_MIDDLEWARES", BodyGuard, BODY_GUARD_PRIORITY)
        uses = bool(settings.get("REP_USES"))  # what answers uses loads only when one is declared
        if uses:
            put("DOWNLOADER_MIDDLEWARES", MEDIA_USES, MEDIA_USES_PRIORITY)
        put("DOWNLOADER_MIDDLEWARES", IdentityGuard, IDENTITY_PRIORITY)  # after every other
        put("DOWNLOADER_MIDDLEWARES", PushbackMiddleware, PUSHBACK_PRIORITY)
        if uses:  # the page middleware that answers uses too, in place of the plain one
            put("SPIDER_MIDDLEWARES", PageDirectivesMiddleware, None)
            put("SPIDER_MIDDLEWARES", PAGE_USES, PAGE_DIRECTIVES_PRIORITY)
        else:
            put("SPIDER_MIDDLEWARES", PageDirectivesMiddleware, PAGE_DIRECTIVES_PRIORITY)
        if settings.get("REP_ITEM_PROVENANCE"):  # only when asked: nothing of it loads when off
            put("SPIDER_MIDDLEWARES", ITEM_PROVENANCE, ITEM_PROVENANCE_PRIORITY)
        if parts.handover_wanted(settings):  # a JOBDIR or a shared queue to hand held ones to
            put("EXTENSIONS", HANDOVER, SLOT_PRIORITY)
        if settings.get("REP_COLLECTION_POLICY"):
            put("EXTENSIONS", COLLECTION, SLOT_PRIORITY)
        if parts.shared_store_wanted(settings):  # Redis, SQLite: pauses shared or kept
            put("EXTENSIONS", SHARED_PAUSES, SLOT_PRIORITY)
        if parts.audit_log_wanted(settings):  # before the sink is made: it fills it then
            put("EXTENSIONS", AUDIT_LOG, SLOT_PRIORITY)
        if parts.html_report_wanted(settings):
            put("EXTENSIONS", HTML_REPORT, HTML_REPORT_PRIORITY)
        for row in SETTINGS:
            if row.default is not None:
                settings.set(row.name, row.default, priority="addon")
        if read_spidermon("REP_SPIDERMON", settings.get("REP_SPIDERMON"), settings.get):
            wiring.enable_spidermon(settings)
        if wiring.browser_wanted(settings):  # scrapy-playwright installed, configured, guard on
            wiring.enable_browser_guard(settings)

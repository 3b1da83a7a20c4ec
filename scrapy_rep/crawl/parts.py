"""What the add-on installs beside ``RobotsMiddleware``, and what a crawl set up by hand
lacks without each. Named by import path: the components import the service, not back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from scrapy.utils.conf import build_component_list
from scrapy.utils.misc import load_object

from scrapy_rep.runtime.settings import SettingError, read_report


class Part(NamedTuple):
    """A component the add-on installs beside ``RobotsMiddleware`` when :attr:`wanted` says
    so; a crawl set up by hand is told what it ``lacks`` without it."""

    setting: str
    path: str
    lacks: str
    priority: int
    wanted: Callable[[Any], bool] = lambda settings: True


#: ``process_response`` before MetaRefreshMiddleware (580) follows a wall's (or a 429's)
#: meta refresh, before HttpCompressionMiddleware inflates its body, and before
#: RetryMiddleware (550) and the spider; after a redirect is followed
PUSHBACK_PRIORITY = 597
#: after every downloader middleware Scrapy ships (the highest is 900) or a project is
#: likely to set: the last ``process_request``, the first ``process_response``
IDENTITY_PRIORITY = 1_000_000
#: spider side of DepthMiddleware (900): sees what the callback yields first, so
#: requests a page's directives drop are not counted, measured or given a referer
#: by the built-in spider middlewares; inside MetaCopyDetectionMiddleware (1000)
PAGE_DIRECTIVES_PRIORITY = 950
#: any place among the extensions: they only fill the graph's slots as the crawler is made
#: (the HTML report's acts at engine_stopped, after the sink's close)
EXTENSION_PRIORITY = 500
#: Scrapy's own scheduler, which no other worker shares
DEFAULT_SCHEDULER = "scrapy.core.scheduler.Scheduler"


def handover_wanted(settings: Any) -> bool:
    """Whether held requests may go somewhere at close: a ``JOBDIR``, or a scheduler other
    than Scrapy's own (scrapy-redis's shared queue; the handover asks which it is)."""
    if settings.get("JOBDIR"):
        return True
    scheduler = settings.get("SCHEDULER") or DEFAULT_SCHEDULER
    if isinstance(scheduler, type):
        scheduler = f"{scheduler.__module__}.{scheduler.__qualname__}"
    return scheduler != DEFAULT_SCHEDULER


def shared_store_wanted(settings: Any) -> bool:
    """Whether ``REP_STORE`` may keep a page's pause beyond this crawl: Redis, SQLite, or
    ``auto`` with a ``JOBDIR`` (the store itself says, at start-up, what it cannot use)."""
    store = str(settings.get("REP_STORE") or "auto").strip().lower()
    return store not in ("auto", "memory") or bool(settings.get("JOBDIR"))


def audit_log_wanted(settings: Any) -> bool:
    """Whether ``REP_DECISION_LOG`` or ``REP_POLICY_ARCHIVE`` names a file to write (a bad
    value is said at start-up, by the crawl)."""
    return bool(settings.get("REP_DECISION_LOG") or settings.get("REP_POLICY_ARCHIVE"))


def html_report_wanted(settings: Any) -> bool:
    """Whether ``REP_REPORT`` names an HTML page (a bad value is said at start-up)."""
    try:
        return isinstance(read_report("REP_REPORT", settings.get("REP_REPORT"), settings.get), str)
    except SettingError:
        return False


#: every part, in the order the add-on puts them: the first four always, each other one
#: when its setting asks (loading one loads its machinery)
EVERY_PART: tuple[Part, ...] = (
    Part(
        "DOWNLOADER_MIDDLEWARES",
        "scrapy_rep.components.pushback.PushbackMiddleware",
        "page pauses (a page's 429/503 is retried by RetryMiddleware and given up instead of "
        "pausing its origin) and licence walls (a 402 or a 401 License is retried, its items "
        "produced)",
        PUSHBACK_PRIORITY,
    ),
    Part(
        "DOWNLOADER_MIDDLEWARES",
        "scrapy_rep.components.identity.IdentityGuard",
        "the identity check (no token-missing or identity-changed drops)",
        IDENTITY_PRIORITY,
    ),
    Part(  # between HttpCompressionMiddleware (590) and the downloader: sees raw bodies
        "DOWNLOADER_MIDDLEWARES",
        "scrapy_rep.components.body_guard.BodyGuard",
        "the robots.txt body cap (a compressed robots.txt is inflated up to DOWNLOAD_MAXSIZE)",
        595,
    ),
    Part(
        "SPIDER_MIDDLEWARES",
        "scrapy_rep.components.page.PageDirectivesMiddleware",
        "page directives (noindex items and nofollow links are kept)",
        PAGE_DIRECTIVES_PRIORITY,
    ),
    Part(  # in the plain page middleware's place (a subclass of it)
        "SPIDER_MIDDLEWARES",
        "scrapy_rep.components.page_uses.PageUsesMiddleware",
        "use answers (no response answered for the declared uses, no tdmrep.json fetched)",
        PAGE_DIRECTIVES_PRIORITY,
        lambda settings: bool(settings.get("REP_USES")),
    ),
    Part(
        "EXTENSIONS",
        "scrapy_rep.components.handover.HeldHandover",
        "the handover of held requests (those still held at close are dropped instead of kept "
        "in the JOBDIR or pushed back into the shared queue)",
        EXTENSION_PRIORITY,
        handover_wanted,
    ),
    Part(
        "EXTENSIONS",
        "scrapy_rep.components.collection.CollectionPolicy",
        "the collection hook (REP_COLLECTION_POLICY is never asked: every request is approved)",
        EXTENSION_PRIORITY,
        lambda settings: bool(settings.get("REP_COLLECTION_POLICY")),
    ),
    Part(
        "EXTENSIONS",
        "scrapy_rep.components.shared_pauses.SharedPauseStore",
        "shared page pauses (a page's pause is neither told to the cluster nor kept for the "
        "next run)",
        EXTENSION_PRIORITY,
        shared_store_wanted,
    ),
    Part(
        "EXTENSIONS",
        "scrapy_rep.components.audit_log.AuditLogFiles",
        "the audit log and the policy archive (REP_DECISION_LOG and REP_POLICY_ARCHIVE are "
        "never written, nor the HTML report made from the log)",
        EXTENSION_PRIORITY,
        audit_log_wanted,
    ),
    Part(
        "EXTENSIONS",
        "scrapy_rep.components.html_report.HtmlReport",
        "the HTML report (the page REP_REPORT names is not written; the log summary still is)",
        EXTENSION_PRIORITY,
        html_report_wanted,
    ),
)


def missing(settings: Any) -> list[Part]:
    """The parts the crawl's settings do not enable, as Scrapy reads them (a priority of
    None disables one); a subclass of a part stands for it."""
    wanted = [part for part in EVERY_PART if part.wanted(settings)]
    enabled: dict[str, set[Any]] = {}
    for setting in {part.setting for part in wanted}:
        try:
            listed = build_component_list(settings.getwithbase(setting))
        except ValueError:  # Scrapy refuses these settings itself, at once
            listed = []
        enabled[setting] = {_loaded(component) for component in listed}
    return [part for part in wanted if not _among(_loaded(part.path), enabled[part.setting])]


def _among(part: Any, enabled: set[Any]) -> bool:
    return part in enabled or (
        isinstance(part, type) and any(isinstance(e, type) and issubclass(e, part) for e in enabled)
    )


def _loaded(component: Any) -> Any:
    try:
        return load_object(component) if isinstance(component, str) else component
    except (ImportError, AttributeError, ValueError, NameError):
        return component

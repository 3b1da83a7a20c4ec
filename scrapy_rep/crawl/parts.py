"""What the add-on installs beside ``RobotsMiddleware``, and what a crawl set up by hand
lacks without each. Named by import path: the components import the service, not back.
"""

from __future__ import annotations

from typing import Any

from scrapy.utils.conf import build_component_list
from scrapy.utils.misc import load_object

from scrapy_rep.runtime.settings import SettingError, read_report

#: (setting, component, what a crawl without it lacks), as ``Addon.update_settings`` puts them
PARTS: tuple[tuple[str, str, str], ...] = (
    (
        "DOWNLOADER_MIDDLEWARES",
        "scrapy_rep.components.pushback.PushbackMiddleware",
        "page pauses (a page's 429/503 is retried by RetryMiddleware and given up instead of "
        "pausing its origin) and licence walls (a 402 or a 401 License is retried, its items "
        "produced)",
    ),
    (
        "DOWNLOADER_MIDDLEWARES",
        "scrapy_rep.components.identity.IdentityGuard",
        "the identity check (no token-missing or identity-changed drops)",
    ),
    (
        "DOWNLOADER_MIDDLEWARES",
        "scrapy_rep.components.body_guard.BodyGuard",
        "the robots.txt body cap (a compressed robots.txt is inflated up to DOWNLOAD_MAXSIZE)",
    ),
    (
        "SPIDER_MIDDLEWARES",
        "scrapy_rep.components.page.PageDirectivesMiddleware",
        "page directives (noindex items and nofollow links are kept)",
    ),
)


#: the part a crawl declaring uses (``REP_USES``) needs besides: checked only then (loading
#: it loads the use machinery)
USES_PART = (
    "SPIDER_MIDDLEWARES",
    "scrapy_rep.components.page_uses.PageUsesMiddleware",
    "use answers (no response answered for the declared uses, no tdmrep.json fetched)",
)


#: the part a crawl with somewhere to hand held requests over (:func:`handover_wanted`) needs
#: besides: checked only then (loading it loads the JOBDIR and scrapy-redis machinery)
HANDOVER_PART = (
    "EXTENSIONS",
    "scrapy_rep.components.handover.HeldHandover",
    "the handover of held requests (those still held at close are dropped instead of kept "
    "in the JOBDIR or pushed back into the shared queue)",
)

#: the part a crawl naming a scope hook (``REP_COLLECTION_POLICY``) needs besides: checked
#: only then
COLLECTION_PART = (
    "EXTENSIONS",
    "scrapy_rep.components.collection.CollectionPolicy",
    "the collection hook (REP_COLLECTION_POLICY is never asked: every request is approved)",
)

#: the part a crawl with a store beyond memory (:func:`shared_store_wanted`) needs besides:
#: checked only then
SHARED_PAUSES_PART = (
    "EXTENSIONS",
    "scrapy_rep.components.shared_pauses.SharedPauseStore",
    "shared page pauses (a page's pause is neither told to the cluster nor kept for the next run)",
)

#: the part a crawl whose ``REP_REPORT`` names an HTML page (:func:`html_report_wanted`) needs
#: besides: checked only then (loading it loads the report)
HTML_REPORT_PART = (
    "EXTENSIONS",
    "scrapy_rep.components.html_report.HtmlReport",
    "the HTML report (the page REP_REPORT names is not written; the log summary still is)",
)

#: the part a crawl keeping an audit log or a policy archive (:func:`audit_log_wanted`) needs
#: besides: checked only then (loading it loads the log's writer)
AUDIT_LOG_PART = (
    "EXTENSIONS",
    "scrapy_rep.components.audit_log.AuditLogFiles",
    "the audit log and the policy archive (REP_DECISION_LOG and REP_POLICY_ARCHIVE are "
    "never written, nor the HTML report made from the log)",
)

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
    """Whether ``REP_REPORT`` names an HTML page (a bad value is said at start-up, by the
    crawl)."""
    try:
        return isinstance(read_report("REP_REPORT", settings.get("REP_REPORT"), settings.get), str)
    except SettingError:
        return False


def missing(settings: Any) -> list[tuple[str, str, str]]:
    """The parts the crawl's settings do not enable, as Scrapy reads them (a priority of
    None disables one); a subclass of a part stands for it."""
    wanted = [*PARTS, USES_PART] if settings.get("REP_USES") else list(PARTS)
    if handover_wanted(settings):
        wanted.append(HANDOVER_PART)
    if settings.get("REP_COLLECTION_POLICY"):
        wanted.append(COLLECTION_PART)
    if shared_store_wanted(settings):
        wanted.append(SHARED_PAUSES_PART)
    if audit_log_wanted(settings):
        wanted.append(AUDIT_LOG_PART)
    if html_report_wanted(settings):
        wanted.append(HTML_REPORT_PART)
    enabled: dict[str, set[Any]] = {}
    for setting in {part[0] for part in wanted}:
        try:
            listed = build_component_list(settings.getwithbase(setting))
        except ValueError:  # Scrapy refuses these settings itself, at once
            listed = []
        enabled[setting] = {_loaded(component) for component in listed}
    return [part for part in wanted if not _among(_loaded(part[1]), enabled[part[0]])]


def _among(part: Any, enabled: set[Any]) -> bool:
    if part in enabled:
        return True
    return isinstance(part, type) and any(
        isinstance(each, type) and issubclass(each, part) for each in enabled
    )


def _loaded(component: Any) -> Any:
    try:
        return load_object(component) if isinstance(component, str) else component
    except (ImportError, AttributeError, ValueError, NameError):
        return component

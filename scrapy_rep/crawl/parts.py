"""What the add-on installs beside ``RobotsMiddleware``, and what a crawl set up by hand
(``RobotsMiddleware`` in ``DOWNLOADER_MIDDLEWARES``, no ``ADDONS`` line) lacks without each.

The components are named by their import paths (nothing here imports them: the service
asks at start-up, and they import the service). ``tests/test_addon_parts.py`` keeps
this table and the add-on's in step.
"""

from __future__ import annotations

from typing import Any

from scrapy.utils.conf import build_component_list
from scrapy.utils.misc import load_object

#: (setting, component, what a crawl without it lacks), as ``Addon.update_settings`` puts them
PARTS: tuple[tuple[str, str, str], ...] = (
    (
        "DOWNLOADER_MIDDLEWARES",
        "scrapy_rep.components.pushback.PushbackMiddleware",
        "page pauses (a page's 429/503 is retried by RetryMiddleware and given up instead of "
        "pausing its origin)",
    ),
    (
        "DOWNLOADER_MIDDLEWARES",
        "scrapy_rep.components.identity.IdentityGuard",
        "the identity check (no token-missing or identity-changed drops)",
    ),
    (
        "DOWNLOADER_MIDDLEWARES",
        "scrapy_rep.components.body_guard.BodyGuard",
        "licence walls (a 402 or a 401 License is retried, its items produced)",
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


def missing(settings: Any) -> list[tuple[str, str, str]]:
    """The parts the crawl's settings do not enable, as Scrapy reads them (a priority of
    None disables one); a subclass of a part stands for it."""
    wanted = [*PARTS, USES_PART] if settings.get("REP_USES") else list(PARTS)
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

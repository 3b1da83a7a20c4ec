"""What the add-on installs for an optional integration, decided from the settings and
the installed packages alone: an integration module is imported only once it is on."""

from __future__ import annotations

import importlib.util
from typing import Any

from scrapy.utils.misc import load_object

from scrapy_rep.runtime.settings import RepSettings, SettingError

#: scrapy-playwright's download handler
HANDLER = "scrapy_playwright.handler.ScrapyPlaywrightDownloadHandler"
#: the browser guard, by import path
BROWSER_GUARD = "scrapy_rep.integrations.browser.BrowserGuard"
#: on the downloader side of everything that may retry or cache: its
#: process_exception turns a render failed by a disallowed redirect into a drop first
BROWSER_GUARD_PRIORITY = 950


def browser_wanted(settings: Any) -> bool:
    """The guard is switched on (``REP_BROWSER_GUARD``), scrapy-playwright installed and its
    download handler in ``DOWNLOAD_HANDLERS`` (by path or class)."""
    if not RepSettings.browser_guard.value(settings.get):
        return False
    if importlib.util.find_spec("scrapy_playwright") is None:
        return False
    for handler in settings.getdict("DOWNLOAD_HANDLERS").values():
        if handler is None:
            continue
        if isinstance(handler, str):
            if handler == HANDLER:
                return True
            try:
                handler = load_object(handler)
            except (ImportError, ValueError, NameError):
                continue
        if isinstance(handler, type) and issubclass(handler, load_object(HANDLER)):
            return True
    return False


def enable_browser_guard(settings: Any) -> None:
    """The guard middleware, and service workers blocked in named contexts."""
    put = settings.set_in_component_priority_dict
    put("DOWNLOADER_MIDDLEWARES", BROWSER_GUARD, BROWSER_GUARD_PRIORITY)
    contexts = settings.getdict("PLAYWRIGHT_CONTEXTS")
    if contexts:
        blocked = {
            name: {"service_workers": "block", **(kwargs or {})}
            for name, kwargs in contexts.items()
        }
        priority = settings.getpriority("PLAYWRIGHT_CONTEXTS") or 0
        settings.set("PLAYWRIGHT_CONTEXTS", blocked, priority=priority)


def enable_spidermon(settings: Any) -> None:
    """``REP_SPIDERMON``: Spidermon on, scrapy-rep's suite run when the engine stops."""
    if importlib.util.find_spec("spidermon") is None:
        raise SettingError("REP_SPIDERMON needs Spidermon: pip install 'scrapy-rep[spidermon]'")
    from scrapy_rep.integrations.monitors import enable  # spidermon is an optional dependency

    enable(settings)

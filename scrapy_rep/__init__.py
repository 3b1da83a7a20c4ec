"""scrapy-rep: RFC 9309 robots.txt for Scrapy — correct, safe, fast, and it says why.

Everything a user imports is named here (``docs/reference.md``); the Scrapy parts load
only when asked for, so the engine and the CLI start fast.
"""

from importlib import import_module
from typing import Any

from scrapy_rep.robotstxt import (
    InvalidProductToken,
    RobotsTxt,
    Rule,
    Verdict,
    parse,
)

__all__ = [
    "Addon",
    "BrowserGuard",
    "FilesPipeline",
    "ImagesPipeline",
    "InvalidProductToken",
    "PageDirectivesMiddleware",
    "RepIgnoreRequest",
    "RobotsMiddleware",
    "RobotsTxt",
    "Rule",
    "Verdict",
    "parse",
    "signals",
]
__version__ = "0.2.0"

#: public name -> the module that defines it (imported on first use)
_LAZY = {
    "Addon": "scrapy_rep.addon",
    "BrowserGuard": "scrapy_rep.integrations.browser",
    "FilesPipeline": "scrapy_rep.components.media_provenance",
    "ImagesPipeline": "scrapy_rep.components.media_provenance",
    "PageDirectivesMiddleware": "scrapy_rep.components.page",
    "RepIgnoreRequest": "scrapy_rep.crawl.exceptions",
    "RobotsMiddleware": "scrapy_rep.components.robots",
    "signals": "scrapy_rep.signals",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'scrapy_rep' has no attribute {name!r}")
    module = import_module(_LAZY[name])
    return module if name == "signals" else getattr(module, name)


def __dir__() -> list[str]:
    return sorted(__all__)

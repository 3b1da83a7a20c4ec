"""scrapy-rep: RFC 9309 robots.txt for Scrapy — correct, safe, fast, and it says why."""

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
    "InvalidProductToken",
    "RobotsMiddleware",
    "RobotsTxt",
    "Rule",
    "Verdict",
    "parse",
]
__version__ = "0.2.0"


def __getattr__(name: str) -> Any:
    # Scrapy is imported only when the Scrapy parts are asked for, so the
    # engine and the CLI start fast.
    if name == "Addon":
        from scrapy_rep.addon import Addon

        return Addon
    if name == "RobotsMiddleware":
        from scrapy_rep.adapter.middleware import RobotsMiddleware

        return RobotsMiddleware
    raise AttributeError(name)

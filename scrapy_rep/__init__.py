"""scrapy-rep: RFC 9309 robots.txt for Scrapy — correct, safe, fast, and it says why."""

from scrapy_rep.robotstxt import (
    InvalidProductToken,
    RobotsTxt,
    Rule,
    Verdict,
    parse,
)

__all__ = ["InvalidProductToken", "RobotsTxt", "Rule", "Verdict", "parse"]
__version__ = "0.1.0"

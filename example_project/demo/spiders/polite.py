"""``scrapy crawl polite``: the same tour under another product token."""

from __future__ import annotations

from demo.spiders.tour import TourSpider


class PoliteSpider(TourSpider):
    name = "polite"
    # Per-spider token: robots.txt groups for politebot (or `*`) apply, not demobot's.
    custom_settings = {  # noqa: RUF012
        "REP_PRODUCT_TOKEN": "politebot",
        "USER_AGENT": "politebot/1.0 (+http://127.0.0.1/politebot.html)",
    }

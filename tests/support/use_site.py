"""A loopback site that says what its content may be used for, in every way sites say it.

Two origins on :class:`~tests.support.fakesite.FakeSite`:

- ``shop``: Cloudflare's managed robots.txt (its comment block, then
  ``Content-Signal: search=yes, ai-train=no`` in ``User-Agent: *``): every
  page refuses ``train-ai`` before it is fetched;
- ``press``: a robots.txt allowing everything with ``ai-train=yes``, a
  ``/.well-known/tdmrep.json`` reserving ``/articles/*`` (``/articles/open/*``
  not), and pages that refuse in their response: ``Content-Usage`` and
  ``Content-Signal`` headers, ``noai`` in ``X-Robots-Tag`` and in
  ``<meta name="robots">``, a
  ``<meta name="tdm-reservation">``; one reserved article whose
  ``tdm-reservation: 0`` header lifts the file's reservation.

Each page's index links to every other page; :data:`PRESS_PAGES` says what
each one answers for ``train-ai``, and where that is known.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from tests.support.fakesite import FakeSite, Origin, Reply

CLOUDFLARE_ROBOTS = b"""\
# As a condition of accessing this website, you agree to abide by the following content signals:
# (a) If a content-signal = yes, you may collect content for the corresponding use.
# (b) If a content-signal = no, you may not collect content for the corresponding use.
# (c) If the website operator does not include a content signal for a corresponding use, the
#     website operator neither grants nor restricts permission via content signal with respect
#     to the corresponding use.
# The content signals and their meanings are:
# search: building a search index and providing search results.
# ai-input: inputting content into one or more AI models.
# ai-train: training or fine-tuning AI models.
User-Agent: *
Content-signal: search=yes, ai-train=no
Allow: /

User-agent: GPTBot
Disallow: /
"""

PRESS_ROBOTS = b"""\
User-agent: *
Content-Signal: search=yes, ai-train=yes
Allow: /
"""

TDMREP = json.dumps(
    [
        {
            "location": "/articles/*",
            "tdm-reservation": 1,
            "tdm-policy": "https://press.example/tdm-policy.json",
        },
        {"location": "/articles/open/*", "tdm-reservation": 0},
    ]
).encode()

#: request time: refused before fetching (under "drop" never downloaded)
BEFORE = "before"
#: response time: refused by what the response says (under "drop" its items are dropped)
AFTER = "after"
ALLOWED = "allowed"

#: press path -> (train-ai under "record", when a refusal is known, headers, <head> extra)
PRESS_PAGES: dict[str, tuple[str, str, dict[str, str], str]] = {
    "/blog/plain": ("allowed", ALLOWED, {}, ""),
    "/blog/content-usage": ("refused", AFTER, {"Content-Usage": "train-ai=n, search=y"}, ""),
    "/blog/content-signal": ("refused", AFTER, {"Content-Signal": "ai-train=no, search=yes"}, ""),
    "/blog/header-noai": ("refused", AFTER, {"X-Robots-Tag": "testbot: noai"}, ""),
    "/blog/meta-noai": ("refused", AFTER, {}, '<meta name="robots" content="noai, noimageai">'),
    "/blog/meta-tdm": ("refused", AFTER, {}, '<meta name="tdm-reservation" content="1">'),
    "/articles/reserved": ("refused", BEFORE, {}, ""),
    "/articles/lifted": ("allowed", BEFORE, {"tdm-reservation": "0"}, ""),
    "/articles/open/free": ("allowed", ALLOWED, {}, ""),
}
#: shop paths: all refused by Content-Signal before fetching
SHOP_PAGES = ("/", "/catalogue", "/catalogue/item")


def page(title: str, links: list[str], head: str = "") -> bytes:
    anchors = "".join(f'<a href="{url}">{url}</a>' for url in links)
    return (
        f"<!doctype html><html><head><title>{title}</title>{head}</head>"
        f"<body><h1>{title}</h1>{anchors}</body></html>"
    ).encode()


@dataclass
class UseSite:
    shop: Origin
    press: Origin

    @property
    def start_urls(self) -> list[str]:
        return [self.shop.url_for("/"), self.press.url_for("/")]

    def press_url(self, path: str) -> str:
        return self.press.url_for(path)

    def every_page(self) -> set[str]:
        """Every page URL of the site (not robots.txt or tdmrep.json)."""
        return {self.shop.url_for(p) for p in SHOP_PAGES} | {
            self.press.url_for(p) for p in ("/", *PRESS_PAGES)
        }

    def pages_seen(self) -> set[str]:
        """The page URLs the servers were asked for."""
        return {
            origin.url_for(path)
            for origin in (self.shop, self.press)
            for path in origin.hit_paths()
            if path not in ("/robots.txt", "/.well-known/tdmrep.json")
        }


def build(site: FakeSite) -> UseSite:
    """Program the two origins on ``site``."""
    shop = site.add("shop").robots(Reply(body=CLOUDFLARE_ROBOTS))
    for path in SHOP_PAGES:
        others = [p for p in SHOP_PAGES if p != path]
        shop.page(path, _html(page(f"shop {path}", others)))
    press = site.add("press").robots(Reply(body=PRESS_ROBOTS))
    press.page(
        "/.well-known/tdmrep.json",
        Reply(body=TDMREP, headers={"Content-Type": "application/json"}),
    )
    press.page("/", _html(page("press", list(PRESS_PAGES))))
    for path, (_answer, _when, headers, head) in PRESS_PAGES.items():
        press.page(path, _html(page(f"press {path}", [], head), headers))
    return UseSite(shop, press)


def _html(body: bytes, headers: dict[str, str] | None = None) -> Reply:
    return Reply(body=body, headers={"Content-Type": "text/html; charset=utf-8", **(headers or {})})

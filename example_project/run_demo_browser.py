"""``make demo-browser``: one page rendered in Chromium, with the browser guard off and on.

The page (``tests/browsersite.py``) loads, from four loopback origins,
allowed and disallowed images, scripts, stylesheets, a CSS background image,
fonts, iframes (one from an origin whose robots.txt answers 503), fetch and
XHR calls, and redirects from allowed paths to disallowed ones. Each mode
renders it in a fresh process against a fresh site; the table shows what
the site saw. Exits 1 if the guarded render asked for anything robots.txt
disallows, or failed to load what it allows.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def render(guard: bool) -> dict[str, Any]:
    """Render the page once in this process; what the site saw, and the guard's stats."""
    import asyncio

    import scrapy
    from scrapy.crawler import AsyncCrawlerRunner
    from scrapy.utils.reactor import install_reactor
    from scrapy_playwright.page import PageMethod

    install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")
    from twisted.internet import defer, reactor

    from tests.support.browsersite import (
        ALLOWED,
        DISALLOWED,
        PAGE,
        PLAYWRIGHT_SETTINGS,
        build,
        hits,
    )
    from tests.support.crawl import BASE_SETTINGS
    from tests.support.fakesite import FakeSite

    site = FakeSite()
    url = build(site)["main"].url_for(PAGE)
    rendered: list[str] = []
    wait = PageMethod("wait_for_function", "window.__done === true", timeout=15_000)

    class Render(scrapy.Spider):
        name = "render"

        async def start(self) -> Any:
            meta = {"playwright": True, "playwright_page_methods": [wait]}
            yield scrapy.Request(url, meta=meta)

        def parse(self, response: Any) -> None:
            rendered.append(response.url)

    settings = {
        **BASE_SETTINGS,
        **PLAYWRIGHT_SETTINGS,
        "LOG_LEVEL": "ERROR",
        "REP_BROWSER_GUARD": guard,
    }
    runner = AsyncCrawlerRunner(settings)
    crawler = runner.create_crawler(Render)
    stats: dict[str, Any] = {}

    async def go() -> None:
        await runner.crawl(crawler)
        stats.update(crawler.stats.get_stats())

    d = defer.Deferred.fromFuture(asyncio.ensure_future(go()))
    d.addBoth(lambda _: reactor.stop())
    reactor.run()
    site.stop()
    return {
        "rendered": rendered,
        "disallowed": [[o, p, n] for (o, p), n in hits(site, DISALLOWED).items()],
        "allowed": [[o, p, n] for (o, p), n in hits(site, ALLOWED).items()],
        "stats": {k: v for k, v in stats.items() if k.startswith("rep/browser/")},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--child", choices=("on", "off"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(render(args.child == "on")))
        return 0
    runs = {}
    for mode in ("off", "on"):
        out = subprocess.run(
            [sys.executable, __file__, "--child", mode], capture_output=True, text=True, check=True
        )
        runs[mode] = json.loads(out.stdout.strip().splitlines()[-1])
    print("what the site saw (requests), REP_BROWSER_GUARD off | on")
    for kind in ("disallowed", "allowed"):
        print(f"  {kind} by robots.txt:")
        pairs = zip(runs["off"][kind], runs["on"][kind], strict=True)
        for (origin, path, off), (_, _, on) in pairs:
            print(f"    {origin:<7} {path:<26} {off:>3} | {on:>3}")
    for mode in ("off", "on"):
        stats = ", ".join(
            f"{k.split('/', 2)[2]} {v}" for k, v in sorted(runs[mode]["stats"].items())
        )
        print(f"  guard {mode:>3}: page rendered: {bool(runs[mode]['rendered'])}; {stats or '-'}")
    guarded = runs["on"]
    bad = [f"{o}{p}" for o, p, n in guarded["disallowed"] if n]
    missing = [f"{o}{p}" for o, p, n in guarded["allowed"] if not n]
    if bad or missing or not guarded["rendered"]:
        print(f"PROBLEM: fetched {bad}, not loaded {missing}")
        return 1
    print("OK: with the guard, nothing robots.txt disallows was asked for")
    return 0


if __name__ == "__main__":
    sys.exit(main())

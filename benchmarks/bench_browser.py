"""What the browser guard costs per rendered page (scrapy-playwright, Debian's Chromium).

Usage: ``python benchmarks/bench_browser.py [--pages N] [--runs N]``

The same pages are rendered with ``REP_BROWSER_GUARD`` on and off, on
loopback (``tests/support/fakesite.py``): each page loads 13 sub-resources from three
origins (images, scripts, a stylesheet with a background image and a font,
fetch calls), all allowed by robots.txt, so both modes ask the servers for
exactly the same things; the guard judges each one, fetches it through the
route (``route.fetch``) and fulfils it. One page at a time
(``CONCURRENT_REQUESTS = 1``); the time of a page is scrapy-playwright's
``download_latency`` (navigation, load, the page's script done). Each crawl
runs in a fresh subprocess, the modes alternate, and the figures are the
median over every page of every run (the first page of a crawl, which
launches the browser and fetches robots.txt, is left out). The crawler's
CPU time a page (the reactor thread: Scrapy, scrapy-playwright, the guard,
the Playwright client; not Chromium, not the fake site) is less sensitive
to a busy machine than the page times.

Nothing fails on a number.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _site(pages: int) -> tuple[Any, list[str]]:
    from tests.support.fakesite import FakeSite, Reply

    site = FakeSite()
    main, cdn, static = (site.add(n) for n in ("main", "cdn", "static"))
    for origin in (main, cdn, static):
        origin.robots(Reply(body=b"User-agent: *\nDisallow: /private/\n"))
    png = Reply(body=b"\x89PNG\r\n\x1a\n", headers={"Content-Type": "image/png"})
    js = Reply(
        body=b"window.__n = (window.__n || 0) + 1;", headers={"Content-Type": "text/javascript"}
    )
    css = (
        '@font-face { font-family: f; src: url("/f.woff"); }\n'
        'body { background-image: url("/bg.png"); font-family: f; }\n'
    )
    static.page("/site.css", Reply(body=css.encode(), headers={"Content-Type": "text/css"}))
    static.page("/bg.png", png)
    static.page("/f.woff", Reply(body=b"wOFF", headers={"Content-Type": "font/woff"}))
    urls = []
    for n in range(pages):
        for i in range(3):
            main.page(f"/img/{n}-{i}.png", png)
            cdn.page(f"/img/{n}-{i}.png", png)
        main.page(f"/js/{n}.js", js)
        cdn.page(f"/js/{n}.js", js)
        body = f"""<!doctype html><html><head>
<link rel="stylesheet" href="{static.url}/site.css">
<script src="{main.url}/js/{n}.js"></script><script src="{cdn.url}/js/{n}.js"></script>
</head><body><p>page {n}</p>
{"".join(f'<img src="{o.url}/img/{n}-{i}.png">' for o in (main, cdn) for i in range(3))}
<script>
Promise.allSettled([fetch("{cdn.url}/api/{n}", {{mode: "no-cors"}}),
                    fetch("{main.url}/api/{n}")]).then(() => {{ window.__done = true; }});
</script></body></html>"""
        main.page(f"/p/{n}", Reply(body=body.encode()))
        urls.append(main.url_for(f"/p/{n}"))
    return site, urls


def run_one(guard: bool, pages: int) -> dict[str, Any]:
    """One crawl in this process; prints JSON: per-page latencies, sub-requests per page."""
    import asyncio

    import scrapy
    from scrapy.crawler import AsyncCrawlerRunner
    from scrapy.utils.reactor import install_reactor
    from scrapy_playwright.page import PageMethod

    install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")
    from twisted.internet import defer, reactor

    from tests.support.browsersite import PLAYWRIGHT_SETTINGS
    from tests.support.crawl import BASE_SETTINGS

    site, urls = _site(pages)
    latencies: list[float] = []
    wait = PageMethod("wait_for_function", "window.__done === true", timeout=15_000)

    class Bench(scrapy.Spider):
        name = "bench"

        async def start(self) -> Any:
            for url in urls:
                yield scrapy.Request(
                    url, meta={"playwright": True, "playwright_page_methods": [wait]}
                )

        def parse(self, response: Any) -> None:
            latencies.append(response.meta["download_latency"])

    settings = {
        **BASE_SETTINGS,
        **PLAYWRIGHT_SETTINGS,
        "CONCURRENT_REQUESTS": 1,
        "LOG_LEVEL": "ERROR",
        "REP_BROWSER_GUARD": guard,
    }
    runner = AsyncCrawlerRunner(settings)
    crawler = runner.create_crawler(Bench)
    stats: dict[str, Any] = {}

    async def go() -> None:
        await runner.crawl(crawler)
        stats.update(crawler.stats.get_stats())

    d = defer.Deferred.fromFuture(asyncio.ensure_future(go()))
    d.addBoth(lambda _: reactor.stop())
    cpu = time.thread_time()
    reactor.run()
    cpu = time.thread_time() - cpu
    site.stop()
    return {
        "cpu_per_page": cpu / max(1, len(latencies)),
        "latencies": latencies,
        "allowed": stats.get("rep/browser/allowed", 0),
        "requests": stats.get("playwright/request_count", 0),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=30)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--child", choices=("on", "off"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_one(args.child == "on", args.pages)))
        return
    found: dict[str, list[float]] = {"on": [], "off": []}
    cpu: dict[str, list[float]] = {"on": [], "off": []}
    judged = 0
    for run in range(args.runs):
        for mode in ("off", "on") if run % 2 == 0 else ("on", "off"):
            out = subprocess.run(
                [sys.executable, __file__, "--child", mode, "--pages", str(args.pages)],
                capture_output=True,
                text=True,
                check=True,
            )
            result = json.loads(out.stdout.strip().splitlines()[-1])
            found[mode] += result["latencies"][1:]
            cpu[mode].append(result["cpu_per_page"])
            if mode == "on":
                judged = result["allowed"]
            print(
                f"run {run + 1} guard {mode:>3}: {len(result['latencies'])} pages, "
                f"median {statistics.median(result['latencies'][1:]) * 1000:.1f} ms, "
                f"crawler CPU {result['cpu_per_page'] * 1000:.1f} ms a page",
                file=sys.stderr,
            )
    on, off = statistics.median(found["on"]), statistics.median(found["off"])
    per_page = judged / max(1, args.pages)
    print(f"pages rendered per mode: {len(found['on'])} (+1 first page each crawl, left out)")
    print(f"sub-requests judged per page (guard on): {per_page:.1f}")
    print(f"median page time, guard off: {off * 1000:.1f} ms")
    print(f"median page time, guard on:  {on * 1000:.1f} ms")
    cpu_on, cpu_off = statistics.median(cpu["on"]), statistics.median(cpu["off"])
    print(
        f"crawler CPU a page (reactor thread, median of runs): off {cpu_off * 1000:.1f} ms, "
        f"on {cpu_on * 1000:.1f} ms ({(cpu_on - cpu_off) * 1000:+.1f} ms, "
        f"{(cpu_on - cpu_off) * 1000 / max(per_page, 1):+.2f} ms a sub-request)"
    )
    print(
        f"guard cost: {(on - off) * 1000:+.1f} ms a page "
        f"({(on - off) / off * 100:+.0f}%), {(on - off) * 1000 / max(per_page, 1):+.2f} ms "
        "a sub-request"
    )


if __name__ == "__main__":
    main()

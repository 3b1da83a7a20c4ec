"""What page-level directives cost: per page, and on a whole crawl.

Usage: ``python benchmarks/bench_page.py [--pages N] [--runs N] [--no-crawl]``

1. Parse loop: ``page_directives`` on a typical page (a 4 KiB ``<head>``
   with charset, viewport, description, Open Graph tags, stylesheets, an
   inline JSON-LD script; 40 KiB body) that says nothing to robots, on the
   same page with ``<meta name="robots" content="index, follow">`` (the head
   is then parsed with lxml), with ``noindex, nofollow``, and an
   ``X-Robots-Tag`` header alone.
2. Middleware loop: one response through ``PageDirectivesMiddleware``
   (``process_spider_input`` + ``process_spider_output`` of 1 item and 20
   requests) against the same loop without it; then the same response with
   three uses declared (``REP_USES``) against none, on a page that says
   nothing about use and on one with a ``Content-Usage`` header and ``noai``.
3. Crawl: the add-on with ``REP_PAGE_DIRECTIVES`` on and off, on loopback
   (``tests/support/fakesite.py``), typical pages linked in a chain of fan-outs; each
   crawl in a fresh subprocess, alternating, median of ``--runs``. CPU time
   is the reactor thread's alone (the fake site serves from other threads).

Nothing fails on a number.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TOKEN = "benchbot"
USER_AGENT = f"{TOKEN}/1.0 (+http://127.0.0.1/)"


def typical_page(robots_meta: str = "", links: list[str] | None = None) -> bytes:
    head = [
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>Product 1234 — Example Shop</title>",
        '<meta name="description" content="' + "A fine product, well made. " * 6 + '">',
        *(f'<meta property="og:{k}" content="value of {k}">' for k in ("title", "type", "url")),
        *(f'<link rel="stylesheet" href="/static/css/{n}.css">' for n in range(6)),
        '<link rel="canonical" href="https://shop.example/p/1234">',
        '<script type="application/ld+json">'
        + json.dumps({"@type": "Product", "offers": [{"price": i} for i in range(60)]})
        + "</script>",
        *(f'<script src="/static/js/{n}.js" defer></script>' for n in range(5)),
        robots_meta,
    ]
    anchors = "".join(f'<a href="{u}">{u}</a>' for u in links or [f"/p/{i}" for i in range(20)])
    body = "<p>" + "lorem ipsum dolor sit amet " * 50 + "</p>"
    page = (
        f"<!doctype html><html><head>{''.join(head)}</head><body>{anchors}{body * 10}</body></html>"
    )
    return page.encode()


def per_call(fn: Callable[[], Any], seconds: float = 1.0) -> float:
    """Microseconds per call: the best of 9 rounds (the least disturbed on a shared machine)."""
    number, start = 0, time.perf_counter()
    while time.perf_counter() - start < 0.02:
        fn()
        number += 1
    number = max(1, int(number * seconds / 9 / 0.02))
    return min(timeit.repeat(fn, number=number, repeat=9)) / number * 1e6


def parse_loop() -> dict[str, float]:
    from scrapy_rep.core.directives import page_directives

    now = time.time()
    plain = typical_page()
    follow = typical_page('<meta name="robots" content="index, follow">')
    blocked = typical_page('<meta name="robots" content="noindex, nofollow">')
    head_size = plain.index(b"</head>")
    print(f"typical page: {len(plain)} bytes, head {head_size} bytes")
    results = {
        "no directives": per_call(lambda: page_directives(TOKEN, now, body=plain)),
        'meta robots "index, follow"': per_call(lambda: page_directives(TOKEN, now, body=follow)),
        'meta robots "noindex, nofollow"': per_call(
            lambda: page_directives(TOKEN, now, body=blocked)
        ),
        "X-Robots-Tag header only": per_call(
            lambda: page_directives(TOKEN, now, headers=[b"noindex, nofollow"])
        ),
    }
    for name, us in results.items():
        print(f"  page_directives, {name:<32} {us:8.1f} µs")
    return results


def middleware_loop() -> dict[str, float]:
    import scrapy
    from scrapy.http import HtmlResponse
    from scrapy.utils.test import get_crawler

    from scrapy_rep.components.page import PageDirectivesMiddleware

    crawler = get_crawler(
        settings_dict={"USER_AGENT": USER_AGENT, "ADDONS": {"scrapy_rep.Addon": 100}}
    )
    middleware = PageDirectivesMiddleware.from_crawler(crawler)
    body = typical_page()
    request = scrapy.Request("http://127.0.0.1:1/p")
    output = [{"url": request.url}, *(scrapy.Request(f"http://127.0.0.1:1/{i}") for i in range(20))]

    def without() -> None:
        response = HtmlResponse(request.url, body=body, request=request)
        for _ in iter(output):
            pass
        del response

    def with_mw() -> None:
        response = HtmlResponse(request.url, body=body, request=request)
        middleware.process_spider_input(response)
        for _ in middleware.process_spider_output(response, output):
            pass

    results = {"without": per_call(without), "with": per_call(with_mw)}
    extra = results["with"] - results["without"]
    print(
        f"  one response, 1 item + 20 requests: {results['without']:.1f} µs without, "
        f"{results['with']:.1f} µs with the middleware (+{extra:.1f} µs)"
    )
    results["extra"] = extra
    results.update(uses_loop(body, output))
    return results


def uses_loop(body: bytes, output: list[Any]) -> dict[str, float]:
    """The same response with the three uses declared: ``rep_use`` after its own signals."""
    import scrapy
    from scrapy.http import HtmlResponse
    from scrapy.utils.test import get_crawler

    from scrapy_rep.components.page import PageDirectivesMiddleware
    from scrapy_rep.crawl.telemetry import Telemetry

    uses = ["train-ai", "ai-input", "search"]
    middlewares = {}
    for declared in ([], uses):
        crawler = get_crawler(
            settings_dict={
                "USER_AGENT": USER_AGENT,
                "ADDONS": {"scrapy_rep.Addon": 100},
                "REP_USES": declared,
            }
        )
        middleware = PageDirectivesMiddleware.from_crawler(crawler)
        middleware._sink = (Telemetry(crawler.stats, max_origins=10),)  # as in a crawl: batched
        middlewares[bool(declared)] = middleware
    decision = {
        "uses": {
            "train-ai": {"answer": "refused", "source": "robots.txt line 2 ..."},
            "ai-input": {"answer": "unknown", "source": "nothing said"},
            "search": {"answer": "allowed", "source": "robots.txt line 2 ..."},
        }
    }
    pages = {
        "a page that says nothing": (body, {}),
        "Content-Usage header + meta noai": (
            body.replace(b"</head>", b'<meta name="robots" content="noai"></head>'),
            {"Content-Usage": "train-ai=n, search=y"},
        ),
    }
    results: dict[str, float] = {}
    for name, (page, headers) in pages.items():
        timed = {}
        for declared, middleware in middlewares.items():
            request = scrapy.Request("http://127.0.0.1:1/p", meta={"rep_decision": decision})

            def one(
                middleware: Any = middleware,
                page: bytes = page,
                request: Any = request,
                headers: dict[str, str] = headers,
            ) -> None:
                response = HtmlResponse(request.url, body=page, headers=headers, request=request)
                middleware.process_spider_input(response)
                for _ in middleware.process_spider_output(response, output):
                    pass

            timed[declared] = per_call(one)
        extra = timed[True] - timed[False]
        results[f"uses: {name}"] = extra
        print(
            f"  {name}, REP_USES of three uses: {timed[False]:.1f} µs none declared, "
            f"{timed[True]:.1f} µs declared (+{extra:.1f} µs per response)"
        )
    return results


# -- whole crawls -------------------------------------------------------------------------------


def _child(pages: int, on: bool) -> None:
    from scrapy.utils.reactor import install_reactor

    install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")
    import re

    import scrapy
    from scrapy.crawler import AsyncCrawlerRunner
    from twisted.internet import defer, reactor

    from tests.support.fakesite import FakeSite, Reply

    link = re.compile(rb'href="(/p/\d+)"')

    class Chain(scrapy.Spider):
        name = "chain"

        def parse(self, response: Any) -> Any:
            yield {"url": response.url}
            for href in link.findall(response.body):
                yield response.follow(href.decode())

    site = FakeSite()
    origin = site.add("a")
    for i in range(pages):  # page i links to 10 pages ahead: every page is reached once
        links = [f"/p/{j}" for j in range(i * 10 + 1, min(pages, i * 10 + 11))]
        origin.page(f"/p/{i}", Reply(body=typical_page(links=links)))
    settings = {
        "ADDONS": {"scrapy_rep.Addon": 100},
        "USER_AGENT": USER_AGENT,
        "LOG_LEVEL": "WARNING",
        "TELNETCONSOLE_ENABLED": False,
        "CONCURRENT_REQUESTS": 16,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
        "REP_PAGE_DIRECTIVES": on,
    }
    runner = AsyncCrawlerRunner(settings)
    crawler = runner.create_crawler(Chain)
    timing: dict[str, float] = {}

    async def run() -> None:
        # the reactor thread only: the fake site's server threads are not counted
        timing["cpu"], timing["wall"] = time.thread_time(), time.perf_counter()
        await runner.crawl(crawler, start_urls=[origin.url_for("/p/0")])
        timing["cpu"] = time.thread_time() - timing["cpu"]
        timing["wall"] = time.perf_counter() - timing["wall"]

    d = defer.Deferred.fromFuture(asyncio.ensure_future(run()))
    d.addBoth(lambda _: reactor.stop())  # type: ignore[attr-defined]
    reactor.run()  # type: ignore[attr-defined]
    site.stop()
    assert crawler.stats is not None
    served = origin.hits() - origin.hits("/robots.txt")
    print(
        json.dumps(
            {**timing, "pages": served, "items": crawler.stats.get_value("item_scraped_count")}
        )
    )


def crawls(pages: int, runs: int) -> dict[str, float]:
    seen: dict[bool, list[dict[str, float]]] = {True: [], False: []}
    for _ in range(runs):
        for on in (False, True):
            out = subprocess.run(
                [sys.executable, __file__, "--child", str(pages), "--on" if on else "--off"],
                capture_output=True,
                text=True,
                check=True,
            )
            seen[on].append(json.loads(out.stdout.strip().splitlines()[-1]))
    medians = {}
    for on, label in ((False, "off"), (True, "on")):
        wall = statistics.median(r["wall"] for r in seen[on])
        cpu = statistics.median(r["cpu"] for r in seen[on])
        served = seen[on][0]["pages"]
        medians[f"{label} pages/s"] = served / wall
        medians[f"{label} cpu µs/page"] = cpu / served * 1e6
        print(
            f"  REP_PAGE_DIRECTIVES {label:<3}: {served} pages, {served / wall:7.0f} pages/s, "
            f"crawler CPU {cpu / served * 1e6:6.0f} µs/page (median of {runs})"
        )
    return medians


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-crawl", action="store_true")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--on", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--off", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.on)
        return
    print("parse loop")
    parse_loop()
    print("middleware loop")
    middleware_loop()
    if not args.no_crawl:
        print(f"crawl ({args.pages} typical pages on loopback)")
        crawls(args.pages, args.runs)


if __name__ == "__main__":
    main()

"""A healthy origin's pace with 0 and with 30 origins whose robots.txt hangs beside it.

Usage: ``python benchmarks/bench_hung.py [--runs N] [--pages P] [--hung H]``

Each origin listens on its own loopback address (127.0.0.2, 127.0.0.3, ...),
so each has its own Scrapy download slot, as distinct hosts have. The hung
origins' robots.txt never answers; the crawl's robots.txt timeout is 10 s.
The spider asks for two pages of every hung origin first, then ``P`` pages
of the healthy one, with Scrapy's defaults of 16 concurrent requests and 8
per host, and stops as soon as the healthy origin's last page arrived.

pages/s is the healthy origin's pages / (its last page - its robots.txt
request), measured by the server; "last page" is seconds from the spider's
opening, "hung left" how many hung robots.txt fetches were still pending
then (all of them: nothing waited for their timeouts). Median of ``--runs``;
each crawl in a fresh process, the two scenarios alternating. Nothing here
fails on a number.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any

import _common
from _common import ROOT, USER_AGENT, read_child_config, run_child, say

FETCH_TIMEOUT = 10.0


def crawl(config: dict[str, Any]) -> dict[str, Any]:
    """Child: serve the origins, crawl them once, report the healthy origin's pace."""
    import scrapy
    from scrapy import signals
    from scrapy.crawler import CrawlerProcess
    from scrapy.exceptions import CloseSpider

    sys.path.insert(0, str(ROOT))
    from scrapy_rep.core.origin import origin_of
    from scrapy_rep.crawl import graph
    from tests.support.fakesite import FakeSite, Reply

    pages, hung_count = config["pages"], config["hung"]
    site = FakeSite()
    healthy = site.add("healthy", host="127.0.0.1").robots(
        Reply(body=b"User-agent: *\nDisallow: /private\n")
    )
    hung = [
        site.add(f"hung{n}", host=f"127.0.0.{n + 2}").robots(Reply(hang=True))
        for n in range(hung_count)
    ]
    urls = [o.url_for(f"/h/{n}") for n in range(2) for o in hung]
    urls += [healthy.url_for(f"/page/{n}") for n in range(pages)]
    seen: dict[str, Any] = {"done": 0}

    class Spider(scrapy.Spider):
        name = "hung"

        async def start(self) -> Any:
            for url in urls:
                yield scrapy.Request(url, errback=self.failed)

        def parse(self, response: Any) -> None:
            if not response.url.startswith(healthy.url):
                return
            seen["done"] += 1
            if seen["done"] == pages:
                seen["last"] = time.monotonic()
                robots = graph.running(self.crawler)
                assert robots is not None
                pending = [robots.resolver.pending_since(origin_of(o.url)) for o in hung]
                seen["hung_left"] = sum(since is not None for since in pending)
                raise CloseSpider("healthy-done")

        def failed(self, failure: Any) -> None:
            pass

    process = CrawlerProcess(
        {
            "ADDONS": {"scrapy_rep.Addon": 100},
            "USER_AGENT": USER_AGENT,
            "LOG_LEVEL": "WARNING",
            "TELNETCONSOLE_ENABLED": False,
            "CONCURRENT_REQUESTS": 16,
            "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
            "REP_FETCH_TIMEOUT": FETCH_TIMEOUT,
            "DOWNLOAD_TIMEOUT": FETCH_TIMEOUT,
            "RETRY_ENABLED": False,
        }
    )
    crawler = process.create_crawler(Spider)

    def opened(**_: Any) -> None:
        seen["opened"] = time.monotonic()

    crawler.signals.connect(opened, signal=signals.spider_opened)
    process.crawl(crawler)
    process.start()
    site.stop()
    hits = [h for h in healthy.requests() if h.path.startswith("/page/")]
    first = healthy.requests("/robots.txt")[0].at
    last = max(h.at for h in hits)
    return {
        "pages": len(hits),
        "pages_per_s": len(hits) / (last - first),
        "last_page": seen["last"] - seen["opened"],
        "hung_left": seen.get("hung_left"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pages", type=int, default=400)
    parser.add_argument("--hung", type=int, default=30)
    args = parser.parse_args()
    scenarios = (0, args.hung)
    runs: dict[int, list[dict[str, Any]]] = {n: [] for n in scenarios}
    for run in range(args.runs):
        for hung in scenarios:
            config = {"pages": args.pages, "hung": hung}
            result = run_child(__file__, "crawl", config, timeout=300)
            runs[hung].append(result)
            say(
                f"run {run + 1}, {hung:2d} hung: {result['pages_per_s']:.0f} pages/s, "
                f"last page at {result['last_page']:.2f} s, hung left {result['hung_left']}"
            )
    say(f"\n{args.pages} pages of a healthy origin, median of {args.runs} runs:\n")
    say("| hung origins beside it | pages/s | last page at | hung fetches still pending then |")
    say("|---:|---:|---:|---:|")
    for hung in scenarios:
        rows = runs[hung]
        rate = statistics.median(r["pages_per_s"] for r in rows)
        last = statistics.median(r["last_page"] for r in rows)
        left = min(r["hung_left"] for r in rows)
        say(f"| {hung} | {rate:.0f} | {last:.2f} s | {left if hung else '-'} of {hung} |")
    base = statistics.median(r["pages_per_s"] for r in runs[0])
    worst = statistics.median(r["pages_per_s"] for r in runs[args.hung])
    say(f"\nwith {args.hung} hung origins: {worst / base:.0%} of the pace alone")


if __name__ == "__main__":
    if sys.argv[1:] == ["crawl"]:
        print(_common.json.dumps(crawl(read_child_config())), flush=True)
    else:
        main()

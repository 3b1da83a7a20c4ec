"""How much of the package a default crawl carries: the ``scrapy_rep`` modules a real
crawl with ``ADDONS`` only has imported when it ends, and their lines.

Usage: ``python benchmarks/crawl_path.py [-v]`` (``-v`` lists the modules, largest first)

One loopback site (a robots.txt with one rule, a page linking an allowed and a
disallowed page); the crawl runs in this process, so ``sys.modules`` at its end
is what a crawl imports. A size goal, never a test's assertion: the goal is at
most 12,000 lines (``docs/performance.md``).
"""

from __future__ import annotations

import http.server
import socketserver
import sys
import threading
from pathlib import Path

import scrapy
from scrapy.crawler import CrawlerProcess


class Site(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/robots.txt":
            body = b"User-agent: *\nDisallow: /private\n"
        else:
            body = b"<a href='/a'>a</a><a href='/private/x'>x</a>"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def lines(path: str) -> int:
    with open(path, encoding="utf-8") as file:
        return sum(1 for _ in file)


def main() -> None:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Site)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]

    class Spider(scrapy.Spider):
        name = "crawl_path"
        start_urls = (f"http://127.0.0.1:{port}/",)

        def parse(self, response):  # type: ignore[no-untyped-def]
            for href in response.css("a::attr(href)").getall():
                yield response.follow(href, self.parse)

    process = CrawlerProcess(
        {"ADDONS": {"scrapy_rep.Addon": 100}, "LOG_LEVEL": "ERROR", "TELNETCONSOLE_ENABLED": False}
    )
    process.crawl(Spider)
    process.start()
    server.shutdown()
    loaded = {
        name: lines(module.__file__)
        for name, module in sys.modules.items()
        if name.startswith("scrapy_rep") and getattr(module, "__file__", None)
    }
    package = Path(sys.modules["scrapy_rep"].__file__ or "").parent
    every = [lines(str(path)) for path in package.rglob("*.py")]
    print(
        f"a default crawl imports {len(loaded)} of {len(every)} modules, "
        f"{sum(loaded.values()):,} of {sum(every):,} lines"
    )
    if "-v" in sys.argv:
        for name, count in sorted(loaded.items(), key=lambda item: -item[1]):
            print(f"{count:6d}  {name}")


if __name__ == "__main__":
    main()

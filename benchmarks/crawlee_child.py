"""``benchmarks/bench_pushback.py --crawlee PYTHON``: one crawl by Crawlee for Python.

Run by that interpreter (a throwaway venv holding ``crawlee``; a benchmark-only
dependency, never the project's): its ``HttpCrawler`` at its defaults behind its
``ThrottlingRequestManager`` over every start URL's host, following the
``/p/N`` links of the pushback site. Config (JSON on stdin): ``start``,
``timeout``; prints one JSON line, ``elapsed`` and ``stats`` (none kept).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sys
import time
from datetime import timedelta
from typing import Any
from urllib.parse import urljoin, urlsplit

LINK = re.compile(rb'href="(/p/\d+)"')


async def crawl(config: dict[str, Any]) -> dict[str, Any]:
    from crawlee import service_locator
    from crawlee.crawlers import HttpCrawler, HttpCrawlingContext
    from crawlee.request_loaders import ThrottlingRequestManager
    from crawlee.storage_clients import MemoryStorageClient
    from crawlee.storages import RequestQueue

    service_locator.set_storage_client(MemoryStorageClient())
    start: list[str] = config["start"]
    queue = await RequestQueue.open()
    throttler = ThrottlingRequestManager(
        inner=queue,
        domains=sorted({urlsplit(url).hostname or "" for url in start}),
        request_manager_opener=RequestQueue.open,
    )
    crawler = HttpCrawler(
        request_manager=throttler,
        request_handler_timeout=timedelta(seconds=10),
        configure_logging=False,
    )

    @crawler.router.default_handler
    async def page(context: HttpCrawlingContext) -> None:
        body = await context.http_response.read()
        links = [urljoin(context.request.url, p.decode()) for p in LINK.findall(body)]
        await context.add_requests(links)

    started = time.monotonic()
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(crawler.run(start), timeout=config["timeout"])
    return {"elapsed": time.monotonic() - started, "stats": {}}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(crawl(json.loads(sys.stdin.read())))), flush=True)

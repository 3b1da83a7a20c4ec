"""The Scrapy side of ``scrapy-rep recheck``: a real crawler that only asks.

A crawler with the project's settings and the add-on, whose spider
downloads nothing: for each origin of the feed, its URLs are judged by
:meth:`AdmissionPath.ask <scrapy_rep.crawl.admission.AdmissionPath.ask>`,
the path ``scrapy robots`` takes: robots.txt (and tdmrep.json when
``train-ai`` is declared) fetched once per origin through the downloader
middlewares, the status table, the cache and the shared store, exactly as a
crawl. At most ``CONCURRENT_REQUESTS`` origins are asked at a time.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from scrapy import Spider
from scrapy.crawler import CrawlerProcess
from scrapy.settings import SETTINGS_PRIORITIES, Settings
from scrapy.utils.misc import load_object

from scrapy_rep.addon import Addon
from scrapy_rep.core.decision import DecisionRecord
from scrapy_rep.crawl import graph

#: quiet by default, as ``scrapy robots``: the report is the output
_QUIET = {"LOG_LEVEL": "WARNING", "REP_REPORT": False}


def is_component(component: Any, cls: type) -> bool:
    """Whether a component priority dict's key (a class or its import path) is ``cls``."""
    try:
        return load_object(component) is cls
    except (ImportError, NameError, ValueError, TypeError):
        return False


class _RecheckSpider(Spider):
    name = "recheck"


def recheck(
    settings: Settings,
    origins: Mapping[str, Sequence[str]],
    progress: Callable[[int], None] | None = None,
) -> tuple[dict[str, DecisionRecord], list[str]]:
    """Each URL's decision record as a crawl would make it now; and problems, if any.

    ``origins``: origin -> its distinct URLs. ``progress`` hears the number of
    URLs judged so far, after each URL.
    """
    for name, value in _QUIET.items():
        if (settings.getpriority(name) or 0) < SETTINGS_PRIORITIES["cmdline"]:
            settings.set(name, value, priority="cmdline")
    if not any(is_component(c, Addon) for c in settings.getdict("ADDONS")):
        settings.set_in_component_priority_dict("ADDONS", Addon, 100)
    found: dict[str, DecisionRecord] = {}
    problems: list[str] = []
    concurrency = max(1, settings.getint("CONCURRENT_REQUESTS"))

    async def start(spider: Spider) -> AsyncIterator[Any]:
        service = graph.running(spider.crawler)
        if service is None:
            problems.append("scrapy-rep is not enabled (REP_ENABLED is off?)")
            return
        room = asyncio.Semaphore(concurrency)

        async def one(urls: Sequence[str]) -> None:
            async with room:
                for url in urls:
                    found[url], _ = await service.admission.ask(url)
                    if progress is not None:
                        progress(len(found))

        await asyncio.gather(*(one(urls) for urls in origins.values()))
        return
        yield  # an async generator that yields nothing: no target is downloaded

    process = CrawlerProcess(settings, install_root_handler=True)
    process.crawl(type("RecheckProbe", (_RecheckSpider,), {"start": start}))
    process.start()
    if process.bootstrap_failed and not problems:
        problems.append("the crawler failed; run with -s LOG_LEVEL=INFO to see why")
    return found, problems

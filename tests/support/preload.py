"""What every process started by ``tests/support/processes.py`` finds imported already.

Scrapy, Twisted, scrapy-redis, redis-py and scrapy-rep, with every component
module Scrapy's default settings name and every ``scrapy`` command: what a
test's ``python -m scrapy ...`` or worker imports before it does anything.
No reactor is installed here (a process installs its own).
"""

from __future__ import annotations

import contextlib
import importlib
import pkgutil
import sys

import scrapy.cmdline
import scrapy.commands
import scrapy.crawler
import scrapy.spiders
from scrapy.settings import default_settings

import scrapy_rep.addon
import scrapy_rep.cli  # noqa: F401

#: settings naming one component class each
SINGLE_COMPONENTS = (
    "SCHEDULER",
    "DUPEFILTER_CLASS",
    "STATS_CLASS",
    "DOWNLOADER",
    "REQUEST_FINGERPRINTER_CLASS",
    "SCHEDULER_PRIORITY_QUEUE",
    "ITEM_PROCESSOR",
)


def _modules() -> list[str]:
    named: list[str] = []
    for table in (
        default_settings.DOWNLOADER_MIDDLEWARES_BASE,
        default_settings.SPIDER_MIDDLEWARES_BASE,
        default_settings.EXTENSIONS_BASE,
        default_settings.DOWNLOAD_HANDLERS_BASE.values(),
    ):
        named.extend(str(path).rsplit(".", 1)[0] for path in table or ())
    for setting in SINGLE_COMPONENTS:
        value = getattr(default_settings, setting, None)
        if isinstance(value, str):
            named.append(value.rsplit(".", 1)[0])
    named += [f"scrapy.commands.{m.name}" for m in pkgutil.iter_modules(scrapy.commands.__path__)]
    named += [f"scrapy_rep.crawl.{m.name}" for m in pkgutil.iter_modules(
        importlib.import_module("scrapy_rep.crawl").__path__)]  # fmt: skip
    named += ["scrapy_redis.spiders", "scrapy_redis.scheduler", "scrapy_redis.dupefilter",
              "scrapy_redis.queue", "redis.asyncio", "scrapy_rep.runtime.store.held",
              "scrapy_rep.runtime.store.redis", "scrapy_rep.runtime.store.sqlite"]  # fmt: skip
    return named


for _name in _modules():
    with contextlib.suppress(Exception):  # an optional dependency missing: imported later
        importlib.import_module(_name)

#: a process installs its own reactor (the asyncio one); none may be installed before it
REACTOR_FREE = "twisted.internet.reactor" not in sys.modules

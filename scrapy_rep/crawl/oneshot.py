"""One-shot commands (``scrapy fetch``, ``view``, ``parse``, ``shell``): answer now, hold nothing.

Someone who typed one URL is waiting for it: the request waits for its robots.txt fetch
only, and a drop is explained on stderr in one line, even with ``--nolog``. Scrapy does
not say which command runs; each of these leaves a trace found here.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from scrapy.settings import SETTINGS_PRIORITIES
from scrapy.utils.misc import load_object

from scrapy_rep.core.decision import DecisionRecord
from scrapy_rep.robotstxt.text import printable

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_rep.core.gate import OriginGate
    from scrapy_rep.core.policy import Policy

#: module of the ``start`` method a command gives the spider -> the command
_START_FROM = {"scrapy.commands.fetch": "fetch", "scrapy.commands.parse": "parse"}
#: what ``scrapy shell`` sets at the command priority (its ``default_settings``)
_SHELL_DUPEFILTER = "scrapy.dupefilters.BaseDupeFilter"


def command_of(crawler: Crawler) -> str | None:
    """The one-shot command running ``crawler`` (``fetch``, ``parse``, ``shell``), or None."""
    start = getattr(crawler.spidercls, "start", None)
    command = _START_FROM.get(getattr(start, "__module__", None) or "")
    if command is not None:
        return command
    settings = crawler.settings
    if settings.getpriority("DUPEFILTER_CLASS") != SETTINGS_PRIORITIES["command"]:
        return None
    dupefilter = settings.get("DUPEFILTER_CLASS")
    return "shell" if dupefilter in (_SHELL_DUPEFILTER, load_object(_SHELL_DUPEFILTER)) else None


def say(record: DecisionRecord) -> None:
    """Tell the user at the terminal, in one line, why a URL was not downloaded."""
    detail = f" ({printable(record['detail'])})" if record.get("detail") else ""
    print(
        f"scrapy-rep: not downloaded: {printable(record['url'])}: {record['reason']}{detail}",
        file=sys.stderr,
        flush=True,
    )


def held_detail(
    gate: OriginGate[Any], origin: str, reason: str, policy: Policy | None, now: float, command: str
) -> str:
    """Why a one-shot command drops a request held for ``reason``: what it would wait for."""
    if gate.held_by(origin, reason) is not None:
        said = gate.detail(origin, reason, now)
        return f"{said}; scrapy {command} does not wait for the pause a page asked for"
    said = policy.reason if policy is not None else "its robots.txt fetch did not end"
    return f"{said}; scrapy {command} does not wait for robots.txt to be retried"

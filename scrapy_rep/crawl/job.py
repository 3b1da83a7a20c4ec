"""Which crawl this is: its id in the audit log, and the files named after it.

Several crawls may write one audit log: the crawlers of one process
(``CrawlerProcess`` with two spiders), or scrapyd jobs running at once with
the same settings. Each record says which crawl wrote it (``crawl``), so the
close's HTML report, ``scrapy-rep report`` and ``explain`` keep crawls apart.

``REP_DECISION_LOG`` and ``REP_REPORT`` take the placeholders Scrapy's
``FEEDS`` URIs take (``scrapy.extensions.feedexport``): ``%(name)s`` and any
other spider attribute (scrapyd's ``%(_job)s``), ``%(time)s`` (UTC, to the
second, ISO 8601 with ``-`` for ``:``), ``%(batch_time)s`` (the same with
microseconds) and ``%(batch_id)s`` (always 1: one file a crawl). Any other
``%`` is left as it is (``%20`` in a path stays).
"""

from __future__ import annotations

import re
import secrets
from datetime import datetime, timezone
from typing import Any

#: a ``%(key)s``-style placeholder, with printf flags, width and precision
_PLACEHOLDER = re.compile(r"%\([^)]+\)[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?[diouxXeEfFgGcrsa]")


def crawl_id(crawler: Any) -> str:
    """The ``crawl`` field of this crawler's audit records: scrapyd's job id when the
    spider has one (``_job``), else ``<spider name>-<12 random hex digits>``."""
    job = getattr(crawler.spider, "_job", None)
    if job:
        return str(job)
    name = getattr(crawler.spider, "name", None) or getattr(crawler.spidercls, "name", "spider")
    return f"{name}-{secrets.token_hex(6)}"


def params_of(spider: Any, now: datetime | None = None) -> dict[str, Any]:
    """The values a path's placeholders take, as Scrapy's feed export gives them."""
    params: dict[str, Any] = {}
    if spider is not None:
        for key in dir(spider):
            try:
                params[key] = getattr(spider, key)
            except Exception:  # a property that cannot answer yet: no placeholder of it
                continue
    utc = now or datetime.now(tz=timezone.utc)
    params["time"] = utc.replace(microsecond=0).isoformat().replace(":", "-")
    params["batch_time"] = utc.isoformat().replace(":", "-")
    params["batch_id"] = 1
    return params


def with_params(template: str, params: dict[str, Any], setting: str) -> str:
    """``template`` with its placeholders filled in; a name the spider lacks is an error
    naming the setting, as Scrapy's feed export fails on an unknown one."""
    if "%(" not in template:
        return template
    parts: list[str] = []
    last = 0
    for found in _PLACEHOLDER.finditer(template):
        parts.append(template[last : found.start()].replace("%", "%%"))
        parts.append(found.group(0))
        last = found.end()
    parts.append(template[last:].replace("%", "%%"))
    try:
        return "".join(parts) % params
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{setting} = {template!r}: no value for placeholder {exc}") from exc

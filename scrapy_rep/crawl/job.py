"""Which crawl this is: its id in the audit log (several crawls may write one), and the
files named after it, with the placeholders of Scrapy's ``FEEDS`` URIs (any other ``%``
left as it is).
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

"""The sink's handlers for what pages said: their directives, their use answers, and the
items dropped for them."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from scrapy_rep.core.events import ItemDropped, NoindexItem, PageSaid, PageUses

if TYPE_CHECKING:
    from scrapy_rep.crawl.telemetry.sink import Sink

logger = logging.getLogger(__package__)  # the sink's one logger, whichever part speaks


def page_uses(sink: Sink, event: PageUses) -> None:
    origin, url, uses = event.origin, event.url, event.uses
    for use, said in uses.items():
        answer = said["answer"]
        sink.inc(f"rep/page/use/{use}/{answer}")
    if sink.audit is not None:
        sink.audit.write("page_use", {"url": url, "origin": origin, "uses": uses})


def page_said(sink: Sink, event: PageSaid) -> None:
    for date in event.invalid_dates:
        sink.inc("rep/page/invalid_date")
        logger.debug(
            "scrapy-rep: %(url)s: unavailable_after %(date)r is no date; ignored",
            {"url": event.url, "date": date},
        )
    if event.nofollow:
        sink.inc("rep/page/nofollow")
    if event.noindex:
        sink.inc("rep/page/noindex")
    if event.said:
        logger.debug(
            "scrapy-rep: %(url)s says %(said)s to %(token)r",
            {"url": event.url, "said": ", ".join(event.said), "token": event.token},
        )


#: the reason an item of a ``noindex`` page is dropped for (close report, audit log)
PAGE_NOINDEX = "page-noindex"


def noindex_item(sink: Sink, event: NoindexItem) -> None:
    if event.kept:
        sink.inc("rep/page/noindex/items-kept")
        return
    sink.inc("rep/page/noindex/items-dropped")
    _item_dropped(sink, event.url, PAGE_NOINDEX, f"noindex ({event.said})")


def item_dropped(sink: Sink, event: ItemDropped) -> None:
    url, reason, detail = event.url, event.reason, event.detail
    if event.media:  # a media pipeline's download, failed for what its response says
        sink.inc(f"rep/media/dropped/{reason}")
        sink.counts.media_dropped(reason)
        logger.debug(
            "scrapy-rep: a media download of %(url)s failed (%(reason)s): %(detail)s",
            {"url": url, "reason": reason, "detail": detail},
        )
        if sink.audit is not None:
            sink.audit.write(
                "item_dropped", {"url": url, "reason": reason, "detail": detail, "media": True}
            )
        return
    sink.inc(f"rep/page/items-dropped/{reason}")
    _item_dropped(sink, url, reason, detail)


def _item_dropped(sink: Sink, url: str, reason: str, detail: str) -> None:
    """An item dropped for what its page says (``noindex``, a use refused): counted for the
    report, said, audited."""
    sink.counts.item_dropped(reason)
    logger.debug(
        "scrapy-rep: dropped an item of %(url)s (%(reason)s): %(detail)s",
        {"url": url, "reason": reason, "detail": detail},
    )
    if sink.audit is not None:
        sink.audit.write("item_dropped", {"url": url, "reason": reason, "detail": detail})


#: event class -> its handler here
ON: Mapping[type, Callable[[Sink, Any], None]] = {
    PageUses: page_uses,
    PageSaid: page_said,
    NoindexItem: noindex_item,
    ItemDropped: item_dropped,
}

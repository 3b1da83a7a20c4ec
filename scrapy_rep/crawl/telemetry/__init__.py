"""A crawl's one record of what scrapy-rep did: Scrapy's stats, the per-origin counts of
the close report, and the audit log, written together so that the three never disagree.

:class:`Telemetry` is a crawler's one sink (``Telemetry.of(crawler)``), shared by every
component. A request's answers come by direct call, on the hot path, to the methods of
its base :class:`~.sink.Sink`: ``judged``, its ``final`` answer (downloaded, dropped,
requeued or kept, whoever decided it), ``answered_again``/``overruled``/``stopped``
when a request let through is answered anew or stopped on its way out, a browser's
``subrequest`` and a page's ``response`` status. Everything else is an event value
(:mod:`scrapy_rep.core.events`) given to :meth:`Telemetry.emit`, which hands it to its
subject's handler: :mod:`.held` (parked, released, restored, requeued), :mod:`.origins`
(robots.txt and tdmrep.json fetched or reused, an origin's standing, Crawl-delay, licence
walls), :mod:`.pages` (page directives, use answers, items dropped), :mod:`.pushback`
(an origin paused, resumed or refused by its pages) and :mod:`.identity`. The handlers
import :mod:`.sink`, never this package. Counts wait in a :class:`~.batch.StatsBatch`
until flushed; at spider close :meth:`Telemetry.closed` flushes them and
:class:`~.closing.CloseReport` writes the warning for held requests, the summary in the
log and the per-origin audit records, and closes the log. The HTML page is not written
here: the ``HtmlReport`` extension makes it from the closed log.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from scrapy import signals

from scrapy_rep.core.events import Event
from scrapy_rep.crawl import job
from scrapy_rep.crawl.telemetry import held, identity, origins, pages, pushback
from scrapy_rep.crawl.telemetry.batch import FLUSH_EVERY
from scrapy_rep.crawl.telemetry.sink import Sink
from scrapy_rep.runtime.audit import AuditLog, PolicyArchive
from scrapy_rep.runtime.settings import RepSettings

__all__ = ["FLUSH_EVERY", "Telemetry"]


class Telemetry(Sink):
    """Stats, counters, audit records and the close report of one crawler; the events
    dispatched to their subject's handlers."""

    @classmethod
    def of(cls, crawler: Any) -> Telemetry:
        """The crawler's one sink, made on first use and shared by every component
        (the downloader and page middlewares, crawl delay, the browser guard)."""
        found = _SINKS.get(crawler)
        if found is None:
            config = RepSettings.of(crawler)
            # the files' placeholders as FEEDS URIs take them (%(name)s, %(time)s, %(_job)s)
            params = job.params_of(crawler.spider)
            log, html = config.decision_log, config.report_html
            found = _SINKS[crawler] = cls(
                crawler.stats,
                max_origins=config.cache_max_origins,
                audit=AuditLog(
                    job.with_params(log, params, "REP_DECISION_LOG"), crawl=job.crawl_id(crawler)
                )
                if log
                else None,
                archive=PolicyArchive(config.policy_archive) if config.policy_archive else None,
                report=config.report_enabled,
                report_html=job.with_params(html, params, "REP_REPORT") if html else None,
            )
            # batched counts reach Scrapy's stats even in a crawl without the downloader side
            crawler.signals.connect(found.flush, signal=signals.spider_closed)
        return found

    @classmethod
    def running(cls, crawler: Any) -> Telemetry | None:
        """The crawler's sink if a component made it; None: nothing was recorded."""
        return _SINKS.get(crawler)

    # -- events (rarely called: one value each, see core/events.py) -----------

    def emit(self, event: Event) -> None:
        """Count, log and audit one event of the crawl (:mod:`scrapy_rep.core.events`)."""
        handler = _ON.get(type(event))
        if handler is None:
            raise TypeError(f"not a scrapy-rep event: {event!r}")
        handler(self, event)

    # -- the end ------------------------------------------------------------

    def closed(self, reason: str, left: int, *, spider: str, token: str) -> None:
        """At spider close: the last counts to Scrapy's stats, then :class:`CloseReport`."""
        self.flush()
        origins.tdmrep_html_summary(self)
        self.closing.write(reason, left, spider=spider, token=token)


#: event class -> the sink's handler of it (``Telemetry.emit``), by subject
_ON: dict[type, Callable[[Telemetry, Any], None]] = {
    **held.ON,
    **origins.ON,
    **pages.ON,
    **identity.ON,
    **pushback.ON,
}

#: crawler -> its Telemetry (``Telemetry.of``); gone with the crawler
_SINKS: weakref.WeakKeyDictionary[Any, Telemetry] = weakref.WeakKeyDictionary()

"""A crawl's one record of what scrapy-rep did: Scrapy's stats, the per-origin counts of
the close report, and the audit log, written together so that the three never disagree.

:class:`Telemetry` is a crawler's one sink (``Telemetry.of(crawler)``), shared by every
component. A request's answers come by direct call, on the hot path, to the methods of
its base :class:`~.sink.Sink`: ``judged``, its ``final`` answer (downloaded, dropped,
requeued or kept, whoever decided it), ``answered_again``/``stopped``
when a request let through is answered anew or stopped on its way out, a browser's
``subrequest`` and a page's ``response`` status. Everything else is an event value
(:mod:`scrapy_rep.core.events`) given to :meth:`Telemetry.emit`, which hands it to its
subject's handler: :mod:`.held` (parked, released, restored, requeued), :mod:`.origins`
(robots.txt and tdmrep.json fetched or reused, an origin's standing, Crawl-delay, licence
walls), :mod:`.pages` (page directives, use answers, items dropped), :mod:`.pushback`
(an origin paused, resumed or refused by its pages) and :mod:`.identity`. The handlers
import :mod:`.sink`, never this package. Counts wait in a :class:`~.batch.StatsBatch`
until flushed; at spider close :meth:`Telemetry.closed` flushes them and
:func:`.closing.write` writes the warning for held requests, the summary in the
log and the per-origin audit records, and closes the log. The audit log and the policy
archive are not opened here: the component the add-on installs for them
(``components/audit_log.py``) puts them in the sink as it is made (:meth:`Telemetry.when_made`),
seen through what the sink asks of them (:class:`~.sink.AuditWriter`,
:class:`~.sink.Archive`); nor is the HTML page written here: the ``HtmlReport``
extension makes it from the closed log.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from scrapy import signals

from scrapy_rep.core.events import Event
from scrapy_rep.crawl.telemetry import closing, held, identity, origins, pages, pushback
from scrapy_rep.crawl.telemetry.batch import FLUSH_EVERY
from scrapy_rep.crawl.telemetry.sink import Sink
from scrapy_rep.runtime.settings import RepSettings

__all__ = ["FLUSH_EVERY", "Telemetry"]


class Telemetry(Sink):
    """Stats, counters, audit records and the close report of one crawler; the events
    dispatched to their subject's handlers."""

    @classmethod
    def of(cls, crawler: Any) -> Telemetry:
        """The crawler's one sink, made on first use and shared by every component
        (the downloader and page middlewares, crawl delay, the browser guard); what an
        optional component fills in (:meth:`when_made`) is filled as it is made."""
        found = _SINKS.get(crawler)
        if found is None:
            config = RepSettings.of(crawler)
            found = _SINKS[crawler] = cls(
                crawler.stats, max_origins=config.cache_max_origins, report=config.report_enabled
            )
            # batched counts reach Scrapy's stats even in a crawl without the downloader side
            crawler.signals.connect(found.flush, signal=signals.spider_closed)
            for fill in _FILLS.pop(crawler, ()):
                fill(found)
        return found

    @classmethod
    def when_made(cls, crawler: Any, fill: Callable[[Telemetry], None]) -> None:
        """An optional component fills its slot of the sink with ``fill`` (the audit log's:
        ``components/audit_log.py``): now if the sink is made, else as soon as it is
        (an extension is made before the components that make it). The sink never
        imports such a part: a crawl that does not install it never loads it."""
        found = _SINKS.get(crawler)
        if found is not None:
            fill(found)
        else:
            _FILLS.setdefault(crawler, []).append(fill)

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
        """At spider close: the last counts to Scrapy's stats, then :func:`.closing.write`."""
        self.flush()
        origins.tdmrep_html_summary(self)
        closing.write(self, reason, left, spider=spider, token=token)


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
#: crawler -> what its components fill in once its sink is made (``Telemetry.when_made``)
_FILLS: weakref.WeakKeyDictionary[Any, list[Callable[[Telemetry], None]]] = (
    weakref.WeakKeyDictionary()
)

"""``HtmlReport``: the extension that writes ``REP_REPORT``'s HTML page at the crawl's end.

The add-on installs it only when ``REP_REPORT`` names a page, so a crawl without
one imports nothing of the report. The page is made from the audit log once the
sink has closed it at ``spider_closed``: this extension writes it at
``engine_stopped``, which comes after. The log, and the page's name, are the ones
``components/audit_log.py`` put in the sink.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import NotConfigured

from scrapy_rep.crawl.telemetry import Telemetry
from scrapy_rep.report.html import write_report
from scrapy_rep.runtime.audit import AuditLog
from scrapy_rep.runtime.settings import RepSettings, is_enabled

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class HtmlReport:
    """Writes the crawl's audit log as one HTML page (``REP_REPORT = "path.html"``)."""

    def __init__(self, crawler: Crawler) -> None:
        if not is_enabled(crawler.settings.get) or RepSettings.of(crawler).report_html is None:
            raise NotConfigured("REP_REPORT names no HTML page")
        self.crawler = crawler
        crawler.signals.connect(self.write, signal=signals.engine_stopped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> HtmlReport:
        return cls(crawler)

    def write(self) -> None:
        """The closed audit log's records as a page; a failure is a warning."""
        sink = Telemetry.running(self.crawler)
        if sink is None or not isinstance(sink.audit, AuditLog) or sink.report_html is None:
            return  # nothing was recorded: no crawl ran here
        audit, html = sink.audit, sink.report_html
        try:
            write_report(audit.path, html, start=audit.start, crawl=audit.crawl)
        except OSError as exc:
            logger.warning(
                "scrapy-rep: cannot write the HTML report %(path)s: %(error)s",
                {"path": html, "error": exc},
            )
        else:
            logger.info("scrapy-rep: HTML report written to %(path)s", {"path": html})

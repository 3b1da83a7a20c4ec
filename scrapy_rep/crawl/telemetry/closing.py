"""What the sink does at spider close: the warning for what was held, the report in the
log, the per-origin audit records and the HTML report."""

from __future__ import annotations

import logging

from scrapy_rep.core.report import CrawlCounts, report_lines
from scrapy_rep.runtime.audit import AuditLog
from scrapy_rep.runtime.html_report import write_report

logger = logging.getLogger(__package__)  # the sink's one logger, whichever part speaks


class CloseReport:
    """The crawl's closing words, from its counts and its audit log.

    ``report``: the summary in the log (``REP_REPORT``); ``html``: where the
    audit log is written as a page (``REP_REPORT``), or None.
    """

    def __init__(
        self, counts: CrawlCounts, audit: AuditLog | None, *, report: bool, html: str | None
    ) -> None:
        self.counts = counts
        self.audit = audit
        self.report = report
        self.html = html

    def write(self, reason: str, left: int, *, spider: str, token: str) -> None:
        """Both the warning and the report name the spider and the token: crawlers
        sharing a process share its log."""
        if left:
            logger.warning(
                "scrapy-rep: %(n)d held requests of spider %(spider)r (as %(token)r) were never "
                "downloaded (spider closed: %(reason)s)",
                {"n": left, "spider": spider, "token": token, "reason": reason},
            )
        try:
            if self.report:
                lines = report_lines(self.counts, who=f"spider {spider!r} as {token!r}")
                logger.info("%(report)s", {"report": "\n".join(lines)})
            if self.audit is not None:
                for origin, counts in self.counts.origins.items():
                    self.audit.write("origin", {"origin": origin, **counts.to_dict()})
        finally:
            if self.audit is not None:
                self.audit.close()  # flushes: nothing buffered is lost
                self._write_html(self.audit)

    def _write_html(self, audit: AuditLog) -> None:
        """The audit log's records as a page; a failure is a warning."""
        if self.html is None:
            return
        try:
            write_report(audit.path, self.html, start=audit.start, crawl=audit.crawl)
        except OSError as exc:
            logger.warning(
                "scrapy-rep: cannot write the HTML report %(path)s: %(error)s",
                {"path": self.html, "error": exc},
            )
        else:
            logger.info("scrapy-rep: HTML report written to %(path)s", {"path": self.html})

"""What the sink does at spider close: the warning for what was held, the report in the
log, the per-origin audit records; the HTML page is
:class:`~scrapy_rep.components.html_report.HtmlReport`'s, made from the closed log."""

from __future__ import annotations

import logging

from scrapy_rep.core.report import CrawlCounts, report_lines
from scrapy_rep.runtime.audit import AuditLog

logger = logging.getLogger(__package__)  # the sink's one logger, whichever part speaks


class CloseReport:
    """The crawl's closing words, from its counts and its audit log.

    ``report``: the summary in the log (``REP_REPORT``); ``html``: where the
    audit log is written as a page (``REP_REPORT``; by the ``HtmlReport`` extension
    the add-on installs for it, once the log is closed here), or None.
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

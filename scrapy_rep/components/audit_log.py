"""``AuditLogFiles``: the extension that opens the crawl's audit log (``REP_DECISION_LOG``)
and policy archive (``REP_POLICY_ARCHIVE``) and puts them in the sink.

The add-on installs it only when one of the two is set, so a crawl without either never
loads the writer (:mod:`scrapy_rep.runtime.audit`) nor the naming of its files
(:mod:`scrapy_rep.crawl.job`). The files are opened as the sink is made
(``Telemetry.when_made``), the spider known by then: the placeholders of the log's
path and of ``REP_REPORT``'s page take one set of values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

from scrapy_rep.crawl import job
from scrapy_rep.crawl.parts import audit_log_wanted
from scrapy_rep.crawl.telemetry import Telemetry
from scrapy_rep.runtime.audit import AuditLog, PolicyArchive
from scrapy_rep.runtime.settings import RepSettings, is_enabled

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class AuditLogFiles:
    """Fills the sink's audit log, policy archive and HTML page's name."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> AuditLogFiles:
        if not is_enabled(crawler.settings.get) or not audit_log_wanted(crawler.settings):
            raise NotConfigured("neither REP_DECISION_LOG nor REP_POLICY_ARCHIVE is set")
        extension = cls(crawler)
        Telemetry.when_made(crawler, extension.fill)
        return extension

    def fill(self, sink: Telemetry) -> None:
        crawler = self.crawler
        config = RepSettings.of(crawler)
        # the files' placeholders as FEEDS URIs take them (%(name)s, %(time)s, %(_job)s)
        params = job.params_of(crawler.spider)
        log, html = config.decision_log, config.report_html
        if log:
            path = job.with_params(log, params, "REP_DECISION_LOG")
            sink.audit = AuditLog(path, crawl=job.crawl_id(crawler))
        if config.policy_archive:
            sink.archive = PolicyArchive(config.policy_archive)
        if html:
            sink.report_html = job.with_params(html, params, "REP_REPORT")

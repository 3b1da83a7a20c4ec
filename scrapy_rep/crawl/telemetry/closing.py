"""What the sink does at spider close: the warning for what was held, the report in the
log, the per-origin audit records; the HTML page is
:class:`~scrapy_rep.components.html_report.HtmlReport`'s, made from the closed log."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy_rep.core.report import report_lines

if TYPE_CHECKING:
    from scrapy_rep.crawl.telemetry.sink import Sink

logger = logging.getLogger(__package__)  # the sink's one logger, whichever part speaks


def write(sink: Sink, reason: str, left: int, *, spider: str, token: str) -> None:
    """The crawl's closing words, from its counts, and the audit log closed.

    Both the warning and the report (``REP_REPORT``: the summary in the log)
    name the spider and the token: crawlers sharing a process share its log.
    """
    if left:
        logger.warning(
            "scrapy-rep: %(n)d held requests of spider %(spider)r (as %(token)r) were never "
            "downloaded (spider closed: %(reason)s)",
            {"n": left, "spider": spider, "token": token, "reason": reason},
        )
    try:
        if sink.report:
            lines = report_lines(sink.counts, who=f"spider {spider!r} as {token!r}")
            logger.info("%(report)s", {"report": "\n".join(lines)})
        if sink.audit is not None:
            for origin, counts in sink.counts.origins.items():
                sink.audit.write("origin", {"origin": origin, **counts.to_dict()})
    finally:
        if sink.audit is not None:
            sink.audit.close()  # flushes: nothing buffered is lost

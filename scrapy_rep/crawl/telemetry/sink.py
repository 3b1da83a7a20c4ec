"""The sink's state and its per-request calls (:class:`Sink`, the base of
:class:`~scrapy_rep.crawl.telemetry.Telemetry`): a request judged, its final answer, a
download that no longer counts, a browser's subrequest, a page's status. The event
handlers of :mod:`scrapy_rep.crawl.telemetry` write to it from here, so that they need not
import the package that dispatches to them."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Protocol

from scrapy_rep.core.decision import DOWNLOAD, DROP, KEEP, REQUEUE, DecisionRecord
from scrapy_rep.core.report import CrawlCounts
from scrapy_rep.core.uses import ANSWERS, REFUSED, USES
from scrapy_rep.crawl import meta as M
from scrapy_rep.crawl.telemetry.batch import StatsBatch
from scrapy_rep.robotstxt.text import printable

logger = logging.getLogger(__package__)  # the sink's one logger, whichever part speaks

_CACHE = {outcome: f"rep/cache/{outcome}" for outcome in ("hit", "miss", "expired")}
#: the final answers of a held request handed over at close (not drops) -> their stats key
_HANDED_OVER = {REQUEUE: "rep/requeued", KEEP: "rep/held/saved"}
_JUDGEMENTS = {rep: f"rep/judgements/{rep}" for rep in ("allow", "disallow", "unresolved")}
#: use -> answer -> its stats key
_NO_KEYS: dict[str, str] = {}
_USE_KEYS: dict[str, dict[str, str]] = {
    use: {answer: f"rep/use/{use}/{answer}" for answer in ANSWERS} for use in USES
}


class AuditWriter(Protocol):
    """What the sink asks of the audit log (``REP_DECISION_LOG``): the writer itself,
    ``runtime/audit.py``'s ``AuditLog``, is opened by the component the add-on installs
    only when a log is asked for (``components/audit_log.py``), never by the crawl."""

    def write(self, kind: str, record: Mapping[str, Any]) -> None:
        """One record of type ``kind``, with its time and the crawl's id added."""

    def close(self) -> None:
        """Everything written reaches the file; later writes are ignored."""


class Archive(Protocol):
    """What the sink asks of the policy archive (``REP_POLICY_ARCHIVE``), opened beside
    the audit log by the same component."""

    def keep(self, digest: str, body: bytes) -> str:
        """Store ``body`` under ``digest`` once; its path."""


class Sink:
    """Stats, counters, audit records of one crawler: the requests' answers."""

    def __init__(self, stats: Any, *, max_origins: int, report: bool = True) -> None:
        self.batch = StatsBatch(stats)
        #: the batch's own methods, not wrappers: a count is on every path
        self.inc = self.batch.inc
        self.flush = self.batch.flush
        self.counts = CrawlCounts(max_origins)
        #: the audit log and the policy archive: None unless the component that opens them
        #: (installed only when ``REP_DECISION_LOG`` / ``REP_POLICY_ARCHIVE`` is set) put
        #: them here as the sink was made (``Telemetry.when_made``)
        self.audit: AuditWriter | None = None
        self.archive: Archive | None = None
        #: where ``REP_REPORT``'s HTML page is written from the closed log (named by the
        #: same component, with the log's placeholders' values), or None
        self.report_html: str | None = None
        #: the summary in the log at close (``REP_REPORT``)
        self.report = report
        #: what is said once a crawl: origins given up, unreadable files
        self.noted: set[str] = set()
        #: origins whose tdmrep.json came as an HTML page (the first few), and how many
        self.tdmrep_html: list[str] = []
        self.tdmrep_html_count = 0

    # -- requests -----------------------------------------------------------

    def judged(self, origin: str, record: DecisionRecord, cache: str) -> None:
        """A request judged against a policy (``cache``: hit, miss or expired)."""
        batch = self.batch
        pending = batch.pending  # the hot path: plain dict updates, keys made once
        rep = record["rep_decision"]
        for key in (_CACHE[cache], "rep/judgements", _JUDGEMENTS[rep]):
            pending[key] = pending.get(key, 0) + 1
        if rep == "disallow":
            self.inc("robotstxt/forbidden")  # dashboards watch Scrapy's own key
        batch.events += 3
        uses = record.get("uses")
        if uses:
            self._uses(origin, uses)
        action = record["action"]
        if action in (DOWNLOAD, DROP):
            self.final(origin, record)
        elif self.audit is not None:
            self.audit.write("decision", record)

    def _uses(self, origin: str, uses: dict[str, dict[str, str]]) -> None:
        """``rep/use/<use>/<answer>`` per judged request; refusals per origin for the report."""
        batch = self.batch
        pending = batch.pending  # as judged(): plain dict updates, keys made once
        for use, said in uses.items():
            answer = said["answer"]
            key = _USE_KEYS.get(use, _NO_KEYS).get(answer) or f"rep/use/{use}/{answer}"
            pending[key] = pending.get(key, 0) + 1
            if answer == REFUSED:
                self.counts.use_refused(origin, use)
        batch.events += len(uses)

    def final(self, origin: str | None, record: DecisionRecord, *, stat: str = "") -> None:
        """A request's last answer: downloaded, dropped, or (held at close) requeued into a
        shared queue or kept in the JOBDIR. One ``decision`` record, whatever it is.

        ``stat``: the key a requeue counts under when it is not this worker's own
        (a dead worker's request, requeued here)."""
        action = record["action"]
        if action == DOWNLOAD:
            self.inc("rep/downloaded")
            if record["rep_decision"] != "allow":  # never, by construction: a monitor's check
                self.inc("rep/downloaded/not-allowed")
            if origin is not None:
                self.counts.downloaded(origin)
        elif action in _HANDED_OVER:
            self.inc(stat or _HANDED_OVER[action])
            logger.debug(
                "scrapy-rep: %(action)s %(url)s, held (%(reason)s): %(detail)s",
                {
                    "action": action,
                    "url": printable(record["url"]),
                    "reason": record["reason"],
                    "detail": record["detail"],
                },
            )
        else:
            reason = record["reason"]
            self.inc(f"rep/dropped/{reason}")
            self.counts.dropped(origin, reason)
            logger.debug(
                "scrapy-rep: dropped %(url)s for %(token)r (%(reason)s): %(detail)s",
                {
                    "url": printable(record["url"]),
                    "token": record["product_token"],
                    "reason": reason,
                    "detail": printable(record["detail"]),  # quotes the site's rules
                },
            )
        if self.audit is not None:
            self.audit.write("decision", record)

    def answered_again(self, origin: str, request: Any) -> None:
        """``request`` is answered anew: if its last answer was a download of the same URL (a
        page sent again after its origin's pause, a retry), that one no longer counts; each
        request's final answer counts once. (A redirect's hop is a request of its own.)"""
        previous = request.meta.get(M.DECISION)
        if previous is None or previous.get("action") != DOWNLOAD:
            return
        if previous.get("url") == request.url:
            self._undownloaded(origin)

    def stopped(
        self, origin: str | None, judged: DecisionRecord | None, record: DecisionRecord
    ) -> None:
        """``record`` (a drop), the final answer of a request stopped after it was let
        through (``judged``: its decision record; its download was counted: no longer),
        as it left for the network (``core/identity.py``) or at its response (a licence
        wall), or never judged (``dont_obey_robotstxt``)."""
        if judged is not None and judged.get("action") == DOWNLOAD:
            self._undownloaded(origin)
        self.final(origin, record)

    def _undownloaded(self, origin: str | None) -> None:
        """A download counted that is not the request's final answer any more."""
        pending = self.batch.pending
        pending["rep/downloaded"] = pending.get("rep/downloaded", 0) - 1
        if origin is not None:
            self.counts.undownloaded(origin)

    def subrequest(
        self,
        origin: str | None,
        record: DecisionRecord,
        *,
        page: str,
        first_url: str,
        resource_type: str,
        method: str,
        hop: int,
        counted: bool = True,
    ) -> None:
        """A request a browser made while rendering ``page``, judged by the browser guard.

        ``counted`` is False for the redirect hops of the page's own navigation
        (the page itself is counted by the middleware).
        """
        if counted:
            allowed = record["action"] == DOWNLOAD
            reason = record["reason"]
            self.inc("rep/browser/allowed" if allowed else f"rep/browser/aborted/{reason}")
            self.counts.subrequest(origin, None if allowed else reason)
        if self.audit is not None:
            self.audit.write(
                "subrequest",
                {
                    **record,
                    "page": page,
                    "request_url": first_url,
                    "method": method,
                    "resource_type": resource_type,
                    "hop": hop,
                },
            )

    def response(self, response: Any, request: Any, spider: Any = None) -> None:
        """With an audit log: each downloaded page's own HTTP status (``response_received``)."""
        decision = request.meta.get(M.DECISION)
        if self.audit is None or decision is None or request.meta.get(M.ROBOTS_REQUEST):
            return
        self.audit.write(
            "response",
            {
                "url": decision["url"],
                "origin": decision["origin"],
                "target_status": response.status,  # never mixed with the robots.txt one
                "response_url": response.url,
            },
        )

"""One sink for what scrapy-rep did: crawl stats, per-origin counts, audit log, report.

Every event of a crawl arrives here once: a request ``judged`` and its
``final`` answer (downloaded, dropped, requeued or kept, whoever decided it),
by direct call with the decision record (the hot path); a browser
``subrequest``; the rest as values (:mod:`scrapy_rep.core.events`: a request
parked or released, a robots.txt fetched or reused, an origin's standing,
...) through :meth:`Telemetry.record`; and ``closed``. Each updates the
stats, the report's counters and the audit log together, so the three never
disagree.

Stats increments are batched in a plain dict and handed to Scrapy's stats
collector every :data:`FLUSH_EVERY` events and at idle and close: one dict
update per key per request instead of a method call per key.
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Callable
from typing import Any

from scrapy import signals

from scrapy_rep.adapter import meta as M
from scrapy_rep.core.decision import DOWNLOAD, DROP, KEEP, REQUEUE, requeued_from_dead
from scrapy_rep.core.events import (
    CrawlDelayCapped,
    CrawlDelaySet,
    DelayWaited,
    Event,
    Fetched,
    HeldRestored,
    HeldUnrecorded,
    ItemDropped,
    NoindexItem,
    PageSaid,
    PageUses,
    Parked,
    Parsed,
    Released,
    RequeuedFromDead,
    Reused,
    RobotsServedFromCache,
    SlotDelayRaised,
    Standing,
    TdmrepFetched,
)
from scrapy_rep.core.policy import Policy, Status, classify
from scrapy_rep.core.report import CrawlCounts, report_lines
from scrapy_rep.core.uses import ANSWERS, REFUSED, USES
from scrapy_rep.robotstxt.text import printable
from scrapy_rep.runtime.audit import AuditLog, PolicyArchive
from scrapy_rep.runtime.html_report import write_report
from scrapy_rep.runtime.settings import RepSettings

logger = logging.getLogger(__name__)

#: pending stats increments handed to Scrapy's collector at once
FLUSH_EVERY = 512
_CACHE = {outcome: f"rep/cache/{outcome}" for outcome in ("hit", "miss", "expired")}
#: the final answers of a held request handed over at close (not drops) -> their stats key
_HANDED_OVER = {REQUEUE: "rep/requeued", KEEP: "rep/held/saved"}
#: a dead worker's held request, requeued by this one
_FROM_DEAD = "rep/cluster/requeued-from-dead-worker"
_JUDGEMENTS = {rep: f"rep/judgements/{rep}" for rep in ("allow", "disallow", "unresolved")}
#: use -> answer -> its stats key
_NO_KEYS: dict[str, str] = {}
_USE_KEYS: dict[str, dict[str, str]] = {
    use: {answer: f"rep/use/{use}/{answer}" for answer in ANSWERS} for use in USES
}


class Telemetry:
    """Stats, counters, audit records and the close report of one crawler."""

    @classmethod
    def of(cls, crawler: Any) -> Telemetry:
        """The crawler's one sink, made on first use and shared by every component
        (the downloader and page middlewares, crawl delay, the browser guard)."""
        found = _SINKS.get(crawler)
        if found is None:
            config = RepSettings.of(crawler)
            found = _SINKS[crawler] = cls(
                crawler.stats,
                max_origins=config.cache_max_origins,
                audit=AuditLog(config.decision_log) if config.decision_log else None,
                archive=PolicyArchive(config.policy_archive) if config.policy_archive else None,
                report=config.report_enabled,
                report_html=config.report_html,
            )
            # batched counts reach Scrapy's stats even in a crawl without the downloader side
            crawler.signals.connect(found.flush, signal=signals.spider_closed)
        return found

    def __init__(
        self,
        stats: Any,
        *,
        max_origins: int,
        audit: AuditLog | None = None,
        archive: PolicyArchive | None = None,
        report: bool = True,
        report_html: str | None = None,
    ) -> None:
        self.stats = stats
        self.counts = CrawlCounts(max_origins)
        self.audit = audit
        self.archive = archive
        self.report = report
        self.report_html = report_html
        self._pending: dict[str, int] = {}
        self._events = 0
        self._noted: set[str] = set()  # what is said once: origins given up, unreadable files

    # -- stats --------------------------------------------------------------

    def inc(self, key: str) -> None:
        pending = self._pending
        pending[key] = pending.get(key, 0) + 1
        self._events += 1
        if self._events >= FLUSH_EVERY:
            self.flush()

    def flush(self) -> None:
        """Hand the batched increments to Scrapy's stats collector."""
        pending, self._pending, self._events = self._pending, {}, 0
        for key, count in pending.items():
            self.stats.inc_value(key, count)

    # -- requests -----------------------------------------------------------

    def judged(self, origin: str, record: dict[str, Any], cache: str) -> None:
        """A request judged against a policy (``cache``: hit, miss or expired)."""
        pending = self._pending  # the hot path: plain dict updates, keys made once
        rep = record["rep_decision"]
        for key in (_CACHE[cache], "rep/judgements", _JUDGEMENTS[rep]):
            pending[key] = pending.get(key, 0) + 1
        if rep == "disallow":
            self.inc("robotstxt/forbidden")  # dashboards watch Scrapy's own key
        self._events += 3
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
        pending = self._pending  # as judged(): plain dict updates, keys made once
        for use, said in uses.items():
            answer = said["answer"]
            key = _USE_KEYS.get(use, _NO_KEYS).get(answer) or f"rep/use/{use}/{answer}"
            pending[key] = pending.get(key, 0) + 1
            if answer == REFUSED:
                self.counts.use_refused(origin, use)
        self._events += len(uses)

    def final(self, origin: str | None, record: dict[str, Any], *, stat: str = "") -> None:
        """A request's last answer: downloaded, dropped, or (held at close) requeued into a
        shared queue or kept in the JOBDIR. One ``decision`` record, whatever it is.

        ``stat``: the key a requeue counts under when it is not this worker's own
        (a dead worker's request, requeued here)."""
        action = record["action"]
        if action == DOWNLOAD:
            self.inc("rep/downloaded")
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

    def subrequest(
        self,
        origin: str | None,
        record: dict[str, Any],
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

    # -- events (rarely called: one value each, see core/events.py) -----------

    def record(self, event: Event) -> None:
        """Count, log and audit one event of the crawl (:mod:`scrapy_rep.core.events`)."""
        handler = _ON.get(type(event))
        if handler is None:
            raise TypeError(f"not a scrapy-rep event: {event!r}")
        handler(self, event)

    def _parked(self, event: Parked) -> None:
        origin, url, reason = event.origin, event.url, event.reason
        self.inc("rep/parked")
        self.inc(f"rep/parked/{reason}")
        self.counts.parked(origin)
        if self.audit is not None:
            self.audit.write("parked", {"url": url, "origin": origin, "reason": reason})

    def _released(self, event: Released) -> None:
        origin, url = event.origin, event.url
        self.inc("rep/released")
        self.counts.released(origin)
        if self.audit is not None:
            self.audit.write("released", {"url": url, "origin": origin})

    def _requeued_from_dead(self, event: RequeuedFromDead) -> None:
        """Each request's final answer, in the dead worker's stead: a ``requeue`` decision
        record from what that worker recorded; a bare ``requeued`` record where it recorded
        only the URL (an older version)."""
        worker, urls = event.worker, event.urls
        self.counts.requeued_dead(len(urls))
        logger.info(
            "scrapy-rep: %(n)d held requests of worker %(worker)s, whose lease expired, are back "
            "in the shared queue",
            {"n": len(urls), "worker": worker},
        )
        bare = 0
        for url, held in zip(urls, event.held, strict=True):
            record = requeued_from_dead(url, held, worker)
            if record is not None:
                self.final(record["origin"], record, stat=_FROM_DEAD)
                continue
            bare += 1
            self.inc(_FROM_DEAD)
            if self.audit is not None:
                self.audit.write(
                    "requeued", {"url": url, "reason": "worker-lease-expired", "worker": worker}
                )
        if bare:
            logger.warning(
                "scrapy-rep: %(n)d requeued requests of worker %(worker)s came without their "
                "origin, token, reason or policy (a worker of an older scrapy-rep, or an "
                "unreadable record): no decision record for them, only a 'requeued' one",
                {"n": bare, "worker": worker},
            )

    def _held_restored(self, event: HeldRestored) -> None:
        for _ in range(event.count):
            self.inc("rep/held/restored")
        logger.info(
            "scrapy-rep: %(n)d requests held at the last stop are judged again",
            {"n": event.count},
        )

    def _held_unrecorded(self, event: HeldUnrecorded) -> None:
        self.inc("rep/cluster/held-unrecorded")
        logger.debug(
            "scrapy-rep: cannot record held %(url)s in Redis: %(error)s",
            {"url": event.url, "error": event.error},
        )

    # -- Crawl-delay --------------------------------------------------------

    def _crawl_delay(self, event: CrawlDelaySet) -> None:
        self.counts.crawl_delay(event.origin, event.delay)

    def _crawl_delay_capped(self, event: CrawlDelayCapped) -> None:
        self.inc("rep/crawl_delay/capped")
        logger.info(
            "scrapy-rep: %(origin)s asks for Crawl-delay %(asked)ss, capped at %(cap)ss",
            {"origin": event.origin, "asked": event.asked, "cap": event.cap},
        )

    def _slot_delay_raised(self, event: SlotDelayRaised) -> None:
        self.inc("rep/crawl_delay/applied")

    def _delay_waited(self, event: DelayWaited) -> None:
        self.inc("rep/cluster/delay-waits")
        self.counts.delay_waited(event.seconds)

    # -- origins ------------------------------------------------------------

    def _fetched(self, event: Fetched) -> None:
        """A robots.txt fetch's one record: its stats, the origin's count and the audit's
        ``fetch`` record together."""
        origin, result, policy = event.origin, event.result, event.policy
        if result is not None:
            self.inc("rep/fetch/count")
            outcome = classify(result)
            self.inc(f"rep/fetch/outcome/{outcome}")
            if result.error:
                self.inc(f"rep/fetch/error/{result.error}")
            if result.truncated:
                self.inc("rep/fetch/truncated")
            if result.redirects:
                self.inc("rep/fetch/redirected")
        if policy is None:
            return
        self.counts.fetched(origin, policy.status.value)
        if self.audit is not None:
            archived = self._archive(policy)
            record = {**fetch_record(origin, policy), "archive": archived}
            self.audit.write("fetch", {**record, "licenses": list(event.licenses)})

    def _reused(self, event: Reused) -> None:
        self.inc("rep/fetch/reused")
        self.counts.reused(event.origin, event.policy.status.value)

    def _standing(self, event: Standing) -> None:
        """Log and count where an origin stands after a new policy."""
        origin, policy, paused, resumed = event.origin, event.policy, event.paused, event.resumed
        status = policy.status
        if paused:
            self.inc(f"rep/pauses/{policy.outcome}")
            logger.info(
                "scrapy-rep: %(origin)s paused until %(until)s: %(reason)s",
                {"origin": origin, "until": clock_time(policy.expires_at), "reason": policy.reason},
            )
        elif status is Status.UNRESOLVED:
            if origin not in self._noted:  # once per origin, however often it is refetched
                self._noted.add(origin)
                self._note(logging.WARNING, origin, policy.reason)
        elif status is Status.UNREACHABLE or policy.stale_since is not None:
            self._note(logging.WARNING, origin, policy.reason)
        elif status is Status.UNAVAILABLE:
            self._note(logging.INFO, origin, policy.reason)
        if resumed:
            self.inc("rep/resumes")
            self._note(logging.INFO, origin, f"resumed: {policy.reason}")

    def _parsed(self, event: Parsed) -> None:
        """A file's problems counted; an unreadable one said, once."""
        origin, diagnostics = event.origin, event.diagnostics
        if not diagnostics:
            return
        self.inc("rep/robots/with_diagnostics")
        unreadable = next((d for d in diagnostics if d.kind == "utf-16"), None)
        if unreadable is not None and f"unreadable {origin}" not in self._noted:
            self._noted.add(f"unreadable {origin}")
            self._note(logging.WARNING, origin, f"robots.txt {unreadable.text}")

    def _page_uses(self, event: PageUses) -> None:
        origin, url, uses = event.origin, event.url, event.uses
        for use, said in uses.items():
            answer = said["answer"]
            self.inc(f"rep/page/use/{use}/{answer}")
        if self.audit is not None:
            self.audit.write("page_use", {"url": url, "origin": origin, "uses": uses})

    def _page_said(self, event: PageSaid) -> None:
        for date in event.invalid_dates:
            self.inc("rep/page/invalid_date")
            logger.debug(
                "scrapy-rep: %(url)s: unavailable_after %(date)r is no date; ignored",
                {"url": event.url, "date": date},
            )
        if event.nofollow:
            self.inc("rep/page/nofollow")
        if event.noindex:
            self.inc("rep/page/noindex")
        if event.said:
            logger.debug(
                "scrapy-rep: %(url)s says %(said)s to %(token)r",
                {"url": event.url, "said": ", ".join(event.said), "token": event.token},
            )

    def _noindex_item(self, event: NoindexItem) -> None:
        if event.kept:
            self.inc("rep/page/noindex/items-kept")
            return
        self.inc("rep/page/noindex/items-dropped")
        logger.debug(
            "scrapy-rep: dropped an item of %(url)s (page-noindex): noindex (%(said)s)",
            {"url": event.url, "said": event.said},
        )

    def _served_from_cache(self, event: RobotsServedFromCache) -> None:
        self.inc("rep/robots/served_from_cache")

    def _item_dropped(self, event: ItemDropped) -> None:
        url, reason, detail = event.url, event.reason, event.detail
        self.inc(f"rep/page/items-dropped/{reason}")
        logger.debug(
            "scrapy-rep: dropped an item of %(url)s (%(reason)s): %(detail)s",
            {"url": url, "reason": reason, "detail": detail},
        )
        if self.audit is not None:
            self.audit.write("item_dropped", {"url": url, "reason": reason, "detail": detail})

    def _tdmrep(self, event: TdmrepFetched) -> None:
        """A tdmrep.json fetch's one record: the fetch counted, its problems said once, audited."""
        origin, result, policy, rules = event.origin, event.result, event.policy, event.rules
        if result is not None:
            self.inc("rep/tdmrep/fetch/count")
            outcome = classify(result)
            self.inc(f"rep/tdmrep/fetch/outcome/{outcome}")
        if policy is None:
            return
        if rules is None:
            self.inc("rep/tdmrep/unknown")  # 5xx, network: nothing known until the next TTL
        elif len(rules):
            self.inc("rep/tdmrep/with_rules")
        if rules is not None and rules.diagnostics:
            self.inc("rep/tdmrep/with_diagnostics")
            if f"tdmrep {origin}" not in self._noted:
                self._noted.add(f"tdmrep {origin}")
                more = len(rules.diagnostics) - 1
                text = rules.diagnostics[0] + (f" (and {more} more)" if more else "")
                self._note(logging.WARNING, origin, f"tdmrep.json {text}")
        if self.audit is not None:
            self.audit.write(
                "tdmrep",
                {
                    **fetch_record(origin, policy),
                    "rules": len(rules) if rules is not None else None,
                    "diagnostics": list(rules.diagnostics) if rules is not None else [],
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

    @staticmethod
    def _note(level: int, origin: str, text: str) -> None:
        logger.log(level, "scrapy-rep: %(origin)s: %(text)s", {"origin": origin, "text": text})

    def _archive(self, policy: Policy) -> str | None:
        """Keep the body in REP_POLICY_ARCHIVE (once per digest); its path, or None."""
        if self.archive is None or policy.body is None or policy.digest is None:
            return None
        try:
            return self.archive.keep(policy.digest, policy.body)
        except OSError as exc:
            logger.warning("scrapy-rep: cannot archive robots.txt: %(error)s", {"error": exc})
            return None

    # -- the end ------------------------------------------------------------

    def closed(self, reason: str, left: int, *, spider: str, token: str) -> None:
        """At spider close: the warning for what was held, the report, the last records.

        Both name the spider and the token: crawlers sharing a process share its log.
        """
        if left:
            logger.warning(
                "scrapy-rep: %(n)d held requests of spider %(spider)r (as %(token)r) were never "
                "downloaded (spider closed: %(reason)s)",
                {"n": left, "spider": spider, "token": token, "reason": reason},
            )
        self.flush()
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
                self._write_html()

    def _write_html(self) -> None:
        """``REP_REPORT_HTML``: this crawl's records as a page; a failure is a warning."""
        if self.report_html is None or self.audit is None:
            return
        try:
            write_report(self.audit.path, self.report_html, start=self.audit.start)
        except OSError as exc:
            logger.warning(
                "scrapy-rep: cannot write the HTML report %(path)s: %(error)s",
                {"path": self.report_html, "error": exc},
            )
        else:
            logger.info("scrapy-rep: HTML report written to %(path)s", {"path": self.report_html})


def clock_time(timestamp: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(timestamp))


def fetch_record(origin: str, policy: Policy) -> dict[str, Any]:
    return {
        "origin": origin,
        "url": policy.url,
        "final_url": policy.final_url,
        "status": policy.status.value,
        "http_status": policy.http_status,
        "outcome": policy.outcome,
        "fetched_at": policy.fetched_at,
        "expires_at": policy.expires_at,
        "digest": policy.digest,
        "size": len(policy.body) if policy.body is not None else None,
        "truncated": policy.truncated,
        "reason": policy.reason,
    }


#: event class -> the sink's handler of it (``Telemetry.record``)
_ON: dict[type, Callable[[Telemetry, Any], None]] = {
    Parked: Telemetry._parked,
    Released: Telemetry._released,
    RequeuedFromDead: Telemetry._requeued_from_dead,
    HeldRestored: Telemetry._held_restored,
    HeldUnrecorded: Telemetry._held_unrecorded,
    CrawlDelaySet: Telemetry._crawl_delay,
    CrawlDelayCapped: Telemetry._crawl_delay_capped,
    SlotDelayRaised: Telemetry._slot_delay_raised,
    DelayWaited: Telemetry._delay_waited,
    Fetched: Telemetry._fetched,
    Reused: Telemetry._reused,
    Standing: Telemetry._standing,
    Parsed: Telemetry._parsed,
    PageUses: Telemetry._page_uses,
    PageSaid: Telemetry._page_said,
    NoindexItem: Telemetry._noindex_item,
    RobotsServedFromCache: Telemetry._served_from_cache,
    ItemDropped: Telemetry._item_dropped,
    TdmrepFetched: Telemetry._tdmrep,
}

#: crawler -> its Telemetry (``Telemetry.of``); gone with the crawler
_SINKS: weakref.WeakKeyDictionary[Any, Telemetry] = weakref.WeakKeyDictionary()

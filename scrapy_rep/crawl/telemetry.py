"""A crawl's one record of what scrapy-rep did: Scrapy's stats, the per-origin counts of
the close report, and the audit log, written together by :class:`Telemetry` so that the
three never disagree.

What happened comes by direct call (``judged``, ``final``, ``parked``, ``fetched``, ...),
the pause family among them: ``paused``, ``resumed`` and ``page_refused``, one method
each whatever the pause's cause (robots.txt or a page). The audit log and the policy
archive are put in by ``components/audit_log.py`` only when asked for, so a crawl
without them never loads their writer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from scrapy import signals

from scrapy_rep.core.decision import DOWNLOAD, DROP, KEEP, REQUEUE, DecisionRecord
from scrapy_rep.core.directives import PageDirectives
from scrapy_rep.core.pause import BLOCKED, ORIGIN_PAUSED, PauseState
from scrapy_rep.core.policy import FetchResult, Policy, Status, classify
from scrapy_rep.core.pushback import REASONS as PUSHBACK_REASONS
from scrapy_rep.core.pushback import Pause
from scrapy_rep.core.report import CrawlCounts, report_lines
from scrapy_rep.core.uses import ANSWERS, REFUSED, USES
from scrapy_rep.crawl import meta as M
from scrapy_rep.robotstxt import Diagnostic
from scrapy_rep.robotstxt.text import printable
from scrapy_rep.runtime.per_crawler import PerCrawler
from scrapy_rep.runtime.settings import RepSettings

if TYPE_CHECKING:
    from scrapy_rep.runtime.audit import AuditLog, PolicyArchive

__all__ = ["FLUSH_EVERY", "Telemetry"]

logger = logging.getLogger(__name__)

#: pending stats increments handed to Scrapy's collector at once: a collector call per
#: key costs more than a dict update, and a judged request counts three or four keys
FLUSH_EVERY = 512

_CACHE = {outcome: f"rep/cache/{outcome}" for outcome in ("hit", "miss", "expired")}
#: the final answers of a held request handed over at close (not drops) -> their stats key
_HANDED_OVER = {REQUEUE: "rep/requeued", KEEP: "rep/held/saved"}
_JUDGEMENTS = {rep: f"rep/judgements/{rep}" for rep in ("allow", "disallow", "unresolved")}
_NO_KEYS: dict[str, str] = {}
_USE_KEYS: dict[str, dict[str, str]] = {
    use: {answer: f"rep/use/{use}/{answer}" for answer in ANSWERS} for use in USES
}


def _sink(crawler: Any) -> Telemetry:
    config = RepSettings.of(crawler)
    sink = Telemetry(
        crawler.stats, max_origins=config.cache_max_origins, report=config.report_enabled
    )
    # batched counts reach Scrapy's stats even in a crawl without the downloader side
    crawler.signals.connect(sink.flush, signal=signals.spider_closed)
    return sink


_SINKS = PerCrawler(_sink)


class Telemetry:
    """Stats, per-origin counts, audit records and the close report of one crawler."""

    def __init__(self, stats: Any, *, max_origins: int, report: bool = True) -> None:
        self.stats = stats
        #: increments waiting for Scrapy's collector, and how many since the last flush;
        #: the hot path updates them itself, every other caller uses :meth:`inc`
        self.pending: dict[str, int] = {}
        self.events = 0
        self.counts = CrawlCounts(max_origins)
        #: None unless ``components/audit_log.py`` put them here (``when_made``)
        self.audit: AuditLog | None = None
        self.archive: PolicyArchive | None = None
        #: where ``REP_REPORT``'s HTML page is written from the closed log, or None
        self.report_html: str | None = None
        #: the summary in the log at close (``REP_REPORT``)
        self.report = report
        #: what is said once a crawl: origins given up, unreadable files
        self.noted: set[str] = set()
        #: origins whose tdmrep.json came as an HTML page (the first few), and how many
        self.tdmrep_html: list[str] = []
        self.tdmrep_html_count = 0

    #: the crawler's one sink, made on first use and shared by every component; an optional
    #: component fills its slot (``audit``) with ``when_made``; ``running``: None if nothing
    #: made it (nothing was recorded)
    of = staticmethod(_SINKS.of)
    when_made = staticmethod(_SINKS.when_made)
    running = staticmethod(_SINKS.running)

    def inc(self, key: str) -> None:
        pending = self.pending
        pending[key] = pending.get(key, 0) + 1
        self.events += 1
        if self.events >= FLUSH_EVERY:
            self.flush()

    def flush(self) -> None:
        """Hand the batched increments to Scrapy's stats collector."""
        pending, self.pending, self.events = self.pending, {}, 0
        for key, count in pending.items():
            self.stats.inc_value(key, count)

    # -- requests -----------------------------------------------------------

    def judged(self, origin: str, record: DecisionRecord, cache: str) -> None:
        """A request judged against a policy (``cache``: hit, miss or expired)."""
        pending = self.pending  # the hot path: plain dict updates, keys made once
        rep = record["rep_decision"]
        for key in (_CACHE[cache], "rep/judgements", _JUDGEMENTS[rep]):
            pending[key] = pending.get(key, 0) + 1
        if rep == "disallow":
            self.inc("robotstxt/forbidden")  # dashboards watch Scrapy's own key
        self.events += 3
        uses = record.get("uses")
        if uses:
            for use, said in uses.items():
                answer = said["answer"]
                key = _USE_KEYS.get(use, _NO_KEYS).get(answer) or f"rep/use/{use}/{answer}"
                pending[key] = pending.get(key, 0) + 1
                if answer == REFUSED:
                    self.counts.add(origin, "uses_refused", use)
            self.events += len(uses)
        if record["action"] in (DOWNLOAD, DROP):
            self.final(origin, record)
        elif self.audit is not None:
            self.audit.write("decision", record)

    def final(self, origin: str | None, record: DecisionRecord, *, stat: str = "") -> None:
        """A request's last answer, whoever gave it: one ``decision`` record. ``stat``: the
        key a requeue counts under when it is not this worker's own (a dead worker's)."""
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
        """``request`` is answered anew: a download of the same URL (a page sent again
        after a pause, a retry) no longer counts; each request's final answer counts once."""
        previous = request.meta.get(M.DECISION)
        if (
            previous is not None
            and previous.get("action") == DOWNLOAD
            and previous.get("url") == request.url
        ):
            self._undownloaded(origin)

    def stopped(
        self, origin: str | None, judged: DecisionRecord | None, record: DecisionRecord
    ) -> None:
        """``record`` (a drop), the final answer of a request stopped after it was let
        through (``judged``, whose download no longer counts) or never judged."""
        if judged is not None and judged.get("action") == DOWNLOAD:
            self._undownloaded(origin)
        self.final(origin, record)

    def _undownloaded(self, origin: str | None) -> None:
        self.pending["rep/downloaded"] = self.pending.get("rep/downloaded", 0) - 1
        if origin is not None:
            self.counts.undownloaded(origin)

    def response(self, response: Any, request: Any, spider: Any = None) -> None:
        """With an audit log: each downloaded page's own HTTP status."""
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

    def item_dropped(self, url: str, reason: str, detail: str, *, media: bool = False) -> None:
        """An item dropped for what its page says (``noindex``, a use refused), or a media
        pipeline's download failed for what its own response says (``media``)."""
        fields = {"url": url, "reason": reason, "detail": detail}
        if media:
            self.inc(f"rep/media/dropped/{reason}")
            self.counts.media_dropped(reason)
            logger.debug(
                "scrapy-rep: a media download of %(url)s failed (%(reason)s): %(detail)s", fields
            )
        else:
            self.counts.item_dropped(reason)
            logger.debug("scrapy-rep: dropped an item of %(url)s (%(reason)s): %(detail)s", fields)
        if self.audit is not None:
            self.audit.write("item_dropped", {**fields, "media": True} if media else fields)

    # -- the end ------------------------------------------------------------

    def closed(self, reason: str, left: int, *, spider: str, token: str) -> None:
        """At spider close: the last counts, the warning for what was held, the summary and
        the per-origin records; the audit log closed. Both lines name the spider and the
        token: crawlers sharing a process share its log."""
        self.flush()
        count = self.tdmrep_html_count
        if count:
            named = self.tdmrep_html
            logger.info(
                "scrapy-rep: %(n)d tdmrep.json fetches got an HTML page (a soft 404), each read "
                "as no file: %(origins)s%(more)s",
                {
                    "n": count,
                    "origins": ", ".join(named),
                    "more": f" (and {count - len(named)} more)" if count > len(named) else "",
                },
            )
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

    # -- held requests ----------------------------------------------------------

    def parked(self, origin: str, url: str, reason: str, pause: PauseState | None = None) -> None:
        """A request held; ``pause``: the page's pause it is held for (its evidence)."""
        self.inc("rep/parked")
        self.inc(f"rep/parked/{reason}")
        if reason in PUSHBACK_REASONS:
            self.inc(f"rep/pushback/held/{reason}")
        self.counts.add(origin, "parked")
        if self.audit is not None:
            record: dict[str, Any] = {"url": url, "origin": origin, "reason": reason}
            if pause is not None:  # what the page said: its status, Retry-After, ...
                record.update(pause.evidence())
            self.audit.write("parked", record)

    def released(self, origin: str, url: str, reason: str = "") -> None:
        """A held request handed back to the scheduler (``reason``: why it was held)."""
        self.inc("rep/released")
        if reason in PUSHBACK_REASONS:
            self.inc(f"rep/pushback/released/{reason}")
        self.counts.add(origin, "released")
        if self.audit is not None:
            record = {"url": url, "origin": origin}
            if reason:
                record["reason"] = reason
            self.audit.write("released", record)

    # -- the pause family: pauses, whatever their cause, and refused pages ----------

    def paused(
        self,
        origin: str,
        state: PauseState,
        policy: Policy | None = None,
        page: Pause | None = None,
        shared: bool = False,
    ) -> None:
        """An origin paused for ``state.cause``: robots.txt (``policy``) or a page
        (``page``); ``shared``: another worker of the cluster saw it."""
        if state.cause == ORIGIN_PAUSED:
            if policy is not None:
                self.inc(f"rep/pauses/{policy.outcome}")
                logger.info(
                    "scrapy-rep: %(origin)s paused until %(until)s: %(reason)s",
                    {
                        "origin": printable(origin),  # a redirect's host: ESC, RLO, ...
                        "until": _clock(policy.expires_at),
                        "reason": printable(policy.reason),
                    },
                )
        elif page is not None:
            self._page_paused(page, shared)

    def _page_paused(self, pause: Pause, shared: bool) -> None:
        state = pause.state
        self.inc(f"rep/pushback/pauses/{state.cause}")
        self.counts.add(pause.origin, "page_pauses", state.cause)
        if state.cause == BLOCKED:
            statuses = "/".join(str(s) for s in pause.statuses) or str(state.status)
            logger.warning(
                "scrapy-rep: %(origin)s is blocked: it answered %(statuses)s to %(n)s pages in a "
                "row (first %(first)s, last %(last)s); no more requests are "
                "sent to it until %(until)s. Stop and diagnose: the site refuses this crawler; do "
                "not change its identity to get past it",
                {
                    "origin": pause.origin,
                    "statuses": statuses,
                    "n": pause.refusals,
                    "first": printable(pause.first_url or state.url),
                    "last": printable(pause.last_url or state.url),
                    "until": _clock(state.until),
                },
            )
        else:
            hint = "none" if state.retry_after is None else f"{state.retry_after:g}s"
            logger.info(
                "scrapy-rep: %(origin)s paused until %(until)s (%(cause)s): it answered %(status)d "
                "to %(url)s (Retry-After: %(hint)s)%(shared)s",
                {
                    "origin": pause.origin,
                    "until": _clock(state.until),
                    "cause": state.cause,
                    "status": state.status,
                    "url": printable(state.url),
                    "hint": hint,
                    "shared": ", seen by another worker" if shared else "",
                },
            )
        if self.audit is not None:
            self.audit.write(
                "page_pause",
                {
                    "origin": pause.origin,
                    **state.to_dict(),
                    "statuses": list(pause.statuses),
                    "first_url": pause.first_url or None,
                    "last_url": pause.last_url or None,
                    "shared": shared,
                },
            )

    def resumed(self, origin: str, state: PauseState, policy: Policy | None = None) -> None:
        """An origin's pause ended; ``policy``: robots.txt's new one, when it resumed it."""
        if state.cause == ORIGIN_PAUSED:
            if policy is not None:
                self.inc("rep/resumes")
                _note(logging.INFO, origin, f"resumed: {policy.reason}")
            return
        self.inc(f"rep/pushback/resumes/{state.cause}")
        logger.info(
            "scrapy-rep: %(origin)s resumed after its pause (%(cause)s): one request in flight, "
            "more as healthy responses come back",
            {"origin": origin, "cause": state.cause},
        )
        if self.audit is not None:
            self.audit.write(
                "page_resume",
                {
                    "origin": origin,
                    "cause": state.cause,
                    "started": state.started,
                    "until": state.until,
                },
            )

    def page_refused(self, status: int | None, unsent: bool = False) -> None:
        """A request whose response pushed back is held again; ``unsent``: taken back out
        of a download slot before it was sent."""
        self.inc("rep/pushback/unsent" if unsent else f"rep/pushback/refused/{status}")

    # -- robots.txt and tdmrep.json ----------------------------------------------

    def fetched(
        self,
        origin: str,
        result: FetchResult | None,
        policy: Policy | None,
        licenses: Sequence[str] = (),
    ) -> None:
        """A robots.txt fetch this crawler made and the policy it gave (None: it closed)."""
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
        if result is not None and result.truncated and policy.body is not None:
            self.note_once(  # once an origin: a refetch of the same big file says nothing new
                f"truncated {origin}",
                origin,
                logging.WARNING,
                f"robots.txt cut at {len(policy.body)} bytes, all RFC 9309 §2.5 asks a crawler "
                "to read: rules past them are not obeyed (decision records say policy_truncated)",
            )
        self.counts.fetched(origin, policy.status.value)
        archived = None  # with or without the audit log: provenance links it
        if self.archive is not None and policy.body is not None and policy.digest is not None:
            try:  # once per digest
                archived = self.archive.keep(policy.digest, policy.body)
            except OSError as exc:
                logger.warning("scrapy-rep: cannot archive robots.txt: %(error)s", {"error": exc})
        if self.audit is not None:
            record = {**fetch_record(origin, policy), "archive": archived}
            self.audit.write("fetch", {**record, "licenses": list(licenses)})

    def reused(self, origin: str, policy: Policy) -> None:
        """A new policy this crawler did not fetch: another crawler's fetch, or the store's."""
        self.inc("rep/fetch/reused")
        self.counts.fetched(origin, policy.status.value, reused=True)

    def standing(self, origin: str, policy: Policy) -> None:
        """Where an origin stands after a new policy that did not pause it."""
        if policy.status is Status.UNRESOLVED:  # said once, however often refetched
            self.note_once(origin, origin, logging.WARNING, policy.reason)
        elif policy.status is Status.UNREACHABLE or policy.stale_since is not None:
            _note(logging.WARNING, origin, policy.reason)
        elif policy.status is Status.UNAVAILABLE:
            _note(logging.INFO, origin, policy.reason)

    def parsed(self, origin: str, diagnostics: Sequence[Diagnostic]) -> None:
        """A robots.txt this crawler fetched, parsed: its problems."""
        if not diagnostics:
            return
        self.inc("rep/robots/with_diagnostics")
        unreadable = next((d for d in diagnostics if d.kind == "utf-16"), None)
        if unreadable is not None:
            text = f"robots.txt {unreadable.text}"
            self.note_once(f"unreadable {origin}", origin, logging.WARNING, text)

    def note_once(self, key: str, origin: str, level: int, text: str) -> None:
        """:func:`_note`, the first time ``key`` is noted in this crawl."""
        if key not in self.noted:
            self.noted.add(key)
            _note(level, origin, text)

    # -- Crawl-delay ---------------------------------------------------------------

    def crawl_delay_capped(self, origin: str, asked: float, cap: float) -> None:
        """An origin asked for a Crawl-delay longer than ``REP_CRAWL_DELAY_MAX``."""
        self.inc("rep/crawl_delay/capped")
        logger.info(
            "scrapy-rep: %(origin)s asks for Crawl-delay %(asked)ss, capped at %(cap)ss",
            {"origin": printable(origin), "asked": asked, "cap": cap},
        )

    def delay_waited(self, seconds: float) -> None:
        """A request waited for its send time under the cluster's Crawl-delay."""
        self.inc("rep/cluster/delay-waits")
        self.counts.delay_waited(seconds)

    # -- pages, walls, identity -----------------------------------------------------

    def page_said(self, url: str, token: str, page: PageDirectives) -> None:
        """What a response's page directives say that the crawl acts on, and where."""
        for date in page.invalid_dates:
            self.inc("rep/page/invalid_date")
            logger.debug(
                "scrapy-rep: %(url)s: unavailable_after %(date)r is no date; ignored",
                {"url": url, "date": date},
            )
        if page.nofollow:
            self.inc("rep/page/nofollow")
        if page.noindex:
            self.inc("rep/page/noindex")
        said = [f"{n} ({page.source(n)})" for n in ("noindex", "nofollow") if getattr(page, n)]
        if said:
            logger.debug(
                "scrapy-rep: %(url)s says %(said)s to %(token)r",
                {"url": url, "said": ", ".join(said), "token": token},
            )

    def noindex_item(self, url: str, said: str, kept: bool) -> None:
        """An item of a ``noindex`` page (``said``: where): dropped, or ``kept``."""
        if kept:
            self.inc("rep/page/noindex/items-kept")
            return
        self.inc("rep/page/noindex/items-dropped")
        self.item_dropped(url, "page-noindex", f"noindex ({said})")

    def licence_wall(
        self, origin: str, url: str, wall: dict[str, Any], walled: bool, licenses: Sequence[str]
    ) -> None:
        """A licence or payment wall; ``walled``: the ``REP_BLOCK_AFTER``-th refusal in a row
        blocked its origin; ``licenses``: its robots.txt's RSL ``License:`` URLs."""
        self.inc(f"rep/walls/{wall['kind']}")
        if walled:
            self.inc("rep/walls/origins-walled")
        self.counts.wall(origin, wall["said"])
        logger.info(
            "scrapy-rep: %(url)s is behind a %(kind)s wall (%(said)s)%(walled)s",
            {
                "url": printable(url),
                "kind": wall["kind"],
                "said": printable(wall["said"]),  # the site's crawler-price, licence server
                "walled": "; its origin's other requests are dropped now" if walled else "",
            },
        )
        if self.audit is not None:
            record = {"url": url, "origin": origin, **wall, "walled": walled}
            self.audit.write("licence_wall", {**record, "licenses": list(licenses)})

    def identity_mismatch(self, record: dict[str, str], first: bool) -> None:
        """A request leaving under an identity it should not have (``core/identity.py``):
        ``record`` is its audit record; one WARNING per origin and reason (``first``)."""
        reason = record["reason"]
        self.inc(f"rep/identity/{reason}")
        if first:
            logger.warning(
                "scrapy-rep: %(origin)s: %(reason)s, %(done)s (%(url)s): %(detail)s; said once "
                "per origin, see the stats rep/identity/*",
                {
                    "origin": record["origin"],
                    "reason": reason,
                    "done": "stopped" if record["action"] == "drop" else "sent anyway",
                    "url": printable(record["url"]),
                    "detail": printable(record["detail"]),
                },
            )
        if self.audit is not None:
            self.audit.write("identity", record)


def fetch_record(origin: str, policy: Policy) -> dict[str, Any]:
    """The audit's record of a fetched file (robots.txt or tdmrep.json) and its policy."""
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


def _clock(timestamp: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(timestamp))


def _note(level: int, origin: str, text: str) -> None:
    logger.log(
        level,
        "scrapy-rep: %(origin)s: %(text)s",
        {"origin": printable(origin), "text": printable(text)},
    )

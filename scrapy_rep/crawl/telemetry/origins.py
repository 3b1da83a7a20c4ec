"""The sink's handlers for what each origin's files gave: robots.txt fetched or reused,
the origin's standing (paused, resumed, unreadable), its problems, its Crawl-delay, and
its tdmrep.json."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from scrapy_rep.core.events import (
    CrawlDelayCapped,
    CrawlDelaySet,
    DelayWaited,
    Fetched,
    LicenceWall,
    Parsed,
    Reused,
    RobotsServedFromCache,
    SlotDelayRaised,
    Standing,
    TdmrepFetched,
)
from scrapy_rep.core.policy import FetchResult, Policy, Status, classify
from scrapy_rep.robotstxt.text import printable

if TYPE_CHECKING:
    from scrapy_rep.crawl.telemetry.sink import Sink

logger = logging.getLogger(__package__)  # the sink's one logger, whichever part speaks


# -- robots.txt -----------------------------------------------------------------


def fetched(sink: Sink, event: Fetched) -> None:
    """A robots.txt fetch's one record: its stats, the origin's count and the audit's
    ``fetch`` record together."""
    origin, result, policy = event.origin, event.result, event.policy
    if result is not None:
        sink.inc("rep/fetch/count")
        outcome = classify(result)
        sink.inc(f"rep/fetch/outcome/{outcome}")
        if result.error:
            sink.inc(f"rep/fetch/error/{result.error}")
        if result.truncated:
            sink.inc("rep/fetch/truncated")
        if result.redirects:
            sink.inc("rep/fetch/redirected")
    if policy is None:
        return
    if result is not None and result.truncated and policy.body is not None:
        _note_once(  # once an origin: a refetch of the same big file says nothing new
            sink,
            f"truncated {origin}",
            origin,
            logging.WARNING,
            f"robots.txt cut at {len(policy.body)} bytes, all RFC 9309 §2.5 asks a crawler "
            "to read: rules past them are not obeyed (decision records say policy_truncated)",
        )
    sink.counts.fetched(origin, policy.status.value)
    # archived with or without the audit log: item provenance links the file too
    archived = _archive(sink, policy)
    if sink.audit is not None:
        record = {**fetch_record(origin, policy), "archive": archived}
        sink.audit.write("fetch", {**record, "licenses": list(event.licenses)})


def reused(sink: Sink, event: Reused) -> None:
    sink.inc("rep/fetch/reused")
    sink.counts.reused(event.origin, event.policy.status.value)


def standing(sink: Sink, event: Standing) -> None:
    """Log where an origin stands after a new policy that did not pause it."""
    origin, policy = event.origin, event.policy
    status = policy.status
    if status is Status.UNRESOLVED:
        _note_once(sink, origin, origin, logging.WARNING, policy.reason)  # however often refetched
    elif status is Status.UNREACHABLE or policy.stale_since is not None:
        _note(logging.WARNING, origin, policy.reason)
    elif status is Status.UNAVAILABLE:
        _note(logging.INFO, origin, policy.reason)


def robots_paused(sink: Sink, origin: str, policy: Policy) -> None:
    """A pause whose cause is robots.txt (``origin-paused``): counted by outcome, said."""
    sink.inc(f"rep/pauses/{policy.outcome}")
    logger.info(
        "scrapy-rep: %(origin)s paused until %(until)s: %(reason)s",
        {
            "origin": printable(origin),  # a redirect's host can carry ESC, BEL, RLO, ...
            "until": clock_time(policy.expires_at),
            "reason": printable(policy.reason),
        },
    )


def robots_resumed(sink: Sink, origin: str, policy: Policy) -> None:
    """A robots.txt pause ended by ``policy``."""
    sink.inc("rep/resumes")
    _note(logging.INFO, origin, f"resumed: {policy.reason}")


def parsed(sink: Sink, event: Parsed) -> None:
    """A file's problems counted; an unreadable one said, once."""
    origin, diagnostics = event.origin, event.diagnostics
    if not diagnostics:
        return
    sink.inc("rep/robots/with_diagnostics")
    unreadable = next((d for d in diagnostics if d.kind == "utf-16"), None)
    if unreadable is not None:
        _note_once(
            sink, f"unreadable {origin}", origin, logging.WARNING, f"robots.txt {unreadable.text}"
        )


def served_from_cache(sink: Sink, event: RobotsServedFromCache) -> None:
    sink.inc("rep/robots/served_from_cache")


# -- Crawl-delay ----------------------------------------------------------------


def crawl_delay(sink: Sink, event: CrawlDelaySet) -> None:
    sink.counts.crawl_delay(event.origin, event.delay)


def crawl_delay_capped(sink: Sink, event: CrawlDelayCapped) -> None:
    sink.inc("rep/crawl_delay/capped")
    logger.info(
        "scrapy-rep: %(origin)s asks for Crawl-delay %(asked)ss, capped at %(cap)ss",
        {"origin": printable(event.origin), "asked": event.asked, "cap": event.cap},
    )


def slot_delay_raised(sink: Sink, event: SlotDelayRaised) -> None:
    sink.inc("rep/crawl_delay/applied")


def delay_waited(sink: Sink, event: DelayWaited) -> None:
    sink.inc("rep/cluster/delay-waits")
    sink.counts.delay_waited(event.seconds)


# -- tdmrep.json ----------------------------------------------------------------


def tdmrep(sink: Sink, event: TdmrepFetched) -> None:
    """A tdmrep.json fetch's one record: the fetch counted, its problems said once, audited."""
    origin, result, policy, rules = event.origin, event.result, event.policy, event.rules
    if result is not None:
        sink.inc("rep/tdmrep/fetch/count")
        outcome = classify(result)
        sink.inc(f"rep/tdmrep/fetch/outcome/{outcome}")
    if policy is None:
        return
    if rules is None:
        sink.inc("rep/tdmrep/unknown")  # 5xx, network: nothing known until the next TTL
    elif len(rules):
        sink.inc("rep/tdmrep/with_rules")
    if rules is not None and rules.diagnostics and _html(result):
        # a soft 404 (an HTML page for any path, as many sites answer): no file, said once a
        # crawl at close (Sink.closed), not a warning an origin
        sink.inc("rep/tdmrep/html")
        if len(sink.tdmrep_html) < _HTML_NAMED:
            sink.tdmrep_html.append(origin)
        sink.tdmrep_html_count += 1
    elif rules is not None and rules.diagnostics:
        sink.inc("rep/tdmrep/with_diagnostics")
        more = len(rules.diagnostics) - 1
        text = rules.diagnostics[0] + (f" (and {more} more)" if more else "")
        _note_once(sink, f"tdmrep {origin}", origin, logging.WARNING, f"tdmrep.json {text}")
    if sink.audit is not None:
        sink.audit.write(
            "tdmrep",
            {
                **fetch_record(origin, policy),
                "rules": len(rules) if rules is not None else None,
                "diagnostics": list(rules.diagnostics) if rules is not None else [],
            },
        )


#: origins named in the close's line on tdmrep.json answered by an HTML page
_HTML_NAMED = 5


def _html(result: FetchResult | None) -> bool:
    """Whether a fetched file came as an HTML page (``Content-Type: text/html``, XHTML)."""
    if result is None:
        return False
    media = result.headers.get("content-type", "").split(";")[0].strip().lower()
    return media in ("text/html", "application/xhtml+xml")


def tdmrep_html_summary(sink: Sink) -> None:
    """At close: the tdmrep.json fetches that got an HTML page, in one INFO line naming the
    first origins (counted by fetch: an origin refetched after its TTL counts again)."""
    count = sink.tdmrep_html_count
    if not count:
        return
    more = f" (and {count - len(sink.tdmrep_html)} more)" if count > len(sink.tdmrep_html) else ""
    logger.info(
        "scrapy-rep: %(n)d tdmrep.json fetches got an HTML page (a soft 404), each read as "
        "no file: %(origins)s%(more)s",
        {"n": count, "origins": ", ".join(sink.tdmrep_html), "more": more},
    )


# -- what they share ------------------------------------------------------------


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


def clock_time(timestamp: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(timestamp))


def _archive(sink: Sink, policy: Policy) -> str | None:
    """Keep the body in REP_POLICY_ARCHIVE (once per digest); its path, or None."""
    if sink.archive is None or policy.body is None or policy.digest is None:
        return None
    try:
        return sink.archive.keep(policy.digest, policy.body)
    except OSError as exc:
        logger.warning("scrapy-rep: cannot archive robots.txt: %(error)s", {"error": exc})
        return None


def _note(level: int, origin: str, text: str) -> None:
    logger.log(
        level,
        "scrapy-rep: %(origin)s: %(text)s",
        {"origin": printable(origin), "text": printable(text)},
    )


def _note_once(sink: Sink, key: str, origin: str, level: int, text: str) -> None:
    """:func:`_note`, the first time ``key`` is noted in this crawl."""
    if key not in sink.noted:
        sink.noted.add(key)
        _note(level, origin, text)


def licence_wall(sink: Sink, event: LicenceWall) -> None:
    """A licence or payment wall met: counted, per origin for the report, and audited."""
    wall = event.wall
    sink.inc(f"rep/walls/{wall['kind']}")
    if event.walled:
        sink.inc("rep/walls/origins-walled")
    sink.counts.wall(event.origin, wall["said"])
    logger.info(
        "scrapy-rep: %(url)s is behind a %(kind)s wall (%(said)s)%(walled)s",
        {
            "url": printable(event.url),
            "kind": wall["kind"],
            "said": printable(wall["said"]),  # the site's crawler-price, licence server
            "walled": "; its origin's other requests are dropped now" if event.walled else "",
        },
    )
    if sink.audit is not None:
        record = {"url": event.url, "origin": event.origin, **wall, "walled": event.walled}
        sink.audit.write("licence_wall", {**record, "licenses": list(event.licenses)})


#: event class -> its handler here
ON: Mapping[type, Callable[[Sink, Any], None]] = {
    Fetched: fetched,
    Reused: reused,
    Standing: standing,
    Parsed: parsed,
    RobotsServedFromCache: served_from_cache,
    CrawlDelaySet: crawl_delay,
    CrawlDelayCapped: crawl_delay_capped,
    SlotDelayRaised: slot_delay_raised,
    DelayWaited: delay_waited,
    TdmrepFetched: tdmrep,
    LicenceWall: licence_wall,
}

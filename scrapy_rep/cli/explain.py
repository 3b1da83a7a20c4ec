"""``scrapy-rep explain LOG URL``: why a URL was downloaded, dropped or held, from the audit log.

Reads the JSON Lines log of ``REP_DECISION_LOG`` in one pass, keeping only
the records of that URL and the robots.txt fetches of its origin, and
prints the latest decision (rule, line, group, the policy's version and
when it was fetched), the line itself from ``REP_POLICY_ARCHIVE`` when the
body was archived, and the URL's history (parked, released, response).

With ``REP_USES``, it also tells what the response itself said (the
``page_use`` record: each declared use's answer and where it was said) and
what was dropped for it (``item_dropped`` records: the page's items, or a
media pipeline's file that failed).

Exit status: 0 the URL was last let through (and nothing of it dropped for
what it said), 1 it was not, or its items were dropped or its file failed
for what the response said, 2 no record of it (or an unreadable log).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from typing import Any

from scrapy_rep.cli.subcommand import subcommand
from scrapy_rep.core.decision import (
    EXCLUDED,
    KEEP,
    PAGE,
    REQUEUE,
    REQUEUED_FROM_DEAD_DETAIL,
    WALL,
)
from scrapy_rep.core.origin import origin_or_none
from scrapy_rep.core.pushback import REASONS as PUSHBACK_REASONS
from scrapy_rep.core.uses import shown
from scrapy_rep.robotstxt.text import printable
from scrapy_rep.runtime.audit import Skipped, read_records

EXIT_DOWNLOADED, EXIT_NOT_DOWNLOADED, EXIT_ERROR = 0, 1, 2
#: record types that concern one URL (``requeued`` and ``kept``: a dead worker's requeue of a
#: request recorded without its fields, and how older logs said what a ``requeue`` / ``keep``
#: decision says now)
_URL_TYPES = (
    "decision",
    "parked",
    "released",
    "requeued",
    "kept",
    "response",
    "subrequest",
    "page_use",
    "item_dropped",
    "identity",
)
#: records that carry a decision (a browser sub-request's is judged by the browser guard)
_DECISION_TYPES = ("decision", "subrequest")
#: how the detail of a dead worker's request, requeued by a survivor, begins
FROM_DEAD_PREFIX = REQUEUED_FROM_DEAD_DETAIL.split("%s")[0]
_NEWLINES = re.compile(r"\r\n|\r|\n")  # the parser's line breaks, so line numbers agree
_SUGGEST = 5


class _NoRecord(Exception):
    """Nothing in the log answers the question."""


def add_parser(subparsers: Any) -> None:
    """Register ``explain`` on the ``scrapy-rep`` command's subparsers."""
    explain = subcommand(
        subparsers,
        "explain",
        "say why a URL was downloaded, dropped or held, from an audit log",
        __doc__,
    )
    explain.add_argument("log", metavar="LOG", help="the REP_DECISION_LOG file")
    explain.add_argument("url", metavar="URL", help="the URL, as the crawl requested it")
    explain.add_argument(
        "--archive",
        metavar="DIR",
        help="the REP_POLICY_ARCHIVE directory, if it has moved since the crawl",
    )
    explain.add_argument(
        "--crawl",
        metavar="ID",
        help="the crawl to explain (records' `crawl` field), when several share the log; "
        "default: the last one that recorded the URL",
    )
    explain.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        action, lines = explain(args.log, args.url, args.archive, args.crawl)
    except OSError as exc:
        print(f"scrapy-rep: error: cannot read {args.log}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_ERROR
    except _NoRecord as exc:
        print(printable(f"scrapy-rep: error: {exc}"), file=sys.stderr)
        return EXIT_ERROR
    print("\n".join(printable(line) for line in lines))  # rules and URLs quote the site
    return EXIT_DOWNLOADED if action == "download" else EXIT_NOT_DOWNLOADED


#: the fields a record that carries a decision cannot do without
_DECISION_FIELDS = ("action", "rep_decision", "reason", "product_token")


def _readable(record: dict[str, Any]) -> bool:
    """A well-formed record (:func:`~scrapy_rep.runtime.audit.well_formed`); one that
    carries a decision has the fields explain prints it with."""
    return record.get("type") not in _DECISION_TYPES or all(
        isinstance(record.get(name), str) for name in _DECISION_FIELDS
    )


def _candidates(url: str) -> set[str]:
    """The URL as given, and with the root path a crawler adds (``http://h`` -> ``http://h/``)."""
    found = {url}
    _, sep, rest = url.partition("://")
    if sep and "/" not in rest:
        found.add(url + "/")
    return found


def explain(
    log: str, url: str, archive_dir: str | None = None, crawl: str | None = None
) -> tuple[str, list[str]]:
    """The URL's last action (download, drop, park) and the lines that say why.

    Raises :class:`_NoRecord` when the log never mentions the URL.
    """
    origin = origin_or_none(url)
    wanted = _candidates(url)
    events: list[dict[str, Any]] = []
    fetches: list[dict[str, Any]] = []
    pauses: list[dict[str, Any]] = []  # what the origin's pages said (429, 503, 403s)
    nearby: list[str] = []
    skipped = Skipped()
    for record in read_records(log, skipped=skipped):
        if not _readable(record):
            skipped.malformed += 1
            continue
        kind = record.get("type")
        if kind in _URL_TYPES and record.get("url") in wanted:
            events.append(record)
        elif kind == "fetch" and origin is not None and record.get("origin") == origin:
            fetches.append(record)
        elif kind == "page_pause" and origin is not None and record.get("origin") == origin:
            pauses.append(record)
        elif (
            kind == "decision"
            and origin is not None
            and record.get("origin") == origin
            and len(nearby) < _SUGGEST
            and record.get("url") not in nearby
        ):
            nearby.append(str(record.get("url")))
    crawls = list(dict.fromkeys(str(e.get("crawl", "")) for e in events))
    if crawl is None and events:  # crawls sharing the log: one crawl's story, never a mix
        crawl = str(events[-1].get("crawl", ""))  # the last to record the URL
    if crawl is not None:
        events = [e for e in events if str(e.get("crawl", "")) == crawl]
    decisions = [e for e in events if e["type"] in _DECISION_TYPES]
    if skipped.malformed:
        print(
            f"scrapy-rep: skipped {skipped.malformed} malformed records of {printable(log)}",
            file=sys.stderr,
        )
    if not events:
        hint = f"; decisions on that origin include: {', '.join(nearby)}" if nearby else ""
        where = f" by crawl {crawl}" if crawls else ""
        raise _NoRecord(f"no record of {url}{where} in {log}{hint}")
    lines = [url]
    if len(crawls) > 1:
        others = ", ".join(c or "(unnamed)" for c in crawls if c != crawl)
        lines.append(f"  crawl     {crawl or '(unnamed)'} (also recorded by {others}: --crawl)")
    pages = [e for e in events if e["type"] == "page_use"]
    drops = [e for e in events if e["type"] == "item_dropped"]
    if decisions:
        decision = decisions[-1]
        final = decision["action"]
        lines += _decision_lines(decision, fetches, archive_dir, asked=bool(pages))
        said = _page_lines(pages, drops)
        if said:
            lines[2:2] = said  # after the decision line: what the response itself said
        if drops and final == "download":
            final = "dropped-items"
    else:
        last = events[-1]
        final = "park"
        if pages:  # downloaded unjudged (dont_obey_robotstxt): the response still answered
            final = "dropped-items" if drops else "download"
            lines.append("  no decision recorded (not judged: dont_obey_robotstxt)")
            lines += _page_lines(pages, drops)
        else:
            lines.append(
                f"  no decision recorded; last seen {last['type']} ({last.get('reason', '-')})"
            )
    lines += _pause_lines(events, pauses)
    lines.append("  history")
    for event in _merged(events, pauses):
        lines.append(f"    {_when(event.get('at'), True)}  {_event(event)}")
    return final, lines


def _page_lines(pages: list[dict[str, Any]], drops: list[dict[str, Any]]) -> list[str]:
    """What the response said about use (its latest ``page_use``) and what was dropped."""
    lines: list[str] = []
    uses = pages[-1].get("uses") if pages else None
    if isinstance(uses, dict) and all(isinstance(said, dict) for said in uses.values()):
        lines.extend(f"  page use  {line}" for line in shown(uses))
    items: dict[tuple[str, str], int] = {}
    for drop in drops:
        if drop.get("media"):
            lines.append(f"  media     failed ({drop.get('reason')}): {drop.get('detail')}")
        else:
            key = (str(drop.get("reason")), str(drop.get("detail")))
            items[key] = items.get(key, 0) + 1
    for (reason, detail), n in items.items():
        lines.append(f"  items     {n} dropped ({reason}): {detail}")
    return lines


def _pause_lines(events: list[dict[str, Any]], pauses: list[dict[str, Any]]) -> list[str]:
    """The pause a page asked for, when the URL was held for one: who said what, until when."""
    if not pauses or not any(e.get("reason") in PUSHBACK_REASONS for e in events):
        return []
    pause = pauses[-1]
    hint = pause.get("retry_after")
    lines = [
        f"  paused    the origin was {pause.get('cause')}: HTTP {pause.get('status')} to "
        f"{pause.get('url')} (Retry-After: {'none' if hint is None else f'{hint}s'}), "
        f"from {_when(pause.get('started'), True)} until {_when(pause.get('until'), True)}"
    ]
    if pause.get("first_url"):
        lines.append(
            f"  refused   {pause.get('first_url')} .. {pause.get('last_url')} "
            f"(HTTP {'/'.join(str(s) for s in pause.get('statuses') or [])}): stop and diagnose"
        )
    return lines


def _merged(events: list[dict[str, Any]], pauses: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The URL's records and its origin's pauses, in time order (the log's order kept)."""
    if not pauses:
        return events
    timed = [(e.get("at"), n, e) for n, e in enumerate([*events, *pauses])]
    return [e for _, _, e in sorted(timed, key=lambda t: (_sort_time(t[0]), t[1]))]


def _sort_time(at: Any) -> float:
    return float(at) if isinstance(at, (int, float)) else 0.0


def _decision_lines(
    decision: dict[str, Any],
    fetches: list[dict[str, Any]],
    archive_dir: str | None,
    *,
    asked: bool = False,
) -> list[str]:
    verdict = decision["rep_decision"].upper()
    lines = [
        f"  decision  {verdict} -> {decision['action']} ({decision['reason']}), "
        f"token {decision['product_token']}, at {_when(decision.get('at'))}",
    ]
    if decision.get("collection_decision") not in (None, "approved", "unresolved"):
        lines.append(f"  scope     the collection policy said {decision['collection_decision']}")
    if decision.get("matched_rule") and decision.get("policy_status") == PAGE:
        lines.append(f"  directive {decision['matched_rule']}")
    elif decision.get("policy_status") == EXCLUDED:  # REP_EXCLUDE's entry, and its line
        entry = str(decision.get("matched_rule") or "").removeprefix("exclude: ")
        line = decision.get("matched_line")
        lines.append(f"  excluded  by the entry {entry!r}" + (f" (line {line})" if line else ""))
    elif decision.get("policy_status") == WALL:  # what the wall asked
        lines.append(f"  wall      {decision.get('matched_rule') or '-'}")
    elif decision.get("matched_rule"):
        lines.append(f"  rule      {decision['matched_rule']} (line {decision['matched_line']})")
    if decision.get("group"):
        lines.append(f"  group     {decision['group']}")
    if decision.get("detail"):
        lines.append(f"  why       {decision['detail']}")
    uses = decision.get("uses")
    if isinstance(uses, dict):  # the request's answer; "before" it when the page answered too
        label = "before    " if asked else "use       "
        lines.extend(f"  {label}{line}" for line in shown(uses))
    if decision.get("policy_status") == PAGE:  # the linking page decided, not robots.txt
        lines.append("  source    the page's directives, not robots.txt")
        return lines
    if decision.get("policy_status") == EXCLUDED:
        lines.append("  source    REP_EXCLUDE, not robots.txt (never fetched)")
        return lines
    if decision.get("policy_status") == WALL:
        lines.append("  source    the response: a licence or payment wall, not robots.txt")
        return lines
    fetch = next(
        (f for f in reversed(fetches) if f.get("fetched_at") == decision.get("policy_fetched_at")),
        None,
    )
    source = decision.get("policy_final_url") or decision.get("policy_url") or "-"
    if decision.get("policy_final_url") not in (None, decision.get("policy_url")):
        source = f"{decision['policy_url']} -> {decision['policy_final_url']}"
    version = decision.get("policy_digest") or "none (no rules)"
    lines.append(
        f"  policy    {decision.get('policy_status')}: robots.txt "
        f"{decision.get('policy_http_status') or '-'} from {source}"
    )
    lines.append(
        f"            version {version}, fetched {_when(decision.get('policy_fetched_at'))}"
    )
    if fetch is not None:
        extra = [fetch.get("reason") or ""]
        if fetch.get("truncated"):
            extra.append(f"cut at {fetch.get('size')} bytes")
        lines.append(f"            {'; '.join(e for e in extra if e)}")
    if fetch is not None:  # RSL License lines: file-wide, recorded, not interpreted
        lines.extend(
            f"  licence   {url} (RSL, not interpreted)" for url in fetch.get("licenses") or ()
        )
    quoted = _archived_line(decision, fetch, archive_dir)
    if quoted:
        lines.append(quoted)
    return lines


def _archived_line(
    decision: dict[str, Any], fetch: dict[str, Any] | None, archive_dir: str | None
) -> str | None:
    digest, number = decision.get("policy_digest"), decision.get("matched_line")
    if not digest or not number:
        return None
    paths = [os.path.join(archive_dir, f"{digest}.txt")] if archive_dir else []
    if fetch is not None and fetch.get("archive"):
        paths.append(str(fetch["archive"]))
    for path in paths:
        try:
            with open(path, "rb") as f:
                body = f.read()
        except OSError:
            continue
        text = body.decode("utf-8", "replace")
        found = _NEWLINES.split(text)
        if 0 < number <= len(found):
            return f"  line {number:<4} {found[number - 1].strip()}    ({path})"
    return None


def _event(event: dict[str, Any]) -> str:
    kind = event["type"]
    if kind == "decision" and event.get("action") == REQUEUE:
        if event.get("detail", "").startswith(FROM_DEAD_PREFIX):  # a survivor's record
            return f"requeued  held ({event['reason']}); {event['detail']}"
        return f"requeued  held ({event['reason']}); pushed back into the shared queue at close"
    if kind == "decision" and event.get("action") == KEEP:
        return f"kept      held ({event['reason']}); kept in the JOBDIR for the resumed crawl"
    if kind == "decision" and event.get("policy_status") == WALL:
        return f"wall      the response -> {event['action']} ({event['reason']})"
    if kind == "decision":
        return f"judged    {event['rep_decision']} -> {event['action']} ({event['reason']})"
    if kind == "subrequest":
        return (
            f"browser   {event['rep_decision']} -> {event['action']} ({event['reason']}), "
            f"{event.get('resource_type', '-')} of {event.get('page', '-')}"
            + (f", redirect hop {event['hop']}" if event.get("hop") else "")
        )
    if kind == "response":
        return f"response  HTTP {event['target_status']} from the target itself"
    if kind == "page_use":
        uses = event.get("uses")
        answers = uses.items() if isinstance(uses, dict) else ()
        return "page use  " + (
            ", ".join(
                f"{use} {said.get('answer') if isinstance(said, dict) else said}"
                for use, said in answers
            )
            or "-"
        )
    if kind == "item_dropped":
        what = "media     file failed" if event.get("media") else "dropped   an item"
        return f"{what} ({event.get('reason', '-')}): {event.get('detail', '')}"
    if kind == "released":
        if event.get("reason") in PUSHBACK_REASONS:
            return f"released  its origin's pause ({event['reason']}) ended"
        return "released  its origin's robots.txt could be judged again"
    if kind == "identity":
        return f"identity  {event.get('reason', '-')} ({event.get('action', '-')}): " + str(
            event.get("detail", "")
        )
    if kind == "parked" and event.get("page"):
        hint = event.get("retry_after")
        return (
            f"parked    {event.get('reason')}: HTTP {event.get('status')} to {event.get('page')} "
            f"(Retry-After: {'none' if hint is None else f'{hint}s'}), until "
            f"{_when(event.get('until'), True)}"
        )
    if kind == "page_pause":
        return (
            f"paused    origin {event.get('cause')}: HTTP {event.get('status')} to "
            f"{event.get('url')}, until {_when(event.get('until'), True)}"
        )
    return f"{kind:<9} {event.get('reason', '-')}"


def _when(timestamp: Any, precise: bool = False) -> str:
    if not isinstance(timestamp, (int, float)):
        return "-"
    try:
        text = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timestamp))
    except (OverflowError, OSError, ValueError):  # a time no calendar shows
        return "-"
    return f"{text}.{int(timestamp * 1000) % 1000:03d}" if precise else text

"""``scrapy-rep report LOG -o report.html``: the audit log as one page for a person.

The page (one self-contained HTML file, no network) answers "what did our
crawler fetch, from whom, and why": each origin's robots.txt over time,
counts by decision and reason, what was dropped and by which rule and line,
held requests and their fate, and the uses sites refused.

A log several crawls wrote at once (two spiders of one process, scrapyd jobs sharing
a file) gives the page of one of them: ``--crawl ID`` (the records' ``crawl`` field),
by default the one that started last.

Exit status: 0 written, 2 the log cannot be read or the page cannot be written.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from scrapy_rep.cli.subcommand import subcommand
from scrapy_rep.report.html import write_report
from scrapy_rep.robotstxt.text import printable
from scrapy_rep.runtime.audit import Skipped, read_records


def add_parser(subparsers: Any) -> None:
    """Register ``report`` on the ``scrapy-rep`` command's subparsers."""
    report = subcommand(
        subparsers, "report", "write the audit log as one HTML page for a person to read", __doc__
    )
    report.add_argument("log", metavar="LOG", help="the REP_DECISION_LOG file")
    report.add_argument(
        "-o", "--output", metavar="FILE", default="report.html", help="default: report.html"
    )
    report.add_argument(
        "--crawl",
        metavar="ID",
        help="the crawl to show (records' `crawl` field), when several share the log; "
        "default: the one that started last",
    )
    report.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        crawls = list(dict.fromkeys(str(r.get("crawl", "")) for r in read_records(args.log)))
        crawl = args.crawl
        if crawl is not None and crawl not in crawls:
            known = ", ".join(c or "(unnamed)" for c in crawls) or "none"
            print(
                printable(f"scrapy-rep: error: no crawl {crawl} in {args.log}: {known}"),
                file=sys.stderr,
            )
            return 2
        if crawl is None and len(crawls) > 1:  # never one page of several crawls' records
            crawl = crawls[-1]
            names = ", ".join(c or "(unnamed)" for c in crawls)
            print(
                printable(
                    f"{args.log} holds {len(crawls)} crawls ({names}); this page shows "
                    f"crawl {crawl or '(unnamed)'}; choose another with --crawl"
                ),
                file=sys.stderr,
            )
        skipped = Skipped()
        story = write_report(args.log, args.output, crawl=crawl, skipped=skipped)
    except OSError as exc:
        print(printable(f"scrapy-rep: error: {exc}"), file=sys.stderr)
        return 2
    if skipped.malformed:
        print(
            printable(f"scrapy-rep: skipped {skipped.malformed} malformed records of {args.log}"),
            file=sys.stderr,
        )
    items, media = sum(story.items_dropped.values()), sum(story.media_failed.values())
    pages = f"; for what pages said: {items} items dropped, {media} media files failed"
    print(
        f"{args.output}: {len(story.origins)} origins, {story.records} records "
        f"({story.downloaded} downloaded, {story.drops.total} dropped, {story.holds.total} held"
        + (pages if items or media else "")
        + ")",
        file=sys.stderr,
    )
    return 0

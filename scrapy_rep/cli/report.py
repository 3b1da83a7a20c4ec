"""``scrapy-rep report LOG -o report.html``: the audit log as one page for a person.

The page (one self-contained HTML file, no network) answers "what did our
crawler fetch, from whom, and why": each origin's robots.txt over time,
counts by decision and reason, what was dropped and by which rule and line,
held requests and their fate, and the uses sites refused.

Exit status: 0 written, 2 the log cannot be read or the page cannot be written.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from scrapy_rep.robotstxt.text import printable
from scrapy_rep.runtime.html_report import write_report


def add_parser(subparsers: Any) -> None:
    """Register ``report`` on the ``scrapy-rep`` command's subparsers."""
    report = subparsers.add_parser(
        "report",
        help="write the audit log as one HTML page for a person to read",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    report.add_argument("log", metavar="LOG", help="the REP_DECISION_LOG file")
    report.add_argument(
        "-o", "--output", metavar="FILE", default="report.html", help="default: report.html"
    )
    report.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        story = write_report(args.log, args.output)
    except OSError as exc:
        print(printable(f"scrapy-rep: error: {exc}"), file=sys.stderr)
        return 2
    items, media = sum(story.items_dropped.values()), sum(story.media_failed.values())
    pages = f"; for what pages said: {items} items dropped, {media} media files failed"
    print(
        f"{args.output}: {len(story.origins)} origins, {story.records} records "
        f"({story.downloaded} downloaded, {len(story.dropped)} dropped, {len(story.held)} held"
        + (pages if items or media else "")
        + ")",
        file=sys.stderr,
    )
    return 0

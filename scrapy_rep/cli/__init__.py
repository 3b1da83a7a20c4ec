"""``scrapy-rep``: ask a robots.txt file questions from the shell.

``check`` and ``lint`` read a file, standard input (``-``) or an ``http(s)://`` URL
(that URL alone, through the standard library: redirects followed, 500 KiB read).

Exit status of ``check``: 0 all URLs allowed, 1 some disallowed, 2 a usage or input
error; of ``lint``: 0 nothing to say, 1 problems found (``--exit-zero``: 0), 2 an error.
"""

from __future__ import annotations

import argparse
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence

from scrapy_rep import __version__
from scrapy_rep.cli.describe import add_parser as add_describe_parser
from scrapy_rep.cli.explain import add_parser as add_explain_parser
from scrapy_rep.cli.recheck import add_parser as add_recheck_parser
from scrapy_rep.cli.report import add_parser as add_report_parser
from scrapy_rep.cli.store import add_parser as add_store_parser
from scrapy_rep.core.uses import (
    AIPREF_LABELS,
    USES,
    Declared,
    parse_content_signal,
    parse_usage_prefs,
    robots_answers,
    shown,
    uses_field,
)
from scrapy_rep.robotstxt import MAX_BYTES, InvalidProductToken, RobotsTxt, parse
from scrapy_rep.robotstxt.text import printable

EXIT_ALLOWED, EXIT_DISALLOWED, EXIT_ERROR = 0, 1, 2
#: ``lint``: the file has problems
EXIT_PROBLEMS = 1
#: seconds ``check`` and ``lint`` wait for a robots.txt URL
FETCH_TIMEOUT = 30.0


class CliError(Exception):
    """An input problem reported as one line, without a traceback."""


def _read(path: str) -> RobotsTxt:
    if path.lower().startswith(("http://", "https://")):
        return parse(_download(path))
    try:
        if path == "-":
            return parse(sys.stdin.buffer.read())
        with open(path, "rb") as f:
            return parse(f.read())
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _download(url: str) -> bytes:
    """The robots.txt at ``url`` (at most 500 KiB, as a crawler reads it).

    A 4xx means no file: RFC 9309 §2.3.1.3 lets a crawler fetch anything, so the
    file is read as empty, saying so on stderr. A 5xx or a network error is an error:
    a crawler may fetch nothing (§2.3.1.4).
    """
    request = urllib.request.Request(url, headers={"User-Agent": f"scrapy-rep/{__version__}"})
    try:
        with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT) as answer:
            return bytes(answer.read(MAX_BYTES + 1))
    except urllib.error.HTTPError as exc:
        if 400 <= exc.code < 500:
            print(
                printable(
                    f"{url}: HTTP {exc.code}: no robots.txt, everything allowed (RFC 9309 §2.3.1.3)"
                ),
                file=sys.stderr,
            )
            return b""
        raise CliError(f"cannot read {url}: HTTP {exc.code} (a crawler may fetch nothing)") from exc
    except (OSError, ValueError) as exc:  # URLError, timeouts, a bad URL
        reason = getattr(exc, "reason", None) or exc
        raise CliError(f"cannot read {url}: {reason}") from exc


def _check(args: argparse.Namespace) -> int:
    robots = _read(args.robots)
    declared = Declared(tuple(dict.fromkeys(args.use or ())))
    disallowed = False
    for url in args.urls:
        verdict = robots.decide(args.agent, url)
        disallowed |= not verdict.allowed
        line = f"{'ALLOW' if verdict.allowed else 'DISALLOW':8} {url}  {verdict}"
        print(printable(line))
        # each use asked for (--use), and every other use the file states
        answers = robots_answers(robots, args.agent, url, verdict.allowed, declared)
        for use_line in shown(uses_field(answers)):
            print(printable(f"  use {use_line}"))
    return EXIT_DISALLOWED if disallowed else EXIT_ALLOWED


def _lint(args: argparse.Namespace) -> int:
    robots = _read(args.robots)
    # the parser's diagnostics, and Content-Usage / Content-Signal lines read as the
    # use vocabulary reads them, in line order
    found = [(d.line, d.kind, d.text) for d in robots.diagnostics] + diagnose(robots)
    for line, kind, text in sorted(found, key=lambda item: item[0]):
        print(printable(f"line {line}: {kind}: {text}"))  # the file's own bytes, escaped
    groups, rules = len(robots.groups), sum(len(g.rules) for g in robots.groups)
    print(
        f"{len(found)} diagnostics; {groups} groups, {rules} rules, "
        f"{robots.preference_lines} use-preference lines, {len(robots.licenses)} licences, "
        f"{len(robots.sitemaps)} sitemaps, {robots.size} bytes"
        + (" (truncated)" if robots.truncated else ""),
        file=sys.stderr,
    )
    return EXIT_ALLOWED if args.exit_zero or not found else EXIT_PROBLEMS


def diagnose(robots: RobotsTxt) -> list[tuple[int, str, str]]:
    """(line, kind, text) for each Content-Usage / Content-Signal line that says nothing usable."""
    found: list[tuple[int, str, str]] = []
    for group in robots.groups:
        for usage in group.usage:
            text = printable(str(usage).rpartition(" (line ")[0], keep_tab=False)
            prefs = parse_usage_prefs(usage.prefs.encode("utf-8", "surrogateescape"))
            if prefs is None:
                found.append(
                    (
                        usage.line,
                        "invalid-content-usage",
                        f"{text} (not an RFC 9651 dictionary: every label unknown)",
                    )
                )
            elif not any(label in prefs for label in AIPREF_LABELS):
                found.append(
                    (
                        usage.line,
                        "content-usage-states-nothing",
                        f"{text} (no train-ai=y/n or search=y/n)",
                    )
                )
    signals = [s for group in robots.groups for run in group.runs for s in run.signals]
    for signal in sorted([*signals, *robots.signals], key=lambda s: s.line):
        text = printable(f"Content-Signal: {signal.value}", keep_tab=False)
        prefs = parse_content_signal(signal.value)
        if prefs is None:
            found.append(
                (signal.line, "invalid-content-signal", f"{text} (expected key=yes|no, ...)")
            )
        elif not prefs:
            found.append(
                (
                    signal.line,
                    "content-signal-states-nothing",
                    f"{text} (no search, ai-input or ai-train =yes/no)",
                )
            )
    return sorted(found)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="scrapy-rep", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("check", help="decide URLs against a robots.txt file")
    check.add_argument(
        "robots", metavar="ROBOTS_FILE", help="path, - for standard input, or an http(s) URL"
    )
    check.add_argument("--agent", required=True, metavar="TOKEN", help="product token")
    check.add_argument("urls", nargs="+", metavar="URL", help="absolute URL or path")
    check.add_argument(
        "--use",
        action="append",
        choices=USES,
        help="also answer this use (repeatable); uses the file states are always shown",
    )
    check.set_defaults(run=_check)
    lint = commands.add_parser(
        "lint",
        help="print the lines a robots.txt gets wrong; exit 1 if there are any",
        description="Print the lines a robots.txt gets wrong. Exit status: 0 none, "
        "1 some (a CI gate fails on them), 2 an error.",
    )
    lint.add_argument(
        "robots", metavar="ROBOTS_FILE", help="path, - for standard input, or an http(s) URL"
    )
    lint.add_argument(
        "--exit-zero",
        action="store_true",
        help="exit 0 even when problems are found (report only: the behaviour of earlier versions)",
    )
    lint.set_defaults(run=_lint)
    add_store_parser(commands)
    add_explain_parser(commands)
    add_report_parser(commands)
    add_describe_parser(commands)
    add_recheck_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except (CliError, InvalidProductToken) as exc:
        print(printable(f"scrapy-rep: error: {exc}"), file=sys.stderr)
        return EXIT_ERROR

"""``scrapy robots URL...``: the answer a crawl would give, asked from the shell.

The command runs a real crawler with the project's settings and the
add-on switched on, so robots.txt is fetched exactly as in a crawl: through
the downloader middlewares (proxies, headers, auth), with the product token
the spider would use (``--spider NAME`` takes that spider's
``custom_settings``). Nothing but robots.txt is downloaded.

Exit status: 0 every URL would be downloaded, 1 some would not, 2 usage errors.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

from scrapy import Spider
from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError
from scrapy.settings import SETTINGS_PRIORITIES

from scrapy_rep.addon import Addon
from scrapy_rep.cli.recheck_crawl import is_component
from scrapy_rep.core.decision import DOWNLOAD, DecisionRecord
from scrapy_rep.core.origin import NotAnOrigin, origin_of
from scrapy_rep.core.policy import Policy
from scrapy_rep.core.uses import shown
from scrapy_rep.crawl import graph
from scrapy_rep.robotstxt.text import printable

EXIT_ALLOWED, EXIT_NOT_ALLOWED, EXIT_ERROR = 0, 1, 2


class _ProbeSpider(Spider):
    name = "robots"


def _when(timestamp: float | None) -> str:
    if timestamp is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timestamp))


def format_decision(decision: DecisionRecord, policy: Policy | None) -> list[str]:
    """A few aligned lines: verdict, rule, group, use answers, policy."""
    verdict = {"allow": "ALLOW", "disallow": "DISALLOW"}.get(decision["rep_decision"], "HELD")
    lines = [
        f"{verdict:9} {decision['url']}",
        f"  action  {decision['action']} ({decision['reason']})",
    ]
    if decision["matched_rule"] is not None:
        lines.append(f"  rule    {decision['matched_rule']} (line {decision['matched_line']})")
    if decision["group"] is not None:
        lines.append(f"  group   {decision['group']}")
    if decision["detail"]:
        lines.append(f"  why     {decision['detail']}")
    lines.extend(f"  use     {line}" for line in shown(decision["uses"]))
    if policy is None:  # an excluded site (REP_EXCLUDE): no robots.txt asked for
        return lines
    source = policy.final_url if policy.final_url != policy.url else policy.url
    digest = f", digest {policy.digest}" if policy.digest else ""
    lines.append(
        f"  policy  {policy.status.value} (robots.txt {policy.http_status or policy.outcome} "
        f"from {source}{digest}, fetched {_when(policy.fetched_at)})"
    )
    if policy.status.value in ("paused", "unresolved"):
        lines.append(f"  retry   {_when(policy.expires_at)}")
    return lines


#: quiet by default: the answer goes to stdout; -L INFO (or -s NAME=VALUE) brings the log back
_QUIET = {"LOG_LEVEL": "WARNING", "REP_REPORT": False}


class RobotsCommand(ScrapyCommand):
    requires_project = False

    def syntax(self) -> str:
        return "[options] <url> [<url> ...]"

    def short_desc(self) -> str:
        return "Say whether URLs may be crawled, and by which robots.txt rule (scrapy-rep)"

    def long_desc(self) -> str:
        return (
            "Fetch each origin's robots.txt through the project's settings and downloader "
            "middlewares, and print the decision per URL with its rule, line, group and the "
            "origin's policy status: the answer a crawl would give. Use --spider to take a "
            "spider's custom_settings (e.g. its REP_PRODUCT_TOKEN)."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--spider", dest="spider", help="use this spider's settings")

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        super().process_options(args, opts)
        assert self.settings is not None
        # The project's and the add-on's settings outrank a command's defaults; only
        # the command line outranks these.
        for name, value in _QUIET.items():
            if (self.settings.getpriority(name) or 0) < SETTINGS_PRIORITIES["cmdline"]:
                self.settings.set(name, value, priority="cmdline")
        addons = self.settings.getdict("ADDONS")
        if not any(is_component(component, Addon) for component in addons):
            self.settings.set_in_component_priority_dict("ADDONS", Addon, 100)

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if not args:
            raise UsageError("give at least one URL")
        origins: dict[str, str] = {}
        for url in args:
            try:
                origins[url] = origin_of(url)
            except NotAnOrigin as exc:
                raise UsageError(f"{exc} (give absolute http(s) URLs)", print_help=False) from None
        assert self.crawler_process is not None
        base: type[Spider] = _ProbeSpider
        if opts.spider:
            loader = self.crawler_process.spider_loader
            try:
                base = loader.load(opts.spider)
            except KeyError:
                names = sorted(loader.list())
                known = ", ".join(names[:10]) or "none (not in a Scrapy project?)"
                if len(names) > 10:
                    known += f", … ({len(names)} in all: scrapy list)"
                print(
                    f"scrapy robots: error: no spider named {opts.spider!r}; "
                    f"spiders of this project: {known}",
                    file=sys.stderr,
                )
                self.exitcode = EXIT_ERROR
                return
        answers: list[tuple[DecisionRecord, Policy | None]] = []
        problems: list[str] = []

        async def start(spider: Spider) -> AsyncIterator[Any]:
            service = graph.running(spider.crawler)
            if service is None:
                problems.append("scrapy-rep is not enabled (REP_ENABLED is off?)")
                return
            for url in origins:
                # the crawl's own path: one shared fetch, the status policy, the cache
                answers.append(await service.admission.ask(url))
            return
            yield  # an async generator that yields nothing: no target is downloaded

        probe = type("RobotsProbe", (base,), {"start": start})
        self.crawler_process.crawl(probe)
        self.crawler_process.start()
        if self.crawler_process.bootstrap_failed or problems or len(answers) != len(origins):
            for problem in problems or ["the crawler failed; run with -L INFO to see why"]:
                print(f"scrapy robots: error: {problem}")
            self.exitcode = EXIT_ERROR
            return
        print(f"product token: {answers[0][0]['product_token']}")
        for decision, policy in answers:
            # rules and URLs quote the site: no raw control characters on the terminal
            print("\n".join(printable(line) for line in format_decision(decision, policy)))
        allowed = all(decision["action"] == DOWNLOAD for decision, _ in answers)
        self.exitcode = EXIT_ALLOWED if allowed else EXIT_NOT_ALLOWED

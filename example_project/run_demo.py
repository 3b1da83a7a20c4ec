"""``make demo``: crawl the demo site with scrapy-rep and show what happened, per origin.

Starts ``demo_site.py`` (a separate process), runs ``scrapy crawl tour`` in
this project (another process) with the audit log on, asks the site what it
saw, stops it, and prints a summary built from three independent sources:
the audit log (what scrapy-rep decided), the crawl's stats, and the site's
own hit log (what actually arrived, checked against the site's hand-written
list of what a compliant crawler must not fetch).

Exits 1 if the crawl did something wrong: downloaded a disallowed URL, hit
the trap, fetched a page while its origin's robots.txt could not be read,
asked for robots.txt again before Retry-After, or if the audit log and the
site disagree.

``--compare`` runs the same crawl three times (scrapy-rep, Scrapy's built-in
RobotsTxtMiddleware, ROBOTSTXT_OBEY=False), each against a fresh site, and
prints the three side by side.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
_OFF = ["-s", 'ADDONS={"scrapy_rep.Addon": null}']  # switch the add-on off from the command line
MODES: dict[str, tuple[str, list[str]]] = {
    "rep": ("scrapy-rep", []),
    "builtin": ("built-in", [*_OFF, "-s", "ROBOTSTXT_OBEY=True"]),
    "off": ("obey off", [*_OFF, "-s", "ROBOTSTXT_OBEY=False"]),
}
CRAWL_TIMEOUT = 120.0
SITE_START_TIMEOUT = 10.0


@dataclass
class Run:
    """One crawl against one fresh demo site, and everything recorded about it."""

    mode: str
    workdir: Path
    seconds: float = 0.0
    returncode: int | None = None
    site: dict[str, Any] = field(default_factory=dict)  # name -> {"url", "what"}
    hits: list[dict[str, Any]] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    audit: list[dict[str, Any]] = field(default_factory=list)

    @property
    def log(self) -> Path:
        return self.workdir / "crawl.log"

    @property
    def audit_path(self) -> Path:
        return self.workdir / "audit.jsonl"

    @property
    def archive(self) -> Path:
        return self.workdir / "archive"

    def name_of(self, origin: str) -> str:
        """``http://127.0.0.1:PORT`` -> the demo origin's name."""
        for name, info in self.site.items():
            if info["url"] == origin:
                return str(name)
        return origin


# -- running -----------------------------------------------------------------------------


def start_site(workdir: Path) -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    ports = workdir / "ports.json"
    process = subprocess.Popen(
        [sys.executable, str(HERE / "demo_site.py"), "--ports-file", str(ports)],
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + SITE_START_TIMEOUT
    while not ports.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError("the demo site did not start")
        time.sleep(0.05)
    return process, json.loads(ports.read_text(encoding="utf-8"))


def stop_site(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)


def run(mode: str, workdir: Path) -> Run:
    """Start a fresh site, crawl it with ``scrapy crawl tour`` in ``mode``, collect the records."""
    workdir.mkdir(parents=True, exist_ok=True)
    result = Run(mode, workdir)
    site, described = start_site(workdir)
    try:
        result.site = described["origins"]
        command = [
            sys.executable,
            "-m",
            "scrapy",
            "crawl",
            "tour",
            "-s",
            f"LOG_FILE={result.log}",
            "-s",
            f"DEMO_STATS_FILE={workdir / 'stats.json'}",
            *MODES[mode][1],
        ]
        if mode == "rep":
            command += ["-s", f"REP_DECISION_LOG={result.audit_path}"]
            command += ["-s", f"REP_POLICY_ARCHIVE={result.archive}"]
        env = {**os.environ, "DEMO_PORTS_FILE": str(workdir / "ports.json")}
        started = time.monotonic()
        try:
            done = subprocess.run(command, cwd=HERE, env=env, timeout=CRAWL_TIMEOUT, check=False)
            result.returncode = done.returncode
        except subprocess.TimeoutExpired:
            result.returncode = None
        result.seconds = time.monotonic() - started
        with urllib.request.urlopen(described["stats"], timeout=10) as response:
            result.hits = json.loads(response.read())["hits"]
    finally:
        stop_site(site)
    stats = workdir / "stats.json"
    if stats.exists():
        result.stats = json.loads(stats.read_text(encoding="utf-8"))
    if result.audit_path.exists():
        with open(result.audit_path, encoding="utf-8") as f:
            result.audit = [json.loads(line) for line in f if line.strip()]
    return result


# -- what the site saw --------------------------------------------------------------------


@dataclass
class Seen:
    """The site's view of one origin (or of all of them)."""

    robots: int = 0
    early: int = 0  # robots.txt asked again before Retry-After ran out
    pages: int = 0
    served: int = 0  # pages answered 200
    trap: int = 0
    forbidden: int = 0  # pages a compliant crawler would not fetch (trap included)
    while_failing: int = 0  # pages fetched while robots.txt could not be read
    banned: int = 0  # pages refused because the client had hit the trap
    times: list[float] = field(default_factory=list)

    def add(self, hit: dict[str, Any]) -> None:
        if hit["kind"] == "robots":
            self.robots += 1
            self.early += bool(hit.get("early"))
            return
        if hit["kind"] not in ("page", "trap"):
            return
        self.pages += 1
        self.served += hit["status"] == 200
        self.trap += hit["kind"] == "trap"
        self.forbidden += bool(hit["forbidden"])
        self.while_failing += bool(hit["while_failing"])
        self.banned += bool(hit["banned"])
        self.times.append(hit["t"])

    @property
    def min_gap(self) -> float | None:
        times = sorted(self.times)
        gaps = [b - a for a, b in itertools.pairwise(times)]
        return min(gaps) if gaps else None


def seen_by_site(run: Run) -> tuple[dict[str, Seen], Seen]:
    per: dict[str, Seen] = {name: Seen() for name in run.site}
    total = Seen()
    for hit in run.hits:
        per.setdefault(hit["origin"], Seen()).add(hit)
        total.add(hit)
    return per, total


# -- what scrapy-rep decided (the audit log) -----------------------------------------------


@dataclass
class Decided:
    fetches: list[dict[str, Any]] = field(default_factory=list)
    downloaded: set[str] = field(default_factory=set)
    downloads: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    parked: int = 0
    released: int = 0
    targets: Counter[int] = field(default_factory=Counter)
    counters: dict[str, Any] = field(default_factory=dict)  # the middleware's "origin" record
    wrong: list[str] = field(default_factory=list)  # downloads that break a rule

    def policy(self, run: Run) -> str:
        """The robots.txt story: ``paused(503)x3 -> ok(200)``, plus redirects and truncation."""
        steps: list[list[Any]] = []
        for fetch in self.fetches:
            label = f"{fetch['status']}({fetch['http_status'] or fetch['outcome']})"
            if steps and steps[-1][0] == label:
                steps[-1][1] += 1
            else:
                steps.append([label, 1])
        story = " -> ".join(label + (f"x{n}" if n > 1 else "") for label, n in steps) or "-"
        last = self.fetches[-1] if self.fetches else {}
        if last.get("final_url") and last["final_url"] != last["url"]:
            story += f" via {run.name_of(_origin(last['final_url']))}"
        if last.get("truncated"):
            story += ", cut at 500 KiB"
        return story


def _origin(url: str) -> str:
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{rest.split('/', 1)[0]}"


def decided_by_rep(run: Run) -> dict[str, Decided]:
    per: dict[str, Decided] = {}
    for record in run.audit:
        origin = record.get("origin")
        if not origin:
            continue
        d = per.setdefault(run.name_of(origin), Decided())
        kind = record["type"]
        if kind == "fetch":
            d.fetches.append(record)
        elif kind == "decision":
            if record["action"] == "download":
                d.downloads += 1
                d.downloaded.add(record["url"])
                if record["rep_decision"] != "allow" or record["policy_status"] in (
                    "paused",
                    "unresolved",
                    "unreachable",
                ):
                    d.wrong.append(f"{record['url']} ({record['policy_status']})")
            elif record["action"] == "drop":
                d.dropped[record["reason"]] += 1
        elif kind == "dropped":
            d.dropped[record["reason"]] += 1
        elif kind == "parked":
            d.parked += 1
        elif kind == "released":
            d.released += 1
        elif kind == "response":
            d.targets[record["target_status"]] += 1
        elif kind == "origin":
            d.counters = record
    return per


# -- judging the run ----------------------------------------------------------------------


def problems(run: Run) -> list[str]:
    """Everything the crawl did wrong; empty for a good run."""
    found: list[str] = []
    if run.returncode != 0:
        found.append(f"the crawl exited with {run.returncode} (see {run.log})")
    if run.stats.get("finish_reason") != "finished":
        found.append(f"the crawl ended with {run.stats.get('finish_reason')!r}, not 'finished'")
    per, total = seen_by_site(run)
    for label, count in (
        ("trap hits", total.trap),
        ("disallowed pages fetched", total.forbidden),
        ("pages fetched while their robots.txt could not be read", total.while_failing),
        ("robots.txt asked again before Retry-After", total.early),
    ):
        if count:
            where = [name for name, seen in per.items() if getattr(seen, _ATTR[label])]
            found.append(f"{label}: {count} (on {', '.join(where)})")
    if run.mode != "rep":
        return found
    decided = decided_by_rep(run)
    for name, d in decided.items():
        for wrong in d.wrong:
            found.append(f"{name}: downloaded against the rules: {wrong}")
        if d.counters and d.counters.get("downloaded") != d.downloads:
            found.append(
                f"{name}: the report counts {d.counters.get('downloaded')} downloads, "
                f"the audit log {d.downloads}"
            )
    allowed = {url for d in decided.values() for url in d.downloaded}
    for hit in run.hits:
        if hit["kind"] in ("page", "trap"):
            url = run.site[hit["origin"]]["url"] + hit["target"]
            if url not in allowed:
                found.append(f"the site served {url} but the audit log has no download for it")
    return found


_ATTR = {
    "trap hits": "trap",
    "disallowed pages fetched": "forbidden",
    "pages fetched while their robots.txt could not be read": "while_failing",
    "robots.txt asked again before Retry-After": "early",
}


# -- printing -----------------------------------------------------------------------------


def table(rows: Iterable[list[str]], right: set[int]) -> list[str]:
    rows = list(rows)
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        ).rstrip()
        for row in rows
    ]


def _reasons(counter: Counter[str]) -> str:
    return ", ".join(f"{reason} {n}" for reason, n in counter.most_common()) or "-"


def _gap(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.2f} s"


def summary(run: Run) -> str:
    per, total = seen_by_site(run)
    decided = decided_by_rep(run)
    head = "origin|shows|robots.txt fetches -> policy|down|drop|park/rel|delay|site saw|dropped by"
    rows = [[*head.split("|")[:-1], "dropped by reason"]]
    for name, info in run.site.items():
        d = decided.get(name, Decided())
        delay = d.counters.get("crawl_delay")
        rows.append(
            [
                name,
                info["what"],
                d.policy(run),
                str(d.downloads),
                str(sum(d.dropped.values())),
                f"{d.parked}/{d.released}",
                f"{delay:g} s" if delay else "-",
                f"{per[name].pages} pages",
                _reasons(d.dropped),
            ]
        )
    lines = [
        f"scrapy-rep demo: `scrapy crawl tour` (token demobot) against {len(run.site)} origins "
        f"on 127.0.0.1, {run.seconds:.1f} s",
        "",
        *table(rows, right={3, 4, 5, 6}),
        "",
    ]
    s = run.stats
    dropped_stats = sum(v for k, v in s.items() if k.startswith("rep/dropped/"))
    lines.append(
        f"stats:     rep/downloaded {s.get('rep/downloaded', 0)}, rep/dropped/* {dropped_stats}, "
        f"rep/parked {s.get('rep/parked', 0)}, rep/released {s.get('rep/released', 0)}, "
        f"rep/fetch/count {s.get('rep/fetch/count', 0)}, "
        f"robotstxt/forbidden {s.get('robotstxt/forbidden', 0)}"
    )
    targets: Counter[int] = Counter()
    for d in decided.values():
        targets.update(d.targets)
    statuses = ", ".join(f"{code} x{n}" for code, n in sorted(targets.items())) or "-"
    lines.append(f"targets:   HTTP status of downloaded pages (audit `target_status`): {statuses}")
    delay = per.get("delay", Seen()).min_gap
    lines.append(
        f"site saw:  {total.pages} pages, {total.robots} robots.txt requests; "
        f"trap hits {total.trap}; disallowed pages {total.forbidden}; "
        f"pages while robots.txt failing {total.while_failing}; "
        f"robots.txt before Retry-After {total.early}; "
        f"smallest gap between pages on `delay` {_gap(delay)}"
    )
    if run.audit:
        archived = len(list(run.archive.glob("*.txt"))) if run.archive.exists() else 0
        lines.append(
            f"audit log: {run.audit_path} ({len(run.audit)} records); "
            f"archive: {run.archive} ({archived} robots.txt bodies)"
        )
        example = next(
            (r["url"] for r in run.audit if r["type"] == "decision" and r["matched_rule"]), None
        )
        if example:
            lines.append(f"ask why:   scrapy-rep explain {run.audit_path} {example}")
    return "\n".join(lines)


COMPARE_ROWS: list[tuple[str, Any]] = [
    ("trap hits", lambda r, t, p: t.trap),
    ("disallowed pages fetched (trap included)", lambda r, t, p: t.forbidden),
    ("pages from 403/429/5xx origins while failing", lambda r, t, p: t.while_failing),
    ("robots.txt requests", lambda r, t, p: t.robots),
    ("robots.txt asked before Retry-After", lambda r, t, p: t.early),
    ("smallest gap on the Crawl-delay: 1 origin", lambda r, t, p: _gap(p["delay"].min_gap)),
    ("pages requested", lambda r, t, p: t.pages),
    ("pages refused by the site (banned)", lambda r, t, p: t.banned),
    ("crawl time", lambda r, t, p: f"{r.seconds:.1f} s"),
]


def compare(runs: list[Run]) -> str:
    rows = [["", *(MODES[r.mode][0] for r in runs)]]
    views = [(r, *seen_by_site(r)) for r in runs]
    for label, value in COMPARE_ROWS:
        rows.append([label, *(str(value(r, total, per)) for r, per, total in views)])
    return "\n".join(table(rows, right=set(range(1, len(runs) + 1))))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compare", action="store_true", help="also crawl without scrapy-rep")
    parser.add_argument("--workdir", help="keep logs here (default: a new temporary directory)")
    args = parser.parse_args(argv)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="scrapy-rep-demo-"))
    modes = list(MODES) if args.compare else ["rep"]
    runs = [run(mode, workdir / mode) for mode in modes]
    print(summary(runs[0]))
    if args.compare:
        print(
            "\nThe same crawl three ways (scrapy-rep; Scrapy's RobotsTxtMiddleware with "
            "ROBOTSTXT_OBEY=True; ROBOTSTXT_OBEY=False), each against a fresh site:\n"
        )
        print(compare(runs))
    found = problems(runs[0])
    print()
    if found:
        print("FAIL: scrapy-rep did something wrong:")
        for problem in found:
            print(f"  - {problem}")
        return 1
    print(
        "PASS: nothing disallowed downloaded, no trap hit, nothing fetched from an origin "
        "while its robots.txt could not be read."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

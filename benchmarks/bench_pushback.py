"""A site that pushes back while it is crawled: 429 + Retry-After, a 503 window, a 403 wall.

Usage: ``python benchmarks/bench_pushback.py [--quick] [--redis] [--rate R] [--origins K]
[--bursts] [--seeded] [--slowing] [--variants abctk] [--crawlee PYTHON]``

The site is ``tests/support/pushback_site.py`` (in this process, one thread
per connection, each origin its own loopback address): ``--origins`` origins
allowing ``--rate`` page requests per second (a token bucket of one) and
answering ``429`` with ``Retry-After: 2`` beyond it; one origin answering
``503`` with ``Retry-After: 3`` for 3 s from 0.2 s after its first page; one
origin whose pages answer ``403`` after its 10th. Every origin's pages form a
tree of links from ``/`` (``--pages`` pages each). Each variant is a real crawl
in a fresh child process, RetryMiddleware on at Scrapy's defaults:

(a) ``ROBOTSTXT_OBEY=False``, (b) Scrapy's ``RobotsTxtMiddleware``,
(c) ``ADDONS = {"scrapy_rep.Addon": 100}``.

Figures, all from the server's own log (what it answered, when, and how
many requests of that origin were in flight when each arrived):

- *429/100 pages*: 429s sent per 100 pages served (200) on the rate-limited
  origins;
- *lost*: pages of the rate-limited and 503 origins never served (given up
  by the crawler, or never asked because the page linking to them was);
  *gave up*: Scrapy's ``retry/max_reached``;
- *rate use*: pages/s each rate-limited origin served ÷ ``--rate``, the
  median origin, over the span from its first request to its last page
  served plus one token's time (1/R), and at least the time all its pages
  take at R/s: a complete crawl at exactly R/s gives 1.0, and a crawler
  that gives up early is not counted as quick; *steady*: the same over the
  second half of its pages served (from the middle one to the last), the
  pace once the crawler has learnt the site's (a site that limits its rate
  does not say the rate: the first pushbacks are how a crawler finds it);
- *in flight at resume*: the most requests of one origin in flight among
  those arriving in the first second after a pause the origin asked for
  (``Retry-After`` from a 429 or 503; overlapping asks are one pause) ended;
- *into pauses*: page requests of the rate-limited and 503 origins that
  arrived during a pause the origin had asked for (from 50 ms after the 429
  or 503 left, the time a reply takes to arrive, to the end of its
  ``Retry-After``): what a crawler sent after it was told to wait, or sent
  at a pause's end into a refusal again beyond the first (goal: 0);
- *403s*: pages the wall origin answered 403 (10 pages were 200).

``--bursts``: the rate-limited origins are ``--origins`` of each kind of
:data:`KINDS` (a token bucket of one with ``Retry-After``; a burst of 5 with
it; a burst of 5 without it), and a table per kind follows each variant's:
*use* (whole crawl) and *second half* as *rate use* and *steady* above,
429s per 100 pages, pauses. ``--variants``: which of (a), (b), (c) to run.

``--slowing``: one more origin, a server of 5 pages/s whose latency grows
from 30 ms to 600 ms at 15 page requests in the last second and answers
``503`` (no ``Retry-After``) beyond; its line gives pages got and lost, 503s
and the p95 latency the site chose. Variant ``t``: Scrapy + AutoThrottle
(its defaults), beside the others. Variant ``k`` (with ``--crawlee PYTHON``, an
interpreter whose environment holds ``crawlee``, a throwaway venv: a
benchmark-only dependency): Crawlee for Python's ``HttpCrawler`` at its
defaults behind its ``ThrottlingRequestManager`` (``crawlee_child.py``).

``--redis``: scrapy-rep with ``REP_STORE = "redis"`` as one scrapy-redis
worker and as three (``tests/support/cluster_worker.py``, real
redis-servers), on the rate-limited origins only: the cluster's 429s beside
one worker's (with ``--bursts``, a table per kind after each). The shared
queue starts with each origin's root, which one worker takes (its first
contact is that worker's alone); ``--seeded`` queues every page from the
start, the origins in turn, as a broad crawl from a sitemap does: every
worker meets each origin at once.

Nothing here fails on a number.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import _common
from _common import LABELS, ROOT, USER_AGENT, read_child_config, run_child, run_crawler, say

from tests.support.pushback_site import (
    Entry,
    PushbackOrigin,
    PushbackSite,
    max_in_flight_after,
    page_paths,
    pages,
    pause_ends,
)

RETRY_AFTER = 2
WINDOW = (0.2, 3.2)
WINDOW_RETRY_AFTER = 3
WALL_AFTER = 10
LATENCY = 0.02
FANOUT = 4
LINK = re.compile(rb'href="(/p/\d+)"')
#: --bursts: the kinds of rate-limited origin, each (bucket size, Retry-After or None)
KINDS: dict[str, tuple[float, int | None]] = {
    "bucket of 1": (1.0, RETRY_AFTER),
    "burst of 5": (5.0, RETRY_AFTER),
    "burst of 5, no Retry-After": (5.0, None),
}
SPIDER = "pushback"
#: --slowing: a server of SLOW_CAPACITY pages/s whose latency grows from LATENCY_SLOWING
#: to SLOW_LATENCY at three times it, answering 503 beyond; AutoThrottle beside scrapy-rep
SLOW_CAPACITY, LATENCY_SLOWING, SLOW_LATENCY = 5.0, 0.03, 0.6
VARIANTS = {**_common.VARIANTS, "t": {"ROBOTSTXT_OBEY": False, "AUTOTHROTTLE_ENABLED": True}}
NAMES = {**LABELS, "t": "(t) Scrapy + AutoThrottle", "k": "(k) Crawlee + its throttle"}


# --------------------------------------------------------------------------- the site


def build(site: PushbackSite, args: argparse.Namespace, wall: bool = True) -> dict[str, Any]:
    """The origins, by kind (``by_kind``: the rate-limited ones of each of KINDS)."""
    shapes = KINDS if args.bursts else {"bucket of 1": KINDS["bucket of 1"]}
    by_kind = {
        kind: [
            site.add(
                f"rate{k}-{i}",
                rate=args.rate,
                burst=burst,
                retry_after=retry_after,
                pages=args.pages,
                latency=LATENCY,
                fanout=FANOUT,
            )
            for i in range(args.origins)
        ]
        for k, (kind, (burst, retry_after)) in enumerate(shapes.items())
    }
    limited = [o for origins in by_kind.values() for o in origins]
    kinds: dict[str, Any] = {"limited": limited, "window": None, "wall": None, "by_kind": by_kind}
    kinds["slowing"] = None
    if getattr(args, "slowing", False):
        kinds["slowing"] = site.add(
            "slowing",
            capacity=SLOW_CAPACITY,
            latency=LATENCY_SLOWING,
            slow_latency=SLOW_LATENCY,
            pages=args.pages,
            fanout=FANOUT,
        )
    if wall:
        kinds["window"] = site.add(
            "window",
            unavailable=WINDOW,
            unavailable_retry_after=WINDOW_RETRY_AFTER,
            pages=args.pages,
            latency=LATENCY,
            fanout=FANOUT,
        )
        kinds["wall"] = site.add(
            "wall", wall_after=WALL_AFTER, pages=args.pages, latency=LATENCY, fanout=FANOUT
        )
    return kinds


def origins_of(kinds: dict[str, Any]) -> list[PushbackOrigin]:
    found = list(kinds["limited"])
    found += [o for o in (kinds["window"], kinds["wall"], kinds["slowing"]) if o is not None]
    return found


def slowing_line(log: list[Entry], origin: PushbackOrigin) -> str:
    """--slowing: pages got and lost, 503s, the p95 latency the site chose, the crawl's time."""
    entries = [e for e in pages(log) if e.origin == origin.name]
    ok = {e.path for e in entries if e.status == 200}
    lost = sum(1 for p in page_paths(origin.spec.pages) if p not in ok)
    delays = sorted(e.delay for e in entries if e.status == 200)
    p95 = delays[min(len(delays) - 1, int(0.95 * len(delays)))] if delays else float("nan")
    span = entries[-1].at - entries[0].at if entries else 0.0
    unavailable = sum(1 for e in entries if e.status == 503)
    return (
        f"  slowing site: {len(ok)} pages, {lost} lost, {unavailable} 503s, "
        f"p95 latency {p95:.3f} s, {span:.1f} s"
    )


def figures(log: list[Entry], kinds: dict[str, Any], rate: float) -> dict[str, float]:
    """The variant's figures from the server's log (see the module docstring)."""
    limited: list[PushbackOrigin] = kinds["limited"]
    counted = [*limited, *([kinds["window"]] if kinds["window"] is not None else [])]
    by_origin: dict[str, list[Entry]] = {}
    for e in pages(log):
        by_origin.setdefault(e.origin, []).append(e)
    served = sum(1 for o in limited for e in by_origin.get(o.name, ()) if e.status == 200)
    too_many = sum(1 for o in limited for e in by_origin.get(o.name, ()) if e.status == 429)
    lost = 0
    for o in counted:
        ok = {e.path for e in by_origin.get(o.name, ()) if e.status == 200}
        lost += sum(1 for p in page_paths(o.spec.pages) if p not in ok)
    uses, steady = [], []
    for o in limited:
        entries = by_origin.get(o.name, [])
        ok_at = [e.at for e in entries if e.status == 200]
        if ok_at:  # N pages at R/s take N/R s; a crawl that gives up is not quicker
            span = max(ok_at[-1] - entries[0].at + 1 / rate, len(page_paths(o.spec.pages)) / rate)
            uses.append(len(ok_at) / span / rate)
            half = ok_at[len(ok_at) // 2 :]
            if len(half) > 1 and len(ok_at) == len(page_paths(o.spec.pages)):
                steady.append((len(half) - 1) / (half[-1] - half[0]) / rate)
    # first contact: 429s before a pause could have ended (Retry-After after the first request)
    opening = sum(
        1
        for o in limited
        if (entries := by_origin.get(o.name))
        for e in entries
        if e.status == 429 and e.at < entries[0].at + RETRY_AFTER
    )
    at_resume, episodes, into = 0, 0, 0
    for o in counted:
        entries = by_origin.get(o.name, [])
        into += len(into_pauses(entries, o.spec))
        for end in pause_ends(entries, o.spec):
            episodes += 1
            at_resume = max(at_resume, max_in_flight_after(entries, end, 1.0))
    wall = kinds["wall"]
    walled = (
        sum(1 for e in by_origin.get(wall.name, ()) if e.status == 403) if wall is not None else 0
    )
    return {
        "served": served,
        "429": too_many,
        "429_per_100": 100 * too_many / served if served else float("inf"),
        "opening_429": opening,
        "lost": lost,
        "rate_use": statistics.median(uses) if uses else 0.0,
        "steady": statistics.median(steady) if steady else 0.0,
        "episodes": episodes,
        "into_pauses": into,
        "in_flight_at_resume": at_resume,
        "403": walled,
        "503": sum(1 for e in pages(log) if e.status == 503),
    }


def into_pauses(entries: list[Entry], spec: Any, heard: float = 0.05) -> list[Entry]:
    """Requests that arrived while a pause the origin asked for lasted (see the docstring)."""
    asks = [
        (e.at + LATENCY + heard, e.at + seconds)
        for e in pages(entries)
        if (seconds := _asked(e, spec)) is not None
    ]
    return [e for e in pages(entries) if any(start <= e.at < end for start, end in asks)]


def _asked(entry: Entry, spec: Any) -> float | None:
    if entry.status == 429:
        return float(spec.retry_after) if spec.retry_after is not None else None
    if entry.status == 503:
        value = spec.unavailable_retry_after
        return float(value) if value is not None else None
    return None


# --------------------------------------------------------------------------- one crawl (child)


def child_crawl(config: dict[str, Any]) -> dict[str, Any]:
    import scrapy
    from scrapy.http import Response
    from twisted.python.failure import Failure

    errors: Counter[str] = Counter()

    class Spider(scrapy.Spider):
        name = SPIDER

        async def start(self) -> Any:
            for url in config["start"]:
                yield scrapy.Request(url, callback=self.parse, errback=self.failed)

        def parse(self, response: Response) -> Any:
            for path in LINK.findall(response.body):
                yield scrapy.Request(
                    response.urljoin(path.decode()), callback=self.parse, errback=self.failed
                )

        def failed(self, failure: Failure) -> None:
            errors[type(failure.value).__name__] += 1

    settings = {
        "USER_AGENT": USER_AGENT,
        "LOG_LEVEL": "ERROR",
        "TELNETCONSOLE_ENABLED": False,
        "CONCURRENT_REQUESTS": 16,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
        "DOWNLOAD_TIMEOUT": 10,
        "CLOSESPIDER_TIMEOUT": config["timeout"],
        "REP_REPORT": False,
        **VARIANTS[config["variant"]],
    }
    keep = ("rep/", "retry/", "downloader/response_status_count/", "downloader/request_count")
    return run_crawler(Spider, settings, errors, keep)


def run_variant(
    variant: str, kinds: dict[str, Any], timeout: float, crawlee: str | None = None
) -> dict[str, Any]:
    start = [o.url_for("/") for o in origins_of(kinds)]
    config = {"variant": variant, "start": start, "timeout": timeout}
    if variant == "k":  # another interpreter, its own venv
        if crawlee is None:
            raise SystemExit("variant k needs --crawlee PYTHON")
        done = subprocess.run(
            [crawlee, str(Path(__file__).with_name("crawlee_child.py"))],
            input=json.dumps(config),
            capture_output=True,
            text=True,
            timeout=timeout + 120,
            check=False,
        )
        lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
        if done.returncode or not lines:
            raise RuntimeError(f"crawlee failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
        result: dict[str, Any] = json.loads(lines[-1])
        return result
    return run_child(__file__, "crawl", config, timeout=timeout + 120)


# --------------------------------------------------------------------------- --redis


def run_cluster(
    workers: int,
    kinds: dict[str, Any],
    site: PushbackSite,
    tmp: Path,
    timeout: float,
    seeded: bool = False,
) -> dict[str, Any]:
    from tests.support.redis_fixture import RedisServer

    queue, store = RedisServer(tmp).start(), RedisServer(tmp).start()
    procs, outs = [], []
    try:
        for w in range(workers):
            stem = tmp / f"w{workers}-{w}"
            config = {
                "spider": SPIDER,
                "ready": f"{stem}.ready",
                "out": f"{stem}.json",
                "follow": True,
                "batch": 16,
                "settings": {
                    "REDIS_URL": queue.url,
                    "REP_STORE": store.url,
                    "USER_AGENT": USER_AGENT,
                    "RETRY_ENABLED": True,
                    "CONCURRENT_REQUESTS": 16,
                    "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
                    "LOG_LEVEL": "WARNING",
                    "CLOSESPIDER_TIMEOUT": timeout,
                    "REP_REPORT": False,
                },
            }
            with open(f"{stem}.log", "wb") as log:
                procs.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "tests.support.cluster_worker", json.dumps(config)],
                        cwd=ROOT,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                    )
                )
            outs.append(Path(config["out"]))
        deadline = time.monotonic() + 60
        while not all(Path(str(o).replace(".json", ".ready")).exists() for o in outs):
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                raise SystemExit(f"a worker did not start; see {tmp}")
            time.sleep(0.05)
        import redis

        client = redis.Redis.from_url(queue.url)
        site.clear_log()
        # seeded: every page from the start, the origins in turn (a broad crawl from a
        # sitemap: every worker meets each origin at once), else each origin's root
        limited = kinds["limited"]
        paths = page_paths(max(o.spec.pages for o in limited)) if seeded else ["/"]
        urls = [o.url_for(p) for p in paths for o in limited if p in page_paths(o.spec.pages)]
        client.rpush(f"{SPIDER}:start_urls", *urls)
        # done when every page was served, or nothing arrived for 5 s, or the time is up
        want = sum(len(page_paths(o.spec.pages)) for o in kinds["limited"])
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            log = site.log()
            ok = {(e.origin, e.path) for e in pages(log) if e.status == 200}
            quiet = not log or time.monotonic() - log[-1].at > 5
            if len(ok) >= want or (log and quiet):
                break
            time.sleep(0.2)
        client.set(f"{SPIDER}:done", 1)
        client.close()
        for p in procs:
            p.wait(timeout + 60)
        reports = [json.loads(o.read_text()) for o in outs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        queue.stop()
        store.stop()
    result = figures(site.log(), kinds, kinds["rate"])
    result["gave_up"] = sum(r["stats"].get("retry/max_reached", 0) for r in reports)
    return result


# --------------------------------------------------------------------------- printing


def kind_table(log: list[Entry], kinds: dict[str, Any], rate: float) -> None:
    """--bursts: use over the whole crawl and its second half, per kind of rate limit."""
    head = f"  {'kind':28} {'use':>5} {'second half':>11} {'429/100 pages':>13} {'pauses':>6}"
    say(head)
    for kind, origins in kinds["by_kind"].items():
        r = figures(log, {"limited": origins, "window": None, "wall": None}, rate)
        say(
            f"  {kind:28} {r['rate_use']:>5.2f} {r['steady']:>11.2f} "
            f"{r['429_per_100']:>13.1f} {r['episodes']:>6.0f}"
        )


def table(rows: dict[str, dict[str, Any]]) -> None:
    head = (
        f"{'variant':34} {'429/100 pages':>13} {'429s':>5} {'lost':>5} {'gave up':>7} "
        f"{'rate use':>8} {'steady':>6} {'pauses':>6} {'into pauses':>11} "
        f"{'in flight at resume':>19} {'403s':>5} {'503s':>5} "
        f"{'wall s':>6}"
    )
    say(head)
    say("-" * len(head))
    for name, r in rows.items():
        say(
            f"{name:34} {r['429_per_100']:>13.1f} {r['429']:>5.0f} {r['lost']:>5.0f} "
            f"{r['gave_up']:>7.0f} {r['rate_use']:>8.2f} {r['steady']:>6.2f} "
            f"{r['episodes']:>6.0f} {r['into_pauses']:>11.0f} "
            f"{r['in_flight_at_resume']:>19.0f} {r['403']:>5.0f} {r['503']:>5.0f} "
            f"{r.get('elapsed', float('nan')):>6.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer origins and pages (< 2 min)")
    parser.add_argument("--redis", action="store_true", help="also 1 vs 3 scrapy-redis workers")
    parser.add_argument("--origins", type=int, default=None)
    parser.add_argument("--pages", type=int, default=None)
    parser.add_argument("--rate", type=float, default=4.0, help="permitted page requests/s")
    parser.add_argument("--timeout", type=float, default=None, help="longest crawl, seconds")
    parser.add_argument("--bursts", action="store_true", help="three kinds of rate limit")
    parser.add_argument(
        "--seeded", action="store_true", help="--redis: every page queued from the start"
    )
    parser.add_argument("--variants", default="abc", help="which variants to run (abctk)")
    parser.add_argument("--crawlee", default=None, help="variant k: a Python that has crawlee")
    parser.add_argument("--slowing", action="store_true", help="a server slowing under load")
    args = parser.parse_args()
    args.origins = args.origins or (2 if args.quick else 6)
    args.pages = args.pages or (20 if args.quick else 120)
    timeout = args.timeout or (30.0 if args.quick else 120.0)
    say(
        f"{args.origins} origins at {args.rate:g} pages/s (429 + Retry-After: {RETRY_AFTER} "
        f"beyond), a 503 window ({WINDOW[0]:g}-{WINDOW[1]:g} s, Retry-After: "
        f"{WINDOW_RETRY_AFTER}), a 403 wall after {WALL_AFTER} pages; {args.pages + 1} pages "
        f"each; RetryMiddleware at Scrapy's defaults; CONCURRENT_REQUESTS_PER_DOMAIN 8\n"
    )
    rows: dict[str, dict[str, Any]] = {}
    for variant in args.variants:
        with PushbackSite() as site:
            kinds = build(site, args)
            crawl = run_variant(variant, kinds, timeout, args.crawlee)
            log = site.log()
            row = figures(log, kinds, args.rate)
        if args.bursts or args.slowing:
            say(f"{NAMES[variant]}:")
        if args.bursts:
            kind_table(log, kinds, args.rate)
        if kinds["slowing"] is not None:
            say(slowing_line(log, kinds["slowing"]))
        row["gave_up"] = crawl["stats"].get("retry/max_reached", 0)
        row["elapsed"] = crawl["elapsed"]
        rows[NAMES[variant]] = row
    say("")
    table(rows)
    say(
        "\n429/100 pages, 429s, rate use, steady (its second half, all pages served): the "
        "rate-limited origins; lost: pages of those and "
        "the 503 origin never served;\nin flight at resume: the most requests of one origin in "
        "flight in the first second after a pause it asked for ended\n(goal for scrapy-rep: 1; "
        "0: nothing was asked in that second, the pages were given up or never found)."
    )
    if args.redis:
        tmp = Path(tempfile.mkdtemp(prefix="bench-pushback-"))
        cluster: dict[str, dict[str, Any]] = {}
        try:
            for workers in (1, 3):
                with PushbackSite() as site:
                    kinds = build(site, args, wall=False)
                    kinds["rate"] = args.rate
                    started = time.monotonic()
                    row = run_cluster(workers, kinds, site, tmp, timeout, args.seeded)
                    row["elapsed"] = time.monotonic() - started
                    name = f"scrapy-rep redis, {workers} worker{'s' if workers > 1 else ''}"
                    cluster[name] = row
                    if args.bursts:
                        say(f"\n{name}, per kind of rate limit:")
                        kind_table(site.log(), kinds, args.rate)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        say(f"\n--redis: the {args.origins} rate-limited origins, scrapy-redis workers\n")
        table(cluster)
        one, three = cluster.values()
        ratio = three["429"] / one["429"] if one["429"] else float("inf")
        say(f"\ncluster's 429s / one worker's: {ratio:.2f} (goal: <= 1)")
        say(
            f"429s at first contact (before a pause could end): {one['opening_429']:.0f} with "
            f"one worker, {three['opening_429']:.0f} with three"
        )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "crawl":
        print(json.dumps(child_crawl(read_child_config())), flush=True)
    else:
        main()

"""Broad crawls at scale: the judging path over many origins, and a broad crawl on loopback.

Usage: ``python benchmarks/bench_scale.py [--quick] [--runs N] [--origins K]
[--frontier lazy|full] [--uses USE ...] [--profile] [--ballast N] [--promotions [lines]]
[--pick scan|idle-first]``

(a) **Judging path.** For 100, 1,000, 10,000 and 100,000 origins (``--quick``:
up to 10,000), each origin gets one of Protego's 4,231 real robots.txt files
(``corpus.py``), cycled, with a comment line naming the origin appended, so
every origin has its own digest. Pass 1 builds each origin's policy with
``next_policy`` and judges one URL (the cold cost: policy + parse + first
answer). Passes 2+ visit the origins round-robin, as a broad crawl's
``DownloaderAwarePriorityQueue`` does, one URL each (built from the file's
own rules by ``corpus.urls_for``), through :func:`judge_cached`: the code a
request of a cached origin runs. µs (of process CPU time, so other work on
the machine does not count) per judged request is the median over passes
2+. A pass is at least 5,000 requests (100 origins go round 50 times); one
longer than the time budget stops early and the next goes on from where it
stopped, so the round-robin cycle stays as long as the
number of origins. RSS growth per cached origin is read from /proc after
pass 1 (policies, bodies, parsed files). Each size runs in a fresh process.

:func:`judge_and_record` adds what the middleware does with the answer
(``meta["rep_decision"]``, stats on a real ``MemoryStatsCollector``, the
per-origin counters); it is timed in isolation at 100 origins.

Both functions mirror ``RobotsService.answer`` (scrapy_rep/crawl/service.py);
when the service changes, retarget them and nothing else.

(b) **Broad crawl.** One server process listens on ONE port on K addresses
127.1.y.z (``--origins``; default 4,000, quick 500; Linux routes all of
127.0.0.0/8 to the loopback interface, so no setup is needed). Origin i
serves a real robots.txt from the corpus (cycled, with its own comment
line), 3 pages its file allows and 1 page its file disallows for
``benchbot`` (Protego and scrapy-rep both agree on each; files where 3
allowed paths cannot be found are skipped). Pages link nowhere; the spider
starts from every page URL, round-robin over origins, with the settings
Scrapy's broad-crawl docs recommend. The server counts robots.txt requests
and disallowed pages fetched. Three variants, each in a fresh process,
alternating: (a) ``ROBOTSTXT_OBEY=False``, (b) Scrapy's built-in middleware,
(c) ``ADDONS = {"scrapy_rep.Addon": 100}`` with ``REP_CRAWL_DELAY_MAX = 0``,
Crawl-delay off (781 of the files ask for a Crawl-delay, which only scrapy-rep
honours; with it on, (c) measures politeness, not overhead).

``--frontier full`` is the shape of a broad crawl under way: the spider puts
every request (4 per origin) into the scheduler before the first download
(``engine.crawl``), ``DownloaderAwarePriorityQueue``, ``CONCURRENT_REQUESTS =
64``, ``CONCURRENT_REQUESTS_PER_DOMAIN = 2``, Scrapy's ``CONCURRENT_ITEMS``.
There about half of every variant's CPU is the garbage collector walking the
queued requests, so each run also reports the time in full (generation 2)
collections and their number (``gc.callbacks``, ``gc.get_stats()``) and, at
close, the most common object types of the old generation. Two diagnostics
explain those numbers (neither is a variant): ``--ballast N`` keeps N small
objects alive in one more scrapy-rep crawl (how the collector's trigger
depends on the old generation's size), ``--promotions`` counts, in one more
crawl of the built-in and of scrapy-rep, the objects young collections move
into the old generation, by package and type (what brings each full
collection closer; ``--promotions lines`` also by allocating line, traced
with ``tracemalloc``, which is slow and changes the counts, so compare counts
untraced and run it with ``--origins 500``).
``--pick idle-first`` runs every variant with the scheduler queue of
``idle_first.py``: Scrapy's pick without its scan of every host, to show what
the ratios become when the pick is cheap (also a diagnostic).

pages/s = pages served / (last request - first request), seen by the server;
handled/s = every request the server answered (robots.txt and 404s too) over the same span;
CPU per request = the crawl process's getrusage user+sys from spider_opened
to spider_closed / every request the server answered it (pages and
robots.txt); peak RSS = ru_maxrss. Medians of ``--runs``.

Nothing here fails on a number; targets are printed as met or missed.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import functools
import gc
import io
import json
import logging
import os
import pstats
import random
import re
import statistics
import sys
import time
import tracemalloc
from collections import Counter
from collections.abc import Sequence
from typing import Any

import corpus
from _common import (
    LABELS,
    ROOT,
    TOKEN,
    USER_AGENT,
    VARIANTS,
    HttpConn,
    ServerProcess,
    med,
    read_child_config,
    run_child,
    run_crawler,
    say,
    serve_commands,
)
from scrapy.utils.misc import load_object

from scrapy_rep.core.decision import judge_record
from scrapy_rep.core.policy import FetchResult, Status, next_policy
from scrapy_rep.crawl.telemetry import Telemetry
from scrapy_rep.runtime.settings import RepSettings
from scrapy_rep.runtime.store.memory import PolicyCache

logger = logging.getLogger("scrapy_rep.crawl.service")  # the service's logger, as it logs

URLS_PER_FILE = 8
#: the judging path is timed in CPU time: this machine's other work does not count
CPU_NS = time.process_time_ns
#: requests in a pass at least: small sizes go round several times (next URL each time)
MIN_PASS = 5_000
SIZES = (100, 1_000, 10_000, 100_000)
QUICK_SIZES = (100, 1_000, 10_000)


# --------------------------------------------------------------------------- (a) judging


def judge_cached(cache: PolicyCache, origin: str, url: str, token: str) -> dict[str, Any]:
    """The judging path of a request whose origin is cached: what the middleware runs.

    ``RobotsService.answer``: cache lookup, the parsed file, ``judge``, the
    record. Retarget this (and only this) when the service changes.
    """
    policy = cache.get(origin)
    assert policy is not None
    robots = cache.robots(policy) if policy.status is Status.OK else None
    return judge_record(origin, token, url, policy, robots)


class Recorder:
    """What the middleware records a decision in: its Telemetry over Scrapy's stats."""

    def __init__(self, cache: PolicyCache, token: str) -> None:
        from scrapy.statscollectors import MemoryStatsCollector
        from scrapy.utils.test import get_crawler

        self.cache, self.token = cache, token
        self.stats = MemoryStatsCollector(get_crawler())
        max_origins = RepSettings.from_settings(_defaults().get).cache_max_origins
        self.telemetry = Telemetry(self.stats, max_origins=max_origins)


def judge_and_record(rec: Recorder, origin: str, request: Any) -> dict[str, Any]:
    """:func:`judge_cached` plus what ``RobotsMiddleware.process_request`` does with the answer."""
    record = judge_cached(rec.cache, origin, request.url, rec.token)
    request.meta["rep_decision"] = record
    rec.telemetry.judged(origin, record, "hit")
    return record


def _defaults() -> Any:
    from scrapy.settings import Settings

    from scrapy_rep.runtime.settings import DEFAULTS

    return Settings({**DEFAULTS, "USER_AGENT": USER_AGENT})


def _rss() -> int:
    """Resident set size now, bytes."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _judge_child(config: dict[str, Any]) -> None:
    """n origins, round-robin passes; print µs per judged request and RSS per origin."""
    n, passes, budget = config["n"], config["passes"], config["budget"]
    settings = RepSettings.from_settings(_defaults().get)
    cases, where = corpus.real(URLS_PER_FILE)
    if not cases:
        print(json.dumps({"error": where}))
        return
    bodies = [c.body if c.body.endswith(b"\n") else c.body + b"\n" for c in cases]
    paths = [tuple(u[len(corpus.HOST) :] for u in c.urls) for c in cases]
    m = len(cases)
    # fewer origins than files: an even spread of the corpus, not its first files
    files = [i * m // n if n < m else i % m for i in range(n)]
    origins = [f"https://site-{i}.example:443" for i in range(n)]
    bases = [f"https://site-{i}.example" for i in range(n)]
    headers = {"content-type": "text/plain"}
    cache = PolicyCache(settings.cache_max_origins)
    now = time.time()
    decisions: Counter[str] = Counter()
    gc.collect()
    # The benchmark's own data (corpus, URLs) out of the collector's way; what
    # the cache allocates from here on is collected as in a crawl.
    gc.freeze()
    rss0 = _rss()

    started = time.process_time()
    for i in range(n):
        k = files[i]
        robots_url = bases[i] + "/robots.txt"
        body = bodies[k] + b"# scrapy-rep bench_scale origin %d\n" % i
        result = FetchResult(robots_url, robots_url, 200, body, headers)
        cache.put(origins[i], next_policy(cache.get(origins[i]), result, now, settings.policy))
        record = judge_cached(cache, origins[i], bases[i] + paths[k][0], TOKEN)
        decisions[record["rep_decision"]] += 1
    cold_us = (time.process_time() - started) / n * 1e6
    gc.collect()
    rss1 = _rss()

    # round-robin; each cycle over the origins asks each one its next URL
    cursor, cycle, timed = 0, 1, []
    size = max(n, MIN_PASS)
    for _ in range(1, passes):
        done, deadline = 0, time.monotonic() + budget
        t0 = CPU_NS()
        while done < size:
            chunk = min(256, size - done)
            for _ in range(chunk):
                ps = paths[files[cursor]]
                judge_cached(cache, origins[cursor], bases[cursor] + ps[cycle % len(ps)], TOKEN)
                cursor += 1
                if cursor == n:
                    cursor, cycle = 0, cycle + 1
            done += chunk
            if time.monotonic() > deadline:
                break
        timed.append({"requests": done, "us": (CPU_NS() - t0) / done / 1e3})
    gc.collect()
    out: dict[str, Any] = {
        "n": n,
        "files": m,
        "cold_us": cold_us,
        "passes": timed,
        "us": statistics.median(t["us"] for t in timed),
        "rss_growth": rss1 - rss0,
        "rss_per_origin": (rss1 - rss0) / n,
        "rss_growth_end": _rss() - rss0,
        "cached": len(cache),
        "parsed_cached": len(cache._parsed),
        "decisions": dict(decisions),
    }
    if config.get("isolate"):
        own = [paths[k] for k in files]
        out["isolated"] = _isolated(cache, origins, bases, own, config["reps"])
    print(json.dumps(out))


def _isolated(
    cache: PolicyCache,
    origins: list[str],
    bases: list[str],
    paths: list[tuple[str, ...]],
    reps: int,
) -> dict[str, Any]:
    """judge_cached vs judge_and_record on the same requests, alternating; µs per request."""
    from scrapy import Request

    rec = Recorder(cache, TOKEN)
    work = [
        (origins[i], Request(bases[i] + paths[i][j % len(paths[i])]))
        for j in range(URLS_PER_FILE)
        for i in range(len(origins))
    ]
    bare: list[float] = []
    recorded: list[float] = []
    loop: list[float] = []
    for _ in range(reps):
        t0 = CPU_NS()
        for _origin, _request in work:
            pass
        t1 = CPU_NS()
        for origin, request in work:
            judge_cached(cache, origin, request.url, TOKEN)
        t2 = CPU_NS()
        for origin, request in work:
            judge_and_record(rec, origin, request)
        t3 = CPU_NS()
        loop.append((t1 - t0) / len(work) / 1e3)
        bare.append((t2 - t1) / len(work) / 1e3)
        recorded.append((t3 - t2) / len(work) / 1e3)
    return {
        "requests": len(work),
        "reps": reps,
        "loop_us": statistics.median(loop),
        "judge_us": statistics.median(bare),
        "judge_and_record_us": statistics.median(recorded),
        "stats_keys": sorted(rec.stats.get_stats()),
    }


def run_judging(
    sizes: Sequence[int], passes: int, budget: float, reps: int
) -> list[dict[str, Any]]:
    results = []
    for n in sizes:
        config = {"n": n, "passes": passes, "budget": budget, "isolate": n == min(sizes)}
        config["reps"] = reps
        started = time.monotonic()
        result = run_child(__file__, "_judge", config, timeout=900)
        if "error" in result:
            raise RuntimeError(result["error"])
        results.append(result)
        say(
            f"  {n:,} origins: cold {result['cold_us']:.0f} µs/origin, "
            f"{result['us']:.1f} µs per judged request, "
            f"{result['rss_per_origin'] / 1024:.2f} KiB RSS per origin "
            f"({time.monotonic() - started:.0f}s, load {os.getloadavg()[0]:.1f})"
        )
    return results


# --------------------------------------------------------------------------- (b) the site

PAGE_FILLER = "<p>" + "lorem ipsum dolor sit amet " * 30 + "</p>"
#: plain paths tried first for the allowed pages; rule-derived ones after
PLAIN = ("/", "/index.html", "/about", "/news/1", "/p/1", "/p/2", "/p/3", "/contact", "/a/b/c")
ALLOWED_PAGES, DISALLOWED_PAGES = 3, 1
#: paths Scrapy sends as written (no escapes to normalise, no empty query to strip),
#: so the server's hits match the plan exactly
_SIMPLE = re.compile(r"/[A-Za-z0-9/._~=&-]*(\?[A-Za-z0-9._~=&-]+)?")


def address(i: int) -> str:
    """Origin i's loopback address: 127.1.0.1, ... (last octet 1-250, no .0 or .255)."""
    return f"127.{1 + i // 64_000}.{i // 250 % 256}.{1 + i % 250}"


def plan_site(k: int, seed: int) -> dict[str, Any]:
    """Bodies and page paths for k origins; ground truth agreed by Protego and scrapy-rep."""
    from protego import Protego

    from scrapy_rep.robotstxt import parse

    cases, where = corpus.real(1)
    if not cases:
        raise RuntimeError(where)
    order = list(range(len(cases)))
    random.Random(seed).shuffle(order)
    usable: list[tuple[bytes, list[str], list[str]]] = []
    skipped = 0
    for index in order:
        if len(usable) >= k:
            break
        body = cases[index].body
        body = body if body.endswith(b"\n") else body + b"\n"
        rng = random.Random(f"{seed}:{cases[index].name}")
        derived = [u[len(corpus.HOST) :] for u in corpus.urls_for(body, rng, 40)]
        candidates = list(dict.fromkeys([*PLAIN, *(p for p in derived if _SIMPLE.fullmatch(p))]))
        try:
            rep = parse(body)
            protego = Protego.parse(body.decode("utf-8", "ignore"))
        except Exception:
            skipped += 1
            continue
        allowed, disallowed = [], []
        for path in candidates:
            url = "http://example.com" + path
            ours, theirs = rep.allowed(TOKEN, url), protego.can_fetch(url, USER_AGENT)
            if ours and theirs and len(allowed) < ALLOWED_PAGES:
                allowed.append(path)
            elif not ours and not theirs and len(disallowed) < DISALLOWED_PAGES:
                disallowed.append(path)
        if len(allowed) < ALLOWED_PAGES:
            skipped += 1
            continue
        usable.append((body, allowed, disallowed))
    origins = []
    for i in range(k):
        body, allowed, disallowed = usable[i % len(usable)]
        origins.append(
            {
                "body": body + b"# scrapy-rep bench_scale origin %d\n" % i,
                "allowed": allowed,
                "disallowed": disallowed,
            }
        )
    return {"origins": origins, "files": len(usable), "skipped": skipped, "source": where}


class ScaleSite:
    """K origins on K addresses and one port: what each serves, and what was asked."""

    def __init__(self, k: int, seed: int) -> None:
        plan = plan_site(k, seed)
        self.k = k
        self.bodies: list[bytes] = [o["body"] for o in plan["origins"]]
        self.allowed: list[frozenset[str]] = [frozenset(o["allowed"]) for o in plan["origins"]]
        self.disallowed: list[frozenset[str]] = [
            frozenset(o["disallowed"]) for o in plan["origins"]
        ]
        self.info = {k: v for k, v in plan.items() if k != "origins"}
        self.reset()

    def reset(self) -> None:
        self.counts: Counter[str] = Counter()
        self.robots_by_origin = [0] * self.k
        self.seen: set[tuple[int, str]] = set()
        self.first = self.last = 0.0
        self.cpu0 = time.process_time()

    def summary(self) -> dict[str, Any]:
        return {
            **self.counts,
            "span": max(self.last - self.first, 1e-9),
            "robots_twice": sum(1 for n in self.robots_by_origin if n > 1),
            "server_cpu": time.process_time() - self.cpu0,
        }


class ScaleConn(HttpConn):
    def __init__(self, site: ScaleSite, i: int) -> None:
        super().__init__()
        self.site, self.i = site, i

    def _serve(self, target: str) -> None:
        site, i, now = self.site, self.i, time.monotonic()
        if not site.first:
            site.first = now
        site.last = now
        counts = site.counts
        counts["requests"] += 1
        if target == "/robots.txt":
            counts["robots"] += 1
            site.robots_by_origin[i] += 1
            self._send(200, site.bodies[i], {"Content-Type": "text/plain"})
            return
        bad = target in site.disallowed[i]
        if not bad and target not in site.allowed[i]:
            counts["not_found"] += 1
            self._send(404, b"not here")
            return
        counts["pages"] += 1
        if bad:
            counts["disallowed"] += 1
        if (i, target) in site.seen:
            counts["duplicate"] += 1
        site.seen.add((i, target))
        self._send(200, f"<html><body><h1>{target}</h1>{PAGE_FILLER}</body></html>".encode())


async def _serve_main(k: int, seed: int) -> None:
    site = ScaleSite(k, seed)
    loop = asyncio.get_running_loop()
    servers: list[asyncio.AbstractServer] = []
    port = 0
    for i in range(k):
        server = await loop.create_server(
            functools.partial(ScaleConn, site, i), address(i), port, backlog=128, reuse_address=True
        )
        port = port or server.sockets[0].getsockname()[1]
        servers.append(server)

    def handle(command: dict[str, Any]) -> dict[str, Any] | None:
        if command["cmd"] == "reset":
            site.reset()
            return {"ok": True}
        if command["cmd"] == "summary":
            return site.summary()
        return None

    pages = [[*site.allowed[i], *site.disallowed[i]] for i in range(k)]
    await serve_commands({"port": port, "pages": pages, **site.info}, handle)
    for server in servers:
        server.close()


class ScaleServer(ServerProcess):
    def __init__(self, k: int, seed: int) -> None:
        super().__init__(__file__, "_serve", str(k), str(seed))
        self.port: int = self.hello["port"]
        self.pages: list[list[str]] = self.hello["pages"]

    def seeds(self) -> list[str]:
        """Every page of every origin, round-robin over the origins."""
        most = max(len(p) for p in self.pages)
        return [
            f"http://{address(i)}:{self.port}{pages[j]}"
            for j in range(most)
            for i, pages in enumerate(self.pages)
            if j < len(pages)
        ]


# --------------------------------------------------------------------------- (b) the crawl

#: Scrapy's broad-crawl advice (docs: topics/broad-crawls), on loopback
BROAD: dict[str, Any] = {
    "USER_AGENT": USER_AGENT,
    "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.DownloaderAwarePriorityQueue",
    "CONCURRENT_REQUESTS": 100,
    "REACTOR_THREADPOOL_MAXSIZE": 20,
    "LOG_LEVEL": "INFO",
    "COOKIES_ENABLED": False,
    "RETRY_ENABLED": False,
    "REDIRECT_ENABLED": False,
    "DOWNLOAD_TIMEOUT": 30,
    "TELNETCONSOLE_ENABLED": False,
    "CLOSESPIDER_TIMEOUT": 500,
    # As in bench_crawl.py: Scrapy 2.19 starts CONCURRENT_ITEMS (100) tasks per
    # response, ~75% of a lean crawl's CPU here; the spider yields nothing, so
    # fewer make Scrapy faster and the robots.txt middleware's share visible.
    "CONCURRENT_ITEMS": 4,
}
SCALE_VARIANTS: dict[str, dict[str, Any]] = {
    **VARIANTS,
    "c": {**VARIANTS["c"], "REP_CRAWL_DELAY_MAX": 0},
}
#: ``--frontier full``: a broad crawl under way, every request in the scheduler from the
#: start (the spider schedules all seeds before the first download), as the issue measured it
FULL_FRONTIER: dict[str, Any] = {
    "CONCURRENT_REQUESTS": 64,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 2,
    "CONCURRENT_ITEMS": 100,  # Scrapy's default: this shape is Scrapy as configured, not lean
}
#: ``--pick``: the scheduler's priority queue of every variant (idle-first is a diagnostic)
PICKS = {
    "scan": "scrapy.pqueues.DownloaderAwarePriorityQueue",
    "idle-first": "idle_first.IdleFirstQueue",
}
#: object types counted in the old generation at close (the top ones are printed)
GC_TOP = 8


def _crawl_child(config: dict[str, Any]) -> None:
    import scrapy

    import scrapy_rep

    errors: Counter[str] = Counter()
    full = config.get("frontier") == "full"
    gc_clock = GcClock()
    queue_cls = PICKS[config.get("pick", "scan")]
    picks = SchedulerPicks(load_object(queue_cls)) if full else None
    # diagnostic (--ballast): small tracked objects kept alive for the whole crawl
    ballast = [[n] for n in range(config.get("ballast", 0))]
    # diagnostic (--promotions): what each young collection moved into the old generation
    mode = config.get("promotions")  # None, "types" or "lines" (traced)
    promotions = Promotions(traced=mode == "lines") if mode else None
    old_generation: dict[str, int] = {}

    class ScaleSpider(scrapy.Spider):
        name = "scale"

        async def start(self) -> Any:
            requests = (
                scrapy.Request(url, callback=self.parse, errback=self.failed)
                for url in config["seeds"]
            )
            if full:  # all of them in the scheduler before the first download
                engine = self.crawler.engine
                for request in requests:
                    engine.crawl(request)
                return
            for request in requests:
                yield request

        def closed(self, reason: str) -> None:
            # what the collector walks at the end: tracked objects of the old generation
            counted = Counter(type(o).__name__ for o in gc.get_objects(generation=2))
            old_generation.update(counted.most_common(GC_TOP))
            old_generation["(all)"] = sum(counted.values())

        def parse(self, response: Any) -> None:
            return None  # the pages link nowhere

        def failed(self, failure: Any) -> None:
            errors[type(failure.value).__name__] += 1

    settings = {**BROAD, **(FULL_FRONTIER if full else {}), **config["settings"]}
    settings["SCHEDULER_PRIORITY_QUEUE"] = queue_cls
    profiler = cProfile.Profile() if config.get("profile") else None
    if profiler is not None:
        profiler.enable()
    if promotions is not None:
        promotions.start()
    gc_clock.start()
    result = run_crawler(ScaleSpider, settings, errors)
    gc_clock.stop()
    if promotions is not None:
        promotions.stop()
        result["promotions"] = promotions.summary()
    del ballast
    if picks is not None:
        result["scheduler"] = picks.summary()
    if profiler is not None:
        profiler.disable()
        result["profile"] = _profile_text(profiler)
    result["gc"] = {**gc_clock.summary(), "old_generation": old_generation}
    result["scrapy_rep"] = scrapy_rep.__file__
    print(json.dumps(result, default=str))


class Promotions:
    """What the young collections move into the old generation, by type and by line.

    CPython starts a full collection once the objects moved there since the
    last one exceed a quarter of it; this counts them, by type, at every
    generation-1 collection (the old generation's objects before, against
    after), and, when ``traced``, by the line that allocated them (``tracemalloc``): the
    innermost line of scrapy-rep's, else the innermost outside asyncio and
    the standard library. Walking the old generation twice per collection
    slows the crawl; tracing every allocation (``lines``, for the by-line
    count only) slows it several times over and changes what it promotes
    (at 500 origins 1.085× the built-in's traced, 1.019× untraced): compare
    counts untraced, and run ``lines`` with fewer origins (``--origins 500``).
    """

    def __init__(self, traced: bool) -> None:
        self.traced = traced
        self.moved: Counter[str] = Counter()
        self.sites: Counter[str] = Counter()
        self._before: set[int] = set()

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if info["generation"] != 1:
            return
        if phase == "start":
            self._before = {id(o) for o in gc.get_objects(generation=2)}
            return
        before, moved, sites = self._before, self.moved, self.sites
        for o in gc.get_objects(generation=2):
            if id(o) not in before:
                kind = type(o)
                moved[f"{kind.__module__}.{kind.__qualname__}"] += 1
                if self.traced:
                    sites[_allocated_at(tracemalloc.get_object_traceback(o))] += 1
        self._before = set()

    def start(self) -> None:
        if self.traced:
            tracemalloc.start(PROMOTED_FRAMES)
        gc.callbacks.append(self._callback)

    def stop(self) -> None:
        gc.callbacks.remove(self._callback)
        if self.traced:
            tracemalloc.stop()

    def summary(self) -> dict[str, Any]:
        by_package: Counter[str] = Counter()
        for name, n in self.moved.items():
            by_package[_package(name)] += n
        return {
            "total": sum(self.moved.values()),
            "by_package": dict(by_package.most_common()),
            "top": dict(self.moved.most_common(PROMOTED_TOP)),
            "by_type": dict(self.moved),
            "by_site": dict(self.sites),
        }


def _allocated_at(traceback: tracemalloc.Traceback | None) -> str:
    """The line an object is charged to: scrapy-rep's innermost, else the innermost of a library."""
    if traceback is None:
        return "(before tracing)"
    frames = list(traceback)  # oldest first
    for frame in reversed(frames):
        if "/scrapy_rep/" in frame.filename:
            return f"scrapy_rep/{frame.filename.rpartition('/scrapy_rep/')[2]}:{frame.lineno}"
    for frame in reversed(frames):
        name = frame.filename
        if not any(part in name for part in _PLUMBING):
            return f"{name.rpartition('site-packages/')[2]}:{frame.lineno}"
    return "(the standard library)"


#: types and lines printed by --promotions
PROMOTED_TOP = 12
#: frames kept per allocation by --promotions: deep enough to reach the caller of asyncio's
PROMOTED_FRAMES = 16
#: where an allocation is not charged (the caller's line is): the event loop, the stdlib's helpers
_PLUMBING = ("/asyncio/", "/contextlib.py", "/functools.py", "/weakref.py", "<frozen ")
#: modules counted together by --promotions (first prefix that matches)
PROMOTED_PACKAGES = (
    ("asyncio", ("asyncio.", "_asyncio.", "_contextvars.")),
    ("twisted", ("twisted.",)),
    ("scrapy-rep", ("scrapy_rep.",)),
    ("protego", ("protego.",)),
    ("scrapy", ("scrapy.",)),
    ("builtins", ("builtins.",)),
)


def _package(name: str) -> str:
    for package, prefixes in PROMOTED_PACKAGES:
        if name.startswith(prefixes):
            return package
    return "other"


class GcClock:
    """Time spent in the garbage collector, by generation (``gc.callbacks``), and collections.

    Process CPU time inside each collection (on a shared machine, wall time
    would count the other work too); collections per generation from
    ``gc.get_stats()``, counted from start.
    """

    def __init__(self) -> None:
        self.seconds = [0.0, 0.0, 0.0]
        self._began = 0.0
        self._stats0: list[dict[str, Any]] = []

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._began = time.process_time()
        else:
            self.seconds[info["generation"]] += time.process_time() - self._began

    def start(self) -> None:
        self._stats0 = gc.get_stats()
        gc.callbacks.append(self._callback)

    def stop(self) -> None:
        gc.callbacks.remove(self._callback)
        self._stats1 = gc.get_stats()

    def summary(self) -> dict[str, Any]:
        def since_start(key: str) -> list[int]:
            return [
                after[key] - before[key]
                for before, after in zip(self._stats0, self._stats1, strict=True)
            ]

        collections = since_start("collections")
        collected = since_start("collected")
        return {
            "seconds": sum(self.seconds),
            "gen2_seconds": self.seconds[2],
            "gen2_collections": collections[2],
            "collections": collections,
            # unreachable objects found and freed (cyclic garbage), per generation
            "collected": collected,
        }


class SchedulerPicks:
    """How often ``DownloaderAwarePriorityQueue`` picked a request, and among how many hosts.

    Scrapy's pick scans every host with queued requests (a tuple each), so a
    broad frontier's picks cost CPU in proportion to its hosts (``--pick
    idle-first`` does without the scan); a request parked and released is
    picked twice.
    """

    def __init__(self, queue_cls: Any) -> None:
        self.picks = self.hosts = 0
        pop = queue_cls.pop

        def counted(queue: Any) -> Any:
            self.picks += 1
            self.hosts += len(queue.pqueues)
            return pop(queue)

        queue_cls.pop = counted

    def summary(self) -> dict[str, Any]:
        return {"picks": self.picks, "hosts_per_pick": self.hosts / max(self.picks, 1)}


def _profile_text(profiler: cProfile.Profile) -> str:
    """scrapy_rep's top 15 entries by cumulative time, and the process's top 20 by own time."""
    stream = io.StringIO()
    stats = pstats.Stats(profiler, stream=stream)
    stats.sort_stats("cumulative").print_stats(r"scrapy_rep/", 15)
    total = io.StringIO()
    pstats.Stats(profiler, stream=total).strip_dirs().sort_stats("tottime").print_stats(20)
    text = stream.getvalue() + "\n--- whole process, top 20 by own time ---\n" + total.getvalue()
    return text.replace(str(ROOT) + "/", "")


def run_crawl(
    server: ScaleServer,
    variant: str,
    *,
    frontier: str = "lazy",
    profile: bool = False,
    ballast: int = 0,
    promotions: str | None = None,
    uses: Sequence[str] = (),
    pick: str = "scan",
) -> dict[str, Any]:
    server.ask(cmd="reset")
    settings = SCALE_VARIANTS[variant]
    if uses and variant == "c":
        settings = {**settings, "REP_USES": list(uses)}
    config = {
        "seeds": server.seeds(),
        "settings": settings,
        "frontier": frontier,
        "profile": profile,
        "ballast": ballast,
        "promotions": promotions,
        "pick": pick,
    }
    result = run_child(__file__, "_crawl", config, timeout=2400 if promotions else 600)
    return {**result, "site": server.ask(cmd="summary")}


def pages_per_s(run: dict[str, Any]) -> float:
    return float(run["site"].get("pages", 0) / run["site"]["span"])


def cpu_us_per_request(run: dict[str, Any]) -> float:
    return float(run["cpu"] / max(run["site"].get("requests", 0), 1) * 1e6)


def rss_mib(run: dict[str, Any]) -> float:
    return float(run["maxrss_kb"] / 1024)


def handled_per_s(run: dict[str, Any]) -> float:
    """Every request the server answered (pages, robots.txt, 404s) per second."""
    return float(run["site"].get("requests", 0) / run["site"]["span"])


def cpu_us_outside_gc(run: dict[str, Any]) -> float:
    """CPU per request spent outside the garbage collector: the crawl's own work."""
    requests = max(run["site"].get("requests", 0), 1)
    return float((run["cpu"] - run["gc"]["seconds"]) / requests * 1e6)


def picks(run: dict[str, Any]) -> float:
    return float(run.get("scheduler", {}).get("picks", 0))


def gc_seconds(run: dict[str, Any]) -> float:
    return float(run["gc"]["gen2_seconds"])


def gc_gen2(run: dict[str, Any]) -> float:
    return float(run["gc"]["gen2_collections"])


def site_count(key: str) -> Any:
    return lambda run: float(run["site"].get(key, 0))


# --------------------------------------------------------------------------- report


def report_judging(results: list[dict[str, Any]], passes: int, budget: float) -> dict[str, Any]:
    base = results[0]["us"]
    say(
        f"\n### Judging path: origins visited round-robin, real robots.txt files "
        f"({results[0]['files']:,} of Protego's, cycled, one digest per origin)"
    )
    say(
        f"\n| active origins | µs per judged request (median of passes 2–{passes}) | "
        "vs 100 origins | each pass | cold: policy + parse + first answer, µs/origin | "
        "RSS growth per cached origin | parsed files cached |"
    )
    say("|---|---|---|---|---|---|---|")
    for r in results:
        each = ", ".join(
            f"{p['us']:.1f}" + ("" if p["requests"] == r["n"] else f" ({p['requests']:,} req)")
            for p in r["passes"]
        )
        say(
            f"| {r['n']:,} | {r['us']:.1f} | {r['us'] / base:.2f}× | {each} | "
            f"{r['cold_us']:.0f} | {r['rss_per_origin'] / 1024:.2f} KiB | "
            f"{r['parsed_cached']:,} |"
        )
    say(
        f"\nA pass visits every origin once (one URL each); one that runs past {budget:.0f} s "
        "stops early (request count shown) and the next goes on from there. "
        "Decisions in pass 1: " + "; ".join(f"{r['n']:,}: {r['decisions']}" for r in results[-1:])
    )
    iso = results[0].get("isolated")
    if iso:
        say(
            f"\n### Judge and record, in isolation ({results[0]['n']} origins, "
            f"{iso['requests']} requests, median of {iso['reps']} rounds)"
        )
        say("\n| path | µs per request |")
        say("|---|---|")
        say(f"| judge_cached (lookup, robots(), judge, to_dict) | {iso['judge_us']:.2f} |")
        say(
            "| judge_and_record (+ meta, MemoryStatsCollector, per-origin counts) | "
            f"{iso['judge_and_record_us']:.2f} |"
        )
        say(f"| the benchmark's own loop | {iso['loop_us']:.2f} |")
    by_n = {r["n"]: r for r in results}
    checks = []
    for n in (10_000, 100_000):
        if n in by_n:
            checks.append(
                (f"judging at {n:,} origins within 1.5× of 100", by_n[n]["us"] <= 1.5 * base)
            )
    if 100_000 in by_n:
        checks.append(
            (
                "100,000 origins cached: ≤ 4 KiB RSS growth per origin",
                by_n[100_000]["rss_per_origin"] <= 4096,
            )
        )
    if iso:
        checks.append(("judge-and-record ≤ 8 µs per request", iso["judge_and_record_us"] <= 8))
    return {"checks": checks}


def report_crawl(
    runs: dict[str, list[dict[str, Any]]],
    n_runs: int,
    k: int,
    hello: dict[str, Any],
    frontier: str = "lazy",
) -> dict[str, Any]:
    seeds_allowed = k * ALLOWED_PAGES
    seeds_disallowed = sum(1 for p in hello["pages"] for _ in p) - seeds_allowed
    shape = (
        "every request in the scheduler at start, DownloaderAwarePriorityQueue, "
        "CONCURRENT_REQUESTS=64, PER_DOMAIN=2"
        if frontier == "full"
        else "seeds yielded lazily, CONCURRENT_REQUESTS=100"
    )
    say(
        f"\n### Broad crawl ({frontier} frontier: {shape}): {k:,} origins on 127.1.y.z, one "
        f"port; real robots.txt files ({hello['files']:,} distinct, {hello['skipped']} skipped "
        f"for lack of 3 allowed paths); {seeds_allowed:,} allowed + {seeds_disallowed:,} "
        "disallowed seed pages"
    )
    say(
        f"\n| variant | pages/s (median of {n_runs}) | vs (a) | crawler CPU µs/request "
        f"(median) | vs (b) | least of {n_runs} | peak RSS MiB | robots.txt requests | "
        "disallowed pages fetched | pages fetched | wall s |"
    )
    say("|---|---|---|---|---|---|---|---|---|---|---|")
    base_rate = med(runs["a"], pages_per_s)
    b_cpu = med(runs["b"], cpu_us_per_request)
    for variant, label in LABELS.items():
        rs = runs[variant]
        rate, cpu = med(rs, pages_per_s), med(rs, cpu_us_per_request)
        least = min(cpu_us_per_request(r) for r in rs)
        say(
            f"| {label} | {rate:.0f} | {rate / base_rate:.1%} | {cpu:.0f} | {cpu / b_cpu:.2f}× | "
            f"{least:.0f} | "
            f"{med(rs, rss_mib):.0f} | {med(rs, site_count('robots')):.0f} | "
            f"{max(site_count('disallowed')(r) for r in rs):.0f} | "
            f"{med(rs, site_count('pages')):.0f} | {med(rs, lambda r: r['elapsed']):.1f} |"
        )
    say(
        "\n| variant | handled/s (median) | CPU µs/request outside GC | scheduler picks "
        "(hosts queued at each) | full (gen-2) GC s (median) | gen-2 collections | "
        "all GC s | cyclic garbage freed by full collections | "
        "old-generation objects at close | most common there |"
    )
    say("|---|---|---|---|---|---|---|---|---|---|")
    for variant, label in LABELS.items():
        rs = runs[variant]
        old = rs[0]["gc"]["old_generation"]
        common = ", ".join(f"{name} {n:,}" for name, n in old.items() if name != "(all)")
        hosts = med(rs, lambda r: r.get("scheduler", {}).get("hosts_per_pick", 0))
        say(
            f"| {label} | {med(rs, handled_per_s):.0f} | {med(rs, cpu_us_outside_gc):.0f} | "
            f"{med(rs, picks):.0f} ({hosts:.0f}) | {med(rs, gc_seconds):.1f} | "
            f"{med(rs, gc_gen2):.0f} | {med(rs, lambda r: r['gc']['seconds']):.1f} | "
            f"{med(rs, lambda r: r['gc'].get('collected', [0, 0, 0])[2]):,.0f} | "
            f"{old.get('(all)', 0):,} | {common} |"
        )
    ratios: dict[str, dict[str, float]] = {}
    for other in ("b", "a"):
        ratios[other] = {
            "pages_per_s": med(runs["c"], pages_per_s) / med(runs[other], pages_per_s),
            "handled_per_s": med(runs["c"], handled_per_s) / med(runs[other], handled_per_s),
            "cpu_per_request": med(runs["c"], cpu_us_per_request)
            / med(runs[other], cpu_us_per_request),
            "peak_rss": med(runs["c"], rss_mib) / med(runs[other], rss_mib),
            "gen2_gc_seconds": med(runs["c"], gc_seconds) / max(med(runs[other], gc_seconds), 1e-9),
            "gen2_collections": med(runs["c"], gc_gen2) / max(med(runs[other], gc_gen2), 1),
            "cpu_outside_gc": med(runs["c"], cpu_us_outside_gc)
            / max(med(runs[other], cpu_us_outside_gc), 1e-9),
        }
    for other, name in (("b", "built-in"), ("a", "no-robots")):
        r = ratios[other]
        say(
            f"\nscrapy-rep / {name} (medians of the same run): pages/s {r['pages_per_s']:.3f}, "
            f"handled/s {r['handled_per_s']:.3f}, CPU per request {r['cpu_per_request']:.3f}, "
            f"peak RSS {r['peak_rss']:.3f}, gen-2 GC time {r['gen2_gc_seconds']:.3f}, "
            f"gen-2 collections {r['gen2_collections']:.3f}, "
            f"CPU per request outside GC {r['cpu_outside_gc']:.3f}"
        )
    if len(runs["c"]) > 1:
        say_rounds(runs["b"], runs["c"])
    floor = med(runs["b"], pages_per_s) / med(runs["a"], pages_per_s)
    say(
        f"the floor (one robots.txt request per origin, the built-in / no-robots): {floor:.3f}; "
        f"scrapy-rep / no-robots {ratios['a']['pages_per_s']:.3f}"
    )
    say(
        "\nEach run's pages/s: "
        + "; ".join(f"{v} " + ", ".join(f"{pages_per_s(r):.0f}" for r in runs[v]) for v in runs)
    )
    for variant in runs:
        run = runs[variant][0]
        keys = ("rep/dropped", "rep/fetch/count", "rep/parked", "rep/released", "robotstxt/")
        stats = {k: v for k, v in sorted(run["stats"].items()) if k.startswith(keys)}
        site = {k: v for k, v in run["site"].items() if k not in ("span", "server_cpu")}
        say(
            f"- {variant}: server saw {site}; errbacks {run['errors']}; "
            f"ERROR log records {sum(run['error_logs'].values())}; {stats}"
        )
    every_c = runs["c"]
    checks = (
        [
            ("full frontier: throughput ≥ 1.0× built-in", ratios["b"]["handled_per_s"] >= 1.0),
            (
                "full frontier: CPU per request ≤ 1.0× built-in",
                ratios["b"]["cpu_per_request"] <= 1.0,
            ),
            ("full frontier: peak RSS ≤ 1.0× built-in", ratios["b"]["peak_rss"] <= 1.0),
        ]
        if frontier == "full"
        else [
            ("broad crawl: CPU per request ≤ 1.1× built-in", ratios["b"]["cpu_per_request"] <= 1.1),
            ("broad crawl: pages/s ≥ 0.97× built-in", ratios["b"]["pages_per_s"] >= 0.97),
            ("broad crawl: pages/s ≥ 0.95× no-robots", ratios["a"]["pages_per_s"] >= 0.95),
            ("broad crawl: peak RSS ≤ built-in", ratios["b"]["peak_rss"] <= 1.0),
        ]
    )
    checks += [
        (
            "broad crawl: 0 disallowed pages fetched",
            all(site_count("disallowed")(r) == 0 for r in every_c),
        ),
        (
            "broad crawl: one robots.txt request per origin",
            all(r["site"].get("robots", 0) == k and not r["site"]["robots_twice"] for r in every_c),
        ),
    ]
    return {"checks": checks, "ratios": ratios}


def say_rounds(builtin: list[dict[str, Any]], rep: list[dict[str, Any]]) -> None:
    """scrapy-rep against the built-in round by round: each pair ran on the machine as it was.

    The machine drifts from round to round (a variant's own runs differ by
    up to a third), so the ratio within each round, and their median, says
    more than the ratio of the two medians.
    """
    measures = (
        ("CPU per request", cpu_us_per_request, False),
        ("outside GC", cpu_us_outside_gc, False),
        ("handled/s", handled_per_s, False),
        ("gen-2 GC s more", gc_seconds, True),
    )
    pairs = list(zip(builtin, rep, strict=True))
    parts = []
    for name, measure, difference in measures:
        if difference:
            each = [measure(c) - measure(b) for b, c in pairs]
            shown = ", ".join(f"{v:+.1f}" for v in each)
            parts.append(f"{name} {shown} (median {statistics.median(each):+.1f})")
        else:
            each = [measure(c) / max(measure(b), 1e-9) for b, c in pairs]
            shown = ", ".join(f"{v:.3f}" for v in each)
            parts.append(f"{name} {shown} (median {statistics.median(each):.3f})")
    say("scrapy-rep / built-in, round by round: " + "; ".join(parts))


def report_promotions(promoted: dict[str, dict[str, Any]]) -> None:
    """What entered the old generation in the built-in's crawl and in scrapy-rep's."""
    b, c = promoted["b"], promoted["c"]
    say(
        "\ndiagnostic, not a variant: objects moved into the old generation by young "
        f"collections: built-in {b['total']:,}, scrapy-rep {c['total']:,} "
        f"({c['total'] / max(b['total'], 1):.3f}×)"
    )
    say("| from | built-in | scrapy-rep |\n|---|---|---|")
    for package in sorted(set(b["by_package"]) | set(c["by_package"])):
        say(
            f"| {package} | {b['by_package'].get(package, 0):,} | "
            f"{c['by_package'].get(package, 0):,} |"
        )
    for name, run in (("built-in", b), ("scrapy-rep", c)):
        say(f"  {name}, most moved: " + ", ".join(f"{t} {n:,}" for t, n in run["top"].items()))
    more: Counter[str] = Counter(c["by_type"])
    more.subtract(b["by_type"])
    say(
        "  scrapy-rep moved more: "
        + ", ".join(f"{t} {n:+,}" for t, n in more.most_common(PROMOTED_TOP) if n > 0)
    )
    if not c["by_site"]:
        return  # untraced (--promotions types): no lines to show
    # by line: what runs under scrapy-rep's call (its robots.txt downloads through Scrapy's
    # downloader too) is charged to scrapy-rep's innermost line
    own = Counter({k: n for k, n in c["by_site"].items() if k.startswith("scrapy_rep/")})
    say(
        f"  scrapy-rep's lines, {sum(own.values()):,} objects: "
        + ", ".join(f"{k} {n:,}" for k, n in own.most_common(PROMOTED_TOP))
    )
    lines: Counter[str] = Counter(c["by_site"])
    lines.subtract(b["by_site"])
    say(
        "  lines scrapy-rep's crawl moved more from: "
        + ", ".join(f"{k} {n:+,}" for k, n in lines.most_common(PROMOTED_TOP) if n > 0)
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, 1 run (~3 min)")
    parser.add_argument("--runs", type=int, help="crawls per variant (default 3; quick 1)")
    parser.add_argument("--origins", type=int, help="crawl origins (default 4000; quick 500)")
    parser.add_argument("--sizes", type=int, nargs="+", help="origin counts of the judging path")
    parser.add_argument("--skip-judging", action="store_true")
    parser.add_argument("--skip-crawl", action="store_true")
    parser.add_argument(
        "--profile", action="store_true", help="one more scrapy-rep crawl under cProfile"
    )
    parser.add_argument(
        "--uses",
        nargs="+",
        default=[],
        metavar="USE",
        help="REP_USES of the scrapy-rep variant (train-ai also fetches tdmrep.json per origin)",
    )
    parser.add_argument(
        "--ballast",
        type=int,
        default=0,
        metavar="N",
        help="diagnostic: one more scrapy-rep crawl with N small tracked objects kept alive "
        "(the collector's trigger; see benchmarks/NOTEBOOK.md)",
    )
    parser.add_argument(
        "--promotions",
        nargs="?",
        const="types",
        choices=("types", "lines"),
        help="diagnostic: one more built-in and scrapy-rep crawl each, counting what enters "
        "the old generation by type; 'lines' also by allocating line (traced: slow, and it "
        "changes the counts; use with --origins 500)",
    )
    parser.add_argument(
        "--frontier",
        choices=("lazy", "full"),
        default="lazy",
        help="lazy: seeds yielded as the engine asks; full: every request in the scheduler "
        "at start, CONCURRENT_REQUESTS=64, PER_DOMAIN=2 (a broad crawl under way)",
    )
    parser.add_argument(
        "--pick",
        choices=tuple(PICKS),
        default="scan",
        help="scan: Scrapy's DownloaderAwarePriorityQueue; idle-first: the same order without "
        "its scan of every host (diagnostic, every variant; see idle_first.py)",
    )
    parser.add_argument("--seed", type=int, default=9309)
    args = parser.parse_args(argv)
    runs = args.runs or (1 if args.quick else 3)
    k = args.origins or (500 if args.quick else 4_000)
    sizes = args.sizes or (QUICK_SIZES if args.quick else SIZES)
    passes, budget, reps = (3, 5.0, 40) if args.quick else (4, 20.0, 150)
    if k > 250 * 256 * 250:
        parser.error("too many origins")
    wall = time.monotonic()
    say(
        f"bench_scale: judging at {', '.join(f'{n:,}' for n in sizes)} origins; crawl of "
        f"{k:,} origins ({args.frontier} frontier), {runs} run(s) per variant; seed {args.seed}; "
        f"scrapy-rep's REP_USES {args.uses}; scheduler pick {args.pick}; "
        f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f} at start"
    )
    out: dict[str, Any] = {"sizes": list(sizes), "origins": k, "runs": runs}
    checks: list[tuple[str, bool]] = []
    judging: list[dict[str, Any]] = []
    if not args.skip_judging:
        say("\n(a) judging path, one fresh process per size:")
        judging = run_judging(sizes, passes, budget, reps)
        out["judging"] = judging
    crawls: dict[str, list[dict[str, Any]]] = {v: [] for v in SCALE_VARIANTS}
    profile: dict[str, Any] | None = None
    ballasted: dict[str, Any] | None = None
    promoted: dict[str, dict[str, Any]] = {}
    hello: dict[str, Any] = {}
    if not args.skip_crawl:
        say(f"\n(b) broad crawl: starting the server ({k:,} addresses)")
        server = ScaleServer(k, args.seed)
        hello = server.hello
        say(f"  listening on port {server.port} of 127.1.0.1 ... {address(k - 1)}")
        try:
            for n in range(runs):  # variants alternate, so drift hits all alike, and their
                # order turns round each round: a machine slowing through a round would
                # otherwise always meet the last variant at its slowest
                order = list(SCALE_VARIANTS)
                for variant in order if n % 2 == 0 else order[::-1]:
                    run = run_crawl(
                        server, variant, frontier=args.frontier, uses=args.uses, pick=args.pick
                    )
                    crawls[variant].append(run)
                    say(
                        f"  run {n + 1} {variant}: {run['site'].get('pages', 0)} pages in "
                        f"{run['site']['span']:.1f}s = {pages_per_s(run):.0f}/s, crawler cpu "
                        f"{run['cpu']:.1f}s ({cpu_us_per_request(run):.0f} µs/request), "
                        f"gen-2 GC {gc_seconds(run):.1f}s in {gc_gen2(run):.0f}, "
                        f"server cpu {run['site']['server_cpu']:.1f}s, "
                        f"rss {rss_mib(run):.0f} MiB, load {os.getloadavg()[0]:.1f}"
                    )
            if args.profile:
                profile = run_crawl(
                    server, "c", frontier=args.frontier, profile=True, uses=args.uses
                )
            if args.ballast:
                ballasted = run_crawl(
                    server, "c", frontier=args.frontier, ballast=args.ballast, uses=args.uses
                )
            if args.promotions:
                for variant in ("b", "c"):
                    promoted[variant] = run_crawl(
                        server,
                        variant,
                        frontier=args.frontier,
                        promotions=args.promotions,
                        uses=args.uses,
                    )["promotions"]
        finally:
            server.close()
        out["crawl"] = {
            v: [{key: r[key] for key in ("cpu", "elapsed", "maxrss_kb", "site", "gc")} for r in rs]
            for v, rs in crawls.items()
        }
    if judging:
        checks += report_judging(judging, passes, budget)["checks"]
    if not args.skip_crawl:
        crawl_report = report_crawl(crawls, runs, k, hello, args.frontier)
        checks += crawl_report["checks"]
        out["ratios"] = crawl_report["ratios"]
    if ballasted is not None:
        b = crawls["b"]
        say(
            f"\ndiagnostic, not a variant: scrapy-rep with {args.ballast:,} more tracked objects "
            f"alive: CPU {cpu_us_per_request(ballasted):.0f} µs/request "
            f"({cpu_us_per_request(ballasted) / med(b, cpu_us_per_request):.3f}× the built-in's "
            f"median), gen-2 collections {gc_gen2(ballasted):.0f} (built-in {med(b, gc_gen2):.0f})"
            f", gen-2 GC {gc_seconds(ballasted):.1f} s (built-in {med(b, gc_seconds):.1f} s), "
            f"collections by generation {ballasted['gc']['collections']}"
        )
    if promoted:
        report_promotions(promoted)
    if profile is not None:
        say("\n### cProfile of one scrapy-rep crawl (cumulative; scrapy_rep entries)\n")
        say("```")
        say(profile["profile"].rstrip())
        say("```")
    say("\ntargets (scrapy-rep):")
    for what, ok in checks:
        say(f"- [{'met' if ok else 'MISSED'}] {what}")
    out["checks"] = {what: ok for what, ok in checks}
    out["wall_s"] = time.monotonic() - wall
    say(f"\ntotal wall time {out['wall_s']:.0f}s")
    say(json.dumps(out, default=str))
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_serve":
        asyncio.run(_serve_main(int(sys.argv[2]), int(sys.argv[3])))
    elif len(sys.argv) > 1 and sys.argv[1] == "_crawl":
        _crawl_child(read_child_config())
    elif len(sys.argv) > 1 and sys.argv[1] == "_judge":
        _judge_child(read_child_config())
    else:
        sys.exit(main())

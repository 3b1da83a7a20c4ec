"""A scrapy-redis cluster on loopback: robots.txt fetches per origin, pages/s, Redis round trips.

Usage: ``python benchmarks/bench_cluster.py [--origins 30] [--pages 20] [--workers 3] [--runs 1]``
or, for the cluster's Crawl-delay, ``... --delay 2 [--delayed-pages 5] --origins 6 --pages 30``

K origins (``tests/support/fakesite.py``, one port each on 127.0.0.1), each with a
robots.txt disallowing ``/private`` and a home page linking to P pages and to
one private page. The start URLs are the K home pages, pushed to a scrapy-redis
start list; the workers (``tests/support/cluster_worker.py``, each its own process)
follow links through the shared scrapy-redis queue and dupefilter. Variants:

- Scrapy's built-in ``RobotsTxtMiddleware`` (``ROBOTSTXT_OBEY``), N workers;
- scrapy-rep with ``REP_STORE = "memory"``, 1 worker and N workers;
- scrapy-rep with ``REP_STORE = "redis"``, 1 worker and N workers.

The queue and the policy store use two redis-servers, so ``INFO commandstats``
of the store's server counts scrapy-rep's traffic alone. Counts come from the
origins (what they served) and from Redis, not from the crawlers' own
accounting. pages/s is pages served / (last page served - first request),
measured by the origins, median of ``--runs``; worker start-up is excluded.
With ``--delay``: one origin asking ``Crawl-delay`` (``--delayed-pages`` pages,
pushed as start URLs among the others, so every worker gets some) beside
``--origins`` undelayed ones on other loopback hosts (other download slots),
crawled by ``--workers`` workers, once pacing per worker (each with its own
memory store: pacing follows ``REP_STORE``) and once for the cluster (the Redis store): the delayed
origin's smallest gap between page requests, as it saw them, the undelayed
origins' pages/s, and reservation round trips per delayed page, with the
ratios shared / per-worker.

Nothing here fails on a number.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from tests.support.fakesite import FakeSite, Origin, Reply  # noqa: E402
from tests.support.redis_fixture import RedisServer  # noqa: E402

ROBOTS = b"User-agent: *\nDisallow: /private\n"
WAIT = 300.0
SPIDER = "bench"
ADMIN = {"info", "config", "flushall", "ping", "client", "hello"}


@dataclass
class Variant:
    name: str
    workers: int
    settings: dict[str, Any]


def variants(n: int) -> list[Variant]:
    builtin = {"ADDONS": {}, "ROBOTSTXT_OBEY": True}
    return [
        Variant(f"Scrapy built-in, {n} workers", n, builtin),
        Variant("scrapy-rep memory, 1 worker", 1, {"REP_STORE": "memory"}),
        Variant(f"scrapy-rep memory, {n} workers", n, {"REP_STORE": "memory"}),
        Variant("scrapy-rep redis, 1 worker", 1, {"REP_STORE": "redis"}),
        Variant(f"scrapy-rep redis, {n} workers", n, {"REP_STORE": "redis"}),
    ]


def build_site(site: FakeSite, k: int, pages: int) -> list[Origin]:
    origins = []
    for i in range(k):
        o = site.add(f"o{i}").robots(Reply(body=ROBOTS))
        o.links("/", [f"/p{j}" for j in range(pages)] + ["/private/x"])
        origins.append(o)
    return origins


def command_calls(client: redis.Redis) -> int:
    """Commands the store's Redis executed since the last CONFIG RESETSTAT, admin excluded."""
    stats: dict[str, Any] = client.info("commandstats")  # type: ignore[assignment]
    return sum(
        int(v["calls"])
        for k, v in stats.items()
        if k.removeprefix("cmdstat_").split("|")[0] not in ADMIN
    )


def spawn(
    variant: Variant, queue: RedisServer, store: RedisServer, tmp: Path, tag: str
) -> tuple[list[subprocess.Popen[bytes]], list[Path]]:
    """Start the variant's workers and wait (bounded) until each has opened its spider."""
    procs, outs = [], []
    for w in range(variant.workers):
        stem = tmp / f"{tag}-{variant.name.replace(' ', '_').replace(',', '')}-{w}"
        config = {
            "spider": SPIDER,
            "ready": f"{stem}.ready",
            "out": f"{stem}.json",
            "follow": True,
            "batch": 16,
            "settings": {
                "REDIS_URL": queue.url,
                "CONCURRENT_REQUESTS": 16,
                "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
                "LOG_LEVEL": "WARNING",
                "CLOSESPIDER_TIMEOUT": WAIT,
                "REP_REPORT": False,
                **variant.settings,
                # the policy store on a Redis of its own, not the queue's
                **(
                    {"REP_STORE": store.url} if variant.settings.get("REP_STORE") == "redis" else {}
                ),
            },
        }
        log = open(f"{stem}.log", "wb")  # noqa: SIM115
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "tests.support.cluster_worker", json.dumps(config)],
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        )
        log.close()
        outs.append(Path(config["out"]))
    deadline = time.monotonic() + 60
    while not all(Path(str(out).replace(".json", ".ready")).exists() for out in outs):
        if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
            raise SystemExit(f"{variant.name}: a worker did not start; see {tmp}")
        time.sleep(0.05)
    return procs, outs


def crawl(
    variant: Variant,
    origins: list[Origin],
    queue: RedisServer,
    store: RedisServer,
    tmp: Path,
    tag: str,
    pages: int,
    start: list[str] | None = None,
) -> tuple[list[dict[str, Any]], redis.Redis]:
    """One crawl from ``start`` (default: the home pages), links followed, until ``pages``.

    Returns the workers' reports and a client of the store's Redis (its stats
    are this crawl's); the caller closes the client.
    """
    queue_client, store_client = redis.Redis.from_url(queue.url), redis.Redis.from_url(store.url)
    for client in (queue_client, store_client):
        client.flushall()
        client.config_resetstat()
    for o in origins:
        o.clear_hits()
    procs, outs = spawn(variant, queue, store, tmp, tag)
    queue_client.rpush(f"{SPIDER}:start_urls", *(start or [o.url_for("/") for o in origins]))
    deadline = time.monotonic() + WAIT
    while sum(o.hits() - o.hits("/robots.txt") - o.hits("/private/x") for o in origins) < pages:
        if time.monotonic() > deadline:
            raise SystemExit(f"{variant.name}: the crawl did not finish; see {tmp}")
        time.sleep(0.05)
    queue_client.set(f"{SPIDER}:done", 1)
    for p in procs:
        p.wait(60)
    queue_client.close()
    return [json.loads(out.read_text()) for out in outs], store_client


def run_once(
    variant: Variant,
    origins: list[Origin],
    queue: RedisServer,
    store: RedisServer,
    tmp: Path,
    run: int,
    n_pages: int,
) -> dict[str, Any]:
    pages = len(origins) * (n_pages + 1)  # the home page and its links, but not /private
    reports, store_client = crawl(variant, origins, queue, store, tmp, str(run), pages)
    hits = [h for o in origins for h in o.requests()]
    page_hits = [h for h in hits if h.path != "/robots.txt"]
    served = Counter((h.origin, h.path) for h in page_hits)
    first = min(h.at for h in hits)
    last = max(h.at for h in page_hits)
    robots = [o.hits("/robots.txt") for o in origins]
    judged = sum(r["stats"].get("rep/judgements", 0) for r in reports)
    round_trips = sum(r["store"].get("round_trips", 0) for r in reports)
    result = {
        "robots_mean": statistics.mean(robots),
        "robots_max": max(robots),
        "pages": sum(1 for (_, path) in served if not path.startswith("/private")),
        "private": sum(n for (_, path), n in served.items() if path.startswith("/private")),
        "duplicates": sum(n - 1 for n in served.values() if n > 1),
        "pages_per_s": len(page_hits) / (last - first) if last > first else float("nan"),
        "judged": judged,
        "round_trips": round_trips,
        "commands": command_calls(store_client),
        "per_worker": [r["stats"].get("response_received_count", 0) for r in reports],
    }
    store_client.close()
    return result


# -- --delay: one Crawl-delay origin among undelayed ones ---------------------------------------


def build_delay_site(
    site: FakeSite, k: int, pages: int, delayed_pages: int, delay: float
) -> tuple[Origin, list[Origin]]:
    """A ``Crawl-delay`` origin on 127.0.0.1 and ``k`` undelayed ones on other loopback hosts."""
    slow = site.add("slow").robots(Reply(body=f"User-agent: *\nCrawl-delay: {delay:g}\n".encode()))
    fast = []
    for i in range(k):
        o = site.add(f"fast{i}", host=f"127.0.{1 + i // 250}.{2 + i % 250}")
        o.robots(Reply(body=ROBOTS)).links("/", [f"/p{j}" for j in range(pages)])
        fast.append(o)
    return slow, fast


def run_delay(
    variant: Variant,
    slow: Origin,
    fast: list[Origin],
    queue: RedisServer,
    store: RedisServer,
    tmp: Path,
    run: int,
    args: argparse.Namespace,
) -> dict[str, Any]:
    total = args.delayed_pages + len(fast) * (args.pages + 1)
    # the delayed pages are start URLs among the home pages, so every worker gets some
    start = [o.url_for("/") for o in fast]
    for j in range(args.delayed_pages):
        start.insert(j * 2 % (len(start) + 1), slow.url_for(f"/s{j}"))
    reports, store_client = crawl(
        variant, [slow, *fast], queue, store, tmp, f"d{run}", total, start
    )
    store_client.close()
    times = [h.at for h in slow.requests() if h.path != "/robots.txt"]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    fast_hits = [h.at for o in fast for h in o.requests() if h.path != "/robots.txt"]
    first = min(h.at for o in (slow, *fast) for h in o.requests())
    served = Counter((h.origin, h.path) for o in (slow, *fast) for h in o.requests())
    return {
        "min_gap": min(gaps),
        "short_gaps": sum(1 for g in gaps if g < args.delay),
        "slow_span": times[-1] - times[0],
        "fast_pages_per_s": len(fast_hits) / (max(fast_hits) - first),
        "duplicates": sum(n - 1 for (_, p), n in served.items() if p != "/robots.txt" and n > 1),
        "pace_round_trips": sum(r["store"].get("pace", 0) for r in reports),
        "slow_pages": len(times),
        "waits": sum(r["stats"].get("rep/cluster/delay-waits", 0) for r in reports),
    }


def main_delay(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-cluster-delay-"))
    queue, store = RedisServer(tmp).start(), RedisServer(tmp).start()
    n = args.workers
    shared = {"REP_STORE": "redis"}
    variants = [
        Variant(f"per-worker Crawl-delay, {n} workers", n, {"REP_STORE": "memory"}),
        Variant(f"shared Crawl-delay, {n} workers", n, shared),
    ]
    results: dict[str, list[dict[str, Any]]] = {}
    try:
        with FakeSite() as site:
            slow, fast = build_delay_site(
                site, args.origins, args.pages, args.delayed_pages, args.delay
            )
            for run in range(args.runs):
                for variant in variants:
                    results.setdefault(variant.name, []).append(
                        run_delay(variant, slow, fast, queue, store, tmp, run, args)
                    )
    finally:
        queue.stop()
        store.stop()
    print(
        f"\none origin with Crawl-delay: {args.delay:g} ({args.delayed_pages} pages) and "
        f"{args.origins} undelayed origins (home + {args.pages} pages each) on other hosts; "
        f"{n} workers; median of {args.runs} run(s); a shared, loaded machine\n"
    )
    head = (
        f"{'variant':34} {'min gap s':>9} {'gaps < delay':>12} {'delayed span s':>14} "
        f"{'undelayed pages/s':>17} {'dup':>4} {'waits':>5} {'RTT/delayed page':>16}"
    )
    print(head)
    print("-" * len(head))
    med: dict[str, dict[str, float]] = {}
    for name, runs in results.items():
        m = med[name] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        rtt = m["pace_round_trips"] / m["slow_pages"] if m["slow_pages"] else float("nan")
        print(
            f"{name:34} {m['min_gap']:>9.3f} {m['short_gaps']:>12.0f} {m['slow_span']:>14.2f} "
            f"{m['fast_pages_per_s']:>17.0f} {m['duplicates']:>4.0f} {m['waits']:>5.0f} "
            f"{rtt:>16.2f}"
        )
    per, sh = (med[v.name] for v in variants)
    print(
        f"\nshared / per-worker: minimum gap {sh['min_gap'] / per['min_gap']:.1f}x, "
        f"undelayed pages/s {sh['fast_pages_per_s'] / per['fast_pages_per_s']:.2f}x"
    )
    print(
        "RTT/delayed page: reservation scripts sent to the store's Redis per page of the "
        "delayed origin (undelayed origins send none)."
    )
    shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--origins", type=int, default=30)
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument(
        "--delay",
        type=float,
        default=0,
        help="compare per-worker and shared Crawl-delay: one origin asking this many seconds, "
        "--origins undelayed ones (try --delay 2 --origins 6 --pages 30)",
    )
    parser.add_argument("--delayed-pages", type=int, default=5)
    args = parser.parse_args()
    if args.delay:
        main_delay(args)
        return
    tmp = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    queue, store = RedisServer(tmp).start(), RedisServer(tmp).start()
    results: dict[str, list[dict[str, Any]]] = {}
    try:
        with FakeSite() as site:
            origins = build_site(site, args.origins, args.pages)
            for run in range(args.runs):
                for variant in variants(args.workers):  # alternate, so drift hits all alike
                    results.setdefault(variant.name, []).append(
                        run_once(variant, origins, queue, store, tmp, run, args.pages)
                    )
    finally:
        queue.stop()
        store.stop()
    print_table(args, results)
    shutil.rmtree(tmp, ignore_errors=True)


def print_table(args: argparse.Namespace, results: dict[str, list[dict[str, Any]]]) -> None:
    total = args.origins * (args.pages + 1)
    print(
        f"\n{args.origins} origins x (home + {args.pages} pages) = {total} allowed pages, and one "
        f"disallowed page per origin; median of {args.runs} run(s)\n"
    )
    head = (
        f"{'variant':32} {'robots.txt/origin':>17} {'pages':>6} {'disallowed':>10} "
        f"{'dup':>4} {'pages/s':>8} {'judged':>7} {'RTT/judged':>10} {'cmds/judged':>11} "
        f"{'RTT/origin':>10}"
    )
    print(head)
    print("-" * len(head))
    base = None
    for name, runs in results.items():
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0] if k != "per_worker"}
        if name == "scrapy-rep memory, 1 worker":
            base = med["pages_per_s"]
        rtt = med["round_trips"] / med["judged"] if med["judged"] else float("nan")
        cmds = med["commands"] / med["judged"] if med["judged"] else float("nan")
        robots = f"{med['robots_mean']:.2f} (max {med['robots_max']:.0f})"
        print(
            f"{name:32} {robots:>17} {med['pages']:>6.0f} {med['private']:>10.0f} "
            f"{med['duplicates']:>4.0f} {med['pages_per_s']:>8.0f} {med['judged']:>7.0f} "
            f"{rtt:>10.3f} {cmds:>11.3f} {med['round_trips'] / args.origins:>10.2f}"
        )
    if base:
        print()
        for name, runs in results.items():
            rate = statistics.median(r["pages_per_s"] for r in runs)
            split = runs[-1]["per_worker"]
            print(
                f"{name:32} {rate / base:5.2f}x single memory worker; responses per worker {split}"
            )
    print(
        "\nRTT/judged: requests scrapy-rep sent to the store's Redis (a pipeline is one) per "
        "judged request;\ncmds/judged: commands the store's Redis executed (INFO commandstats) "
        "per judged request;\nRTT/origin: requests to the store's Redis per origin, all workers."
    )


if __name__ == "__main__":
    main()

"""A scrapy-redis cluster on loopback: robots.txt fetches per origin, pages/s, Redis round trips.

Usage: ``python benchmarks/bench_cluster.py [--origins 30] [--pages 20] [--workers 3] [--runs 1]``

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
Nothing here fails on a number.
"""

from __future__ import annotations

import argparse
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


def run_once(
    variant: Variant,
    origins: list[Origin],
    queue: RedisServer,
    store: RedisServer,
    tmp: Path,
    run: int,
    n_pages: int,
) -> dict[str, Any]:
    queue_client, store_client = redis.Redis.from_url(queue.url), redis.Redis.from_url(store.url)
    for client in (queue_client, store_client):
        client.flushall()
        client.config_resetstat()
    for o in origins:
        o.clear_hits()
    procs, outs, logs = [], [], []
    for w in range(variant.workers):
        stem = tmp / f"{run}-{variant.name.replace(' ', '_').replace(',', '')}-{w}"
        config = {
            "spider": SPIDER,
            "ready": f"{stem}.ready",
            "out": f"{stem}.json",
            "follow": True,
            "batch": 16,
            "settings": {
                "REDIS_URL": queue.url,
                "REP_REDIS_URL": store.url,
                "CONCURRENT_REQUESTS": 16,
                "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
                "LOG_LEVEL": "WARNING",
                "CLOSESPIDER_TIMEOUT": WAIT,
                "REP_REPORT_ENABLED": False,
                **variant.settings,
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
        logs.append(Path(f"{stem}.log"))
    deadline = time.monotonic() + 60
    while not all(Path(str(out).replace(".json", ".ready")).exists() for out in outs):
        if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
            raise SystemExit(f"{variant.name}: a worker did not start; see {tmp}")
        time.sleep(0.05)

    pages = len(origins) * (n_pages + 1)  # the home page and its links, but not /private
    queue_client.rpush(f"{SPIDER}:start_urls", *[o.url_for("/") for o in origins])
    deadline = time.monotonic() + WAIT
    while sum(o.hits() - o.hits("/robots.txt") - o.hits("/private/x") for o in origins) < pages:
        if time.monotonic() > deadline:
            raise SystemExit(f"{variant.name}: the crawl did not finish; see {tmp}")
        time.sleep(0.05)
    queue_client.set(f"{SPIDER}:done", 1)
    for p in procs:
        p.wait(60)
    reports = [json.loads(out.read_text()) for out in outs]

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
    queue_client.close()
    store_client.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--origins", type=int, default=30)
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
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

"""What use preferences cost on the judging path: judge-and-record with and without uses.

Usage: ``python benchmarks/bench_uses.py [--rounds N] [--origins K]``

K origins (default 100), each with one of Protego's real robots.txt files
(``corpus.py``), 8 URLs each, judged and recorded as the middleware does
(:func:`bench_scale.judge_and_record`: the record, ``meta``, stats on a real
``MemoryStatsCollector``, the per-origin counts). Four variants on the same
requests, alternating round by round so drift hits all alike; µs (process
CPU time) per request, median of the rounds:

- ``none``: nothing declared, the files as they are (what every crawl that
  declares no use pays: the target is the cost before use preferences);
- ``declared``: ``REP_USES = ["train-ai", "search"]`` and a policy token for
  ``train-ai``, the same files;
- ``signals``: nothing declared, each file with a Cloudflare-style
  ``Content-Signal`` line and two ``Content-Usage`` rules in its ``*`` group;
- ``signals+declared``: both.

Nothing here fails on a number.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from typing import Any

import corpus
from _common import TOKEN, say
from bench_scale import URLS_PER_FILE, Recorder, _defaults

from scrapy_rep.core.decision import judge_record
from scrapy_rep.core.policy import FetchResult, Status, next_policy
from scrapy_rep.core.uses import NOTHING_DECLARED, Declared
from scrapy_rep.runtime.settings import RepSettings
from scrapy_rep.runtime.store.memory import PolicyCache

CPU_NS = time.process_time_ns
DECLARED = Declared(("train-ai", "search"), drop=False, tokens={"train-ai": "benchbot-training"})
#: added to every file for the ``signals`` variants (a group of its own, then ``*``'s lines)
SIGNALS = (
    b"\nUser-agent: *\nContent-Signal: search=yes, ai-train=no\n"
    b"Content-Usage: train-ai=n\nContent-Usage: /public/ train-ai=y\n"
)


def _cache(bodies: list[bytes], origins: list[str], bases: list[str]) -> PolicyCache:
    settings = RepSettings.from_settings(_defaults().get)
    cache = PolicyCache(settings.cache_max_origins)
    now = time.time()
    for i, origin in enumerate(origins):
        url = bases[i] + "/robots.txt"
        result = FetchResult(url, url, 200, bodies[i], {"content-type": "text/plain"})
        cache.put(origin, next_policy(None, result, now, settings.policy))
    return cache


def _judge_and_record(rec: Recorder, origin: str, request: Any, declared: Declared) -> None:
    """bench_scale.judge_and_record, with the crawl's declared uses."""
    policy = rec.cache.get(origin)
    assert policy is not None
    robots = rec.cache.robots(policy) if policy.status is Status.OK else None
    record = judge_record(origin, rec.token, request.url, policy, robots, declared=declared)
    request.meta["rep_decision"] = record
    rec.telemetry.judged(origin, record, "hit")


def run(rounds: int, n: int) -> dict[str, float]:
    from scrapy import Request

    cases, where = corpus.real(URLS_PER_FILE)
    if not cases:
        raise SystemExit(f"no corpus: {where}")
    picked = [cases[i * len(cases) // n] for i in range(n)]
    origins = [f"https://site-{i}.example:443" for i in range(n)]
    bases = [f"https://site-{i}.example" for i in range(n)]
    bodies = [c.body if c.body.endswith(b"\n") else c.body + b"\n" for c in picked]
    plain = Recorder(_cache(bodies, origins, bases), TOKEN)
    signalled = Recorder(_cache([b + SIGNALS for b in bodies], origins, bases), TOKEN)
    paths = [tuple(u[len(corpus.HOST) :] for u in c.urls) for c in picked]
    work = [
        (origins[i], bases[i] + paths[i][j % len(paths[i])])
        for j in range(URLS_PER_FILE)
        for i in range(n)
    ]
    variants = {
        "none": (plain, NOTHING_DECLARED),
        "declared": (plain, DECLARED),
        "signals": (signalled, NOTHING_DECLARED),
        "signals+declared": (signalled, DECLARED),
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(rounds):
        for name, (rec, declared) in variants.items():
            requests = [(origin, Request(url)) for origin, url in work]
            t0 = CPU_NS()
            for origin, request in requests:
                _judge_and_record(rec, origin, request, declared)
            times[name].append((CPU_NS() - t0) / len(requests) / 1e3)
    return {name: statistics.median(values) for name, values in times.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--origins", type=int, default=100)
    args = parser.parse_args(argv)
    say(f"bench_uses: {args.origins} origins, {URLS_PER_FILE} URLs each, {args.rounds} rounds")
    result = run(args.rounds, args.origins)
    say("\n| variant | µs per judged-and-recorded request | extra vs none |\n|---|---|---|")
    for name, us in result.items():
        say(f"| {name} | {us:.2f} | {us - result['none']:+.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

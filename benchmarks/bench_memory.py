"""Memory per cached origin: scrapy-rep's policy cache against Protego, in one run.

Usage: ``python benchmarks/bench_memory.py [--origins 100000] [--compiled-bytes N] [--token T]``

Each of ``--origins`` origins serves one of Protego's ~4,200 real robots.txt
files, cycled, with a comment naming the origin appended so that no two
origins share a body (nor a parse). For scrapy-rep, every origin's 200 goes
through the status table into a :class:`PolicyCache` with room for all of
them (the policy, the compressed body, the parsed file) and one URL of its
file is judged (``judge_record``: the token's rules are compiled), as a crawl
does; the cache keeps the most recently judged files compiled (its window)
and releases the others to their compressed body, as in a crawl. For
Protego, the body is parsed and one URL asked, and the parser is kept in a
dict by netloc, as Scrapy's ``RobotsTxtMiddleware`` keeps it.

tracemalloc counts what is still allocated after ``gc.collect()``, divided by
the number of origins (the corpus, the URLs and the origin names are made
before it starts). Then scrapy-rep judges every origin twice more, round-robin,
without tracemalloc: the second round's CPU time a request, and how many
files it compiled again because they had left the window (all of them once
the origins outnumber it). Each engine runs in a fresh process. Nothing here fails on
a figure; it prints KiB per origin for both and their ratio.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
import tracemalloc
from collections.abc import Sequence
from typing import Any

import corpus
from _common import TOKEN, run_child

from scrapy_rep.core.decision import judge_record
from scrapy_rep.core.policy import FetchResult, PolicyConfig, next_policy
from scrapy_rep.runtime.store.memory import COMPILED_BYTES, PolicyCache


def _inputs(n: int) -> tuple[list[bytes], list[str], list[str], list[str]]:
    cases, where = corpus.real(1)
    if not cases:
        raise SystemExit(f"no real corpus: {where}")
    bodies = [cases[i % len(cases)].body for i in range(n)]
    bodies = [b + (b"" if b.endswith(b"\n") else b"\n") for b in bodies]
    bodies = [b + b"# bench_memory origin %d\n" % i for i, b in enumerate(bodies)]
    bases = [f"https://site-{i}.example" for i in range(n)]
    origins = [base + ":443" for base in bases]
    urls = [bases[i] + cases[i % len(cases)].urls[0][len(corpus.HOST) :] for i in range(n)]
    return bodies, bases, origins, urls


def _ours(n: int, token: str, compiled: int = COMPILED_BYTES) -> dict[str, Any]:
    bodies, bases, origins, urls = _inputs(n)
    config = PolicyConfig()
    headers = {"content-type": "text/plain"}
    now = time.time()
    cache = PolicyCache(max_origins=n, compiled_bytes=compiled)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    started = time.process_time()
    for i in range(n):
        robots_url = bases[i] + "/robots.txt"
        result = FetchResult(robots_url, robots_url, 200, bodies[i], headers)
        cache.put(origins[i], next_policy(None, result, now, config))
        policy = cache.get(origins[i])
        assert policy is not None
        judge_record(origins[i], token, urls[i], policy, cache.robots(policy))
    seconds = time.process_time() - started
    bodies.clear()  # the inputs, not what the cache keeps
    gc.collect()
    retained = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    found = {
        "bytes_per_origin": retained / n,
        "cached": len(cache),
        "compiled": cache.compiled,
        "window": cache.compiled_bytes,
        "us_per_origin": seconds / n * 1e6,
    }
    # The origins judged again, round-robin, as a broad crawl visits them: a file out of
    # the window (more origins than it holds) is compiled again at each visit. Two rounds;
    # the second is timed (the first after tracemalloc runs slow).
    for timed in (False, True):
        recompiled = 0
        started = time.process_time()
        for i in range(n):
            policy = cache.get(origins[i])
            assert policy is not None
            robots = cache.robots(policy)
            assert robots is not None
            recompiled += not robots.compiled
            judge_record(origins[i], token, urls[i], policy, robots)
        if timed:
            found["again_us"] = (time.process_time() - started) / n * 1e6
    found["recompiled"] = recompiled
    return found


def _protego(n: int, token: str) -> dict[str, Any]:
    from protego import Protego

    bodies, bases, _origins, urls = _inputs(n)
    netlocs = [base.split("://", 1)[1] for base in bases]
    parsers: dict[str, Any] = {}
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    started = time.process_time()
    for i in range(n):
        parser = Protego.parse(bodies[i].decode("utf-8", "ignore"))
        parser.can_fetch(urls[i], token)
        parsers[netlocs[i]] = parser
    seconds = time.process_time() - started
    bodies.clear()
    gc.collect()
    retained = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return {
        "bytes_per_origin": retained / n,
        "cached": len(parsers),
        "us_per_origin": seconds / n * 1e6,
    }


def _child(config: dict[str, Any]) -> None:
    if config["engine"] == "scrapy-rep":
        found = _ours(config["n"], config["token"], config["compiled"])
    else:
        found = _protego(config["n"], config["token"])
    print(json.dumps(found))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--origins", type=int, default=100_000)
    parser.add_argument("--token", default=TOKEN)
    parser.add_argument(
        "--compiled-bytes",
        type=int,
        default=COMPILED_BYTES,
        help="the cache's window (bytes of compiled files)",
    )
    args = parser.parse_args(argv)
    print(f"bench_memory: {args.origins:,} origins cycling the real corpus, token {args.token!r}")
    results = {}
    for engine in ("scrapy-rep", "protego"):
        config = {
            "engine": engine,
            "n": args.origins,
            "token": args.token,
            "compiled": args.compiled_bytes,
        }
        results[engine] = found = run_child(__file__, "_child", config, timeout=1800)
        compiled = (
            f", {found['compiled']:,} compiled (window {found['window']:,} bytes)"
            if "compiled" in found
            else ""
        )
        print(
            f"  {engine:<10} {found['bytes_per_origin'] / 1024:6.2f} KiB per origin "
            f"({found['cached']:,} kept{compiled}; {found['us_per_origin']:.0f} µs CPU "
            "per origin under tracemalloc)"
        )
        if "again_us" in found:
            print(
                f"             judged again round-robin: {found['again_us']:.1f} µs CPU a request, "
                f"{found['recompiled']:,} of {args.origins:,} files compiled again"
            )
    ours, theirs = (results[e]["bytes_per_origin"] for e in ("scrapy-rep", "protego"))
    print(f"  scrapy-rep / Protego: {ours / theirs:.2f}×")
    met = "met" if ours <= 4096 else "MISSED"
    print(f"  target: ≤ 4 KiB per cached origin: {ours / 1024:.2f} KiB  {met}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_child":
        _child(json.loads(sys.stdin.read()))
    else:
        raise SystemExit(main())

"""Whole crawls on loopback: no robots.txt, Scrapy's built-in middleware, scrapy-rep.

Usage: ``python benchmarks/bench_crawl.py [--quick] [--runs N]``

One server process serves K origins (one port each on 127.0.0.1) from a lean
asyncio HTTP/1.1 server (``serve``). Each origin has a generated robots.txt
(rules, a named group, 404, 401/403/429, 503 that recovers or not, connection
resets, slow answers, same- and cross-origin redirects) and a linked page
graph. The server judges every request itself, from the ground truth it
generated, so the counts do not depend on any crawler's own accounting:

- *disallowed*: a page the origin's rules disallow for ``benchbot``;
- *paused*: a page of an origin whose robots.txt, as last served (or as it
  would be served, if never asked), was 401/403/429/5xx or a reset;
- *duplicate*: a page served more than once in one crawl.

Each crawl runs in a fresh subprocess (a Scrapy reactor cannot restart) and
the variants alternate, so drift hits all of them alike:

(a) ``ROBOTSTXT_OBEY=False``, (b) ``ROBOTSTXT_OBEY=True`` (Scrapy's
middleware), (c) ``ADDONS = {"scrapy_rep.Addon": 100}``.

pages/s is pages served / (last page served - first request), measured by
the server, median of ``--runs``. The spider extracts links with a regex,
not a selector, so the crawler's own per-request cost (and the
middleware's share of it) is as visible as it gets.

Two more scenarios: one origin's robots.txt takes 30 s (10 s with
``--quick``), and the other origins' pages/s is compared with the plain run;
and a broad-crawl memory check of ``PolicyCache`` + ``next_policy`` for
100,000 origins without HTTP (tracemalloc), bounded by its count of origins.

Nothing here fails on a number; targets are printed as met or missed.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import json
import os
import random
import re
import subprocess
import sys
import time
import tracemalloc
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import _common
from _common import (
    LABELS,
    ROOT,
    TOKEN,
    USER_AGENT,
    HttpConn,
    ServerProcess,
    med,
    read_child_config,
    run_child,
    run_crawler,
    say,
    serve_commands,
)

PAGE_FILLER = "<p>" + "lorem ipsum dolor sit amet " * 30 + "</p>"

# --------------------------------------------------------------------------- the site

RULES_A = (
    b"# generated\nUser-agent: *\nDisallow: /private/\nAllow: /private/ok/\n"
    b"Disallow: /*.pdf$\nDisallow: /search\n\nSitemap: http://127.0.0.1/sitemap.xml\n"
)
# The named group must win: under '*' everything is disallowed.
RULES_B = (
    b"User-agent: otherbot\nDisallow: /p/\n\nUser-agent: *\nDisallow: /\n\n"
    b"User-agent: BenchBot\nDisallow: /private/\nDisallow: /search\n"
)

#: kind -> share of the origins (rounded; the rest are "rules")
MIX = {
    "rules-named": 0.10,
    "404": 0.15,
    "slow": 0.10,
    "redirect": 0.07,
    "redirect-x": 0.03,
    "401": 0.02,
    "403": 0.04,
    "429": 0.03,
    "503-recover": 0.03,
    "503": 0.02,
    "reset": 0.01,
}
#: kinds whose robots.txt says nothing the crawler may rely on (at first)
BAD_FIRST = {"401", "403", "429", "503-recover", "503", "reset"}
SPECIALS = ("/private/{}", "/private/ok/{}", "/files/{}.pdf", "/search?q={}")
SPECIALS_PER_KIND = 3
#: one origin many pages link to (the one made slow in the slow-robots.txt scenario)
POPULAR, POPULAR_SHARE = 0, 0.05


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    reset: bool = False


def kinds_for(k: int, seed: int) -> list[str]:
    kinds: list[str] = []
    for kind, share in MIX.items():
        kinds += [kind] * max(1, round(share * k))
    kinds += ["rules"] * (k - len(kinds))
    random.Random(seed).shuffle(kinds)
    return kinds[:k]


def disallowed(kind: str, path: str) -> bool:
    """Ground truth for ``benchbot`` once the origin's rules apply."""
    if kind in ("404", "401", "403", "429", "503", "reset"):
        return False
    bare = path.split("?", 1)[0]
    if kind == "rules-named":
        return path.startswith(("/private/", "/search"))
    if path.startswith("/private/") and not path.startswith("/private/ok/"):
        return True
    return bare.endswith(".pdf") or path.startswith("/search")


def _bad(reply: Reply) -> bool:
    return reply.reset or reply.status in (401, 403, 429) or reply.status >= 500


class Site:
    """The generated origins: robots.txt programs, pages, and the judging hit log."""

    def __init__(self, k: int, pages: int, seed: int) -> None:
        self.k, self.pages, self.seed = k, pages, seed
        self.kinds = kinds_for(k, seed)
        self.ports: list[int] = []
        self.slow: int | None = None
        self.slow_delay = 0.0
        self.clean = False
        self.reset_state()

    def kind(self, i: int) -> str:
        return "rules" if self.clean else self.kinds[i]

    def program(self, i: int) -> list[Reply]:
        kind = self.kind(i)
        rules = Reply(body=RULES_B if kind == "rules-named" else RULES_A)
        if i == self.slow:
            return [Reply(body=RULES_A, delay=self.slow_delay)]
        rng = random.Random(self.seed * 7919 + i)
        return {
            "404": [Reply(404, b"<html>not found</html>", {"Content-Type": "text/html"})],
            "slow": [Reply(body=RULES_A, delay=rng.uniform(0.3, 1.5))],
            "401": [Reply(401, b"auth")],
            "403": [Reply(403, b"<html>forbidden</html>")],
            "429": [Reply(429, b"slow down", {"Retry-After": "1"}), rules],
            "503-recover": [Reply(503, b"busy"), rules],
            "503": [Reply(503, b"busy")],
            "reset": [Reply(reset=True)],
        }.get(kind, [rules])

    def reset_state(self) -> None:
        self.served = [0] * self.k
        self.bad_now = [_bad(self.program(i)[0]) for i in range(self.k)]
        self.robots_hits = [0] * self.k
        self.redirect_hits = 0
        self.seen: set[tuple[int, str]] = set()
        self.page_hits = [0] * self.k
        self.per_second: Counter[int] = Counter()
        self.counts: Counter[str] = Counter()
        self.first = self.last = self.last_other = 0.0
        self.cpu0 = time.process_time()

    def url(self, i: int, path: str) -> str:
        return f"http://127.0.0.1:{self.ports[i]}{path}"

    def links(self, i: int, path: str) -> list[str]:
        """Deterministic links of a page: a chain, random pages, specials, other origins."""
        rng = random.Random(zlib.crc32(f"{self.seed}:{i}:{path}".encode()))
        if path == "/":
            out = [self.url(i, "/p/0")]
        else:
            n = int(path[3:]) if path.startswith("/p/") and path[3:].isdigit() else 0
            out = [self.url(i, f"/p/{min(n + 1, self.pages - 1)}")]
        out += [self.url(i, f"/p/{rng.randrange(self.pages)}") for _ in range(2)]
        special = rng.choice(SPECIALS).format(rng.randrange(SPECIALS_PER_KIND))
        if not self.clean:
            out.append(self.url(i, special))
        out.append(self.url(rng.randrange(self.k), f"/p/{rng.randrange(self.pages)}"))
        if rng.random() < POPULAR_SHARE:
            out.append(self.url(POPULAR, f"/p/{rng.randrange(self.pages)}"))
        return out

    def page(self, i: int, path: str) -> bytes:
        links = "".join(f'<li><a href="{u}">{u}</a></li>' for u in self.links(i, path))
        return f"<html><body><h1>{path}</h1><ul>{links}</ul>{PAGE_FILLER}</body></html>".encode()

    def summary(self) -> dict[str, Any]:
        now = time.monotonic()
        others = sum(n for i, n in enumerate(self.page_hits) if i != self.slow)
        return {
            **self.counts,
            "pages": sum(self.page_hits),
            "others": others,
            "span": max(self.last - self.first, 1e-9),
            "others_span": max(self.last_other - self.first, 1e-9),
            "robots": sum(self.robots_hits),
            "redirects": self.redirect_hits,
            "robots_by_origin": self.robots_hits,
            "server_cpu": time.process_time() - self.cpu0,
            "per_second": [self.per_second[t] for t in range(max(self.per_second, default=0) + 1)],
            "age": now - self.first if self.first else 0.0,
        }


class Conn(HttpConn):
    """One keep-alive connection to origin ``i``."""

    def __init__(self, site: Site, i: int) -> None:
        super().__init__()
        self.site, self.i = site, i

    def _serve(self, target: str) -> None:
        site, now = self.site, time.monotonic()
        if not site.first:
            site.first = now
        owner = self.i
        if target.startswith("/r/"):  # a robots.txt redirect target: /r/<owner>/robots.txt
            owner = int(target.split("/")[2])
            site.redirect_hits += 1
        elif target == "/robots.txt":
            site.robots_hits[owner] += 1
            kind = site.kind(owner)
            if kind in ("redirect", "redirect-x") and owner != site.slow:
                where = owner if kind == "redirect" else (owner + 1) % site.k
                location = site.url(where, f"/r/{owner}/robots.txt")
                self._send(301, b"", {"Location": location})
                return
        else:
            self._page(target, now)
            return
        program = site.program(owner)
        reply = program[min(site.served[owner], len(program) - 1)]
        site.served[owner] += 1
        if reply.delay:
            self.busy = True
            asyncio.get_running_loop().call_later(reply.delay, self._robots, owner, reply)
        else:
            self._robots(owner, reply)

    def _robots(self, owner: int, reply: Reply) -> None:
        self.busy = False
        self.site.bad_now[owner] = _bad(reply)
        if reply.reset:
            if self.transport is not None:
                self.transport.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nUser-a")
                self.transport.abort()
            return
        self._send(reply.status, reply.body, {"Content-Type": "text/plain", **reply.headers})
        self._next()

    def _page(self, target: str, now: float) -> None:
        site, i = self.site, self.i
        if target == "/" or target.startswith(("/p/", "/private/", "/files/", "/search")):
            site.page_hits[i] += 1
            site.per_second[int(now - site.first)] += 1
            site.last = now
            if i != site.slow:
                site.last_other = now
            key = (i, target)
            if key in site.seen:
                site.counts["duplicate"] += 1
            site.seen.add(key)
            if site.bad_now[i]:
                site.counts["paused"] += 1
            elif disallowed(site.kind(i), target):
                site.counts["disallowed"] += 1
            self._send(200, site.page(i, target))
        else:
            self._send(404, b"not here")


async def _serve_main(k: int, pages: int, seed: int) -> None:
    site = Site(k, pages, seed)
    loop = asyncio.get_running_loop()
    servers = []
    for i in range(k):
        server = await loop.create_server(
            functools.partial(Conn, site, i), "127.0.0.1", 0, backlog=512, reuse_address=True
        )
        servers.append(server)
        site.ports.append(server.sockets[0].getsockname()[1])

    def handle(command: dict[str, Any]) -> dict[str, Any] | None:
        if command["cmd"] == "reset":
            site.slow = command.get("slow")
            site.slow_delay = command.get("slow_delay", 0.0)
            site.clean = command.get("clean", False)
            site.reset_state()
            return {"ok": True}
        if command["cmd"] == "summary":
            return site.summary()
        return None

    await serve_commands({"ports": site.ports, "kinds": site.kinds}, handle)
    for server in servers:
        server.close()


class Server(ServerProcess):
    """The server subprocess, driven over its stdin/stdout."""

    def __init__(self, k: int, pages: int, seed: int) -> None:
        super().__init__(__file__, "_serve", str(k), str(pages), str(seed))
        self.ports: list[int] = self.hello["ports"]
        self.kinds: list[str] = self.hello["kinds"]


# --------------------------------------------------------------------------- one crawl

COMMON: dict[str, Any] = {
    "USER_AGENT": USER_AGENT,
    "LOG_LEVEL": "WARNING",
    "TELNETCONSOLE_ENABLED": False,
    # Scrapy's default total; every origin is 127.0.0.1, which Scrapy makes one slot
    "CONCURRENT_REQUESTS": 16,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
    # Scrapy 2.19 starts CONCURRENT_ITEMS tasks per response; the spider yields
    # only requests, so fewer make Scrapy faster and the middleware's share larger
    "CONCURRENT_ITEMS": 4,
    "DOWNLOAD_TIMEOUT": 60,
    "CLOSESPIDER_TIMEOUT": 300,
}
VARIANTS: dict[str, dict[str, Any]] = {
    **_common.VARIANTS,
    "c": {
        **_common.VARIANTS["c"],
        "REP_PAUSE_INITIAL": 1.0,
        # caps a 429's Retry-After at 2 s; the back-offs (1 s, 2 s) are as with 30
        "REP_PAUSE_MAX": 2.0,
        # given up after 3 fetches (5 by default), through the settings' test seam
        "_REP_TUNE": {"policy.pause_max_tries": 3},
        "REP_FETCH_TIMEOUT": 60.0,
    },
}
LINK = re.compile(r'href="([^"]+)"')


def _crawl_child(config: dict[str, Any]) -> None:
    """Run one crawl in this (fresh) process and print what it saw as JSON."""
    import scrapy

    errors: Counter[str] = Counter()

    class BenchSpider(scrapy.Spider):
        name = "bench"

        async def start(self) -> Any:
            for url in config["seeds"]:
                yield scrapy.Request(url, callback=self.parse, errback=self.failed)

        def parse(self, response: Any) -> Any:
            for href in LINK.findall(response.text):
                yield scrapy.Request(href, callback=self.parse, errback=self.failed)

        def failed(self, failure: Any) -> None:
            errors[type(failure.value).__name__] += 1

    result = run_crawler(BenchSpider, {**COMMON, **config["settings"]}, errors)
    print(json.dumps(result, default=str))


def run_crawl(
    server: Server,
    variant: str,
    *,
    clean: bool,
    watch: int | None = None,
    slow_delay: float = 0.0,
) -> dict[str, Any]:
    """One crawl in a fresh process; ``watch`` is the origin made slow (with ``slow_delay``)."""
    server.ask(cmd="reset", slow=watch, slow_delay=slow_delay, clean=clean)
    config = {
        "seeds": [f"http://127.0.0.1:{port}/" for port in server.ports],
        "settings": VARIANTS[variant],
    }
    result = run_child(__file__, "_crawl", config)
    return {**result, "site": server.ask(cmd="summary")}


# --------------------------------------------------------------------------- memory


def _memory_child(n: int, bound: int) -> None:
    """PolicyCache + next_policy for n origins, no HTTP; print bytes per cached origin."""
    sys.path.insert(0, str(ROOT))
    from scrapy_rep.core.policy import FetchResult, PolicyConfig, next_policy
    from scrapy_rep.runtime.store.memory import PolicyCache

    config = PolicyConfig()
    out: dict[str, Any] = {"n": n}
    for label, max_origins in (("unbounded", n), ("bounded", bound)):
        gc.collect()
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        cache = PolicyCache(max_origins)
        started = time.perf_counter()
        now = 1_800_000_000.0
        for i in range(n):
            origin = f"https://host-{i}.example.com:443"
            robots = origin.replace(":443", "") + "/robots.txt"
            if i % 10 == 8:
                result = FetchResult(robots, robots, 404, b"", {"content-type": "text/html"})
            elif i % 10 == 9:
                result = FetchResult(robots, robots, 503, b"busy", {})
            else:
                body = (
                    f"User-agent: *\nDisallow: /private-{i}/\nAllow: /private-{i}/ok\n"
                    f"Disallow: /*.pdf$\nDisallow: /search\nCrawl-delay: 1\n\n"
                    f"User-agent: otherbot-{i % 97}\nDisallow: /\n\n"
                    f"Sitemap: https://host-{i}.example.com/sitemap.xml\n"
                ).encode()
                headers = {"content-type": "text/plain", "cache-control": "max-age=3600"}
                result = FetchResult(robots, robots, 200, body, headers)
            policy = next_policy(cache.get(origin), result, now, config)
            cache.put(origin, policy)
            parsed = cache.robots(policy)
            if parsed is not None:
                parsed.allowed(TOKEN, f"{origin}/private-{i}/x")
        elapsed = time.perf_counter() - started
        gc.collect()
        # each origin's parsed file lives with its policy (compiled for TOKEN)
        policies_only = tracemalloc.get_traced_memory()[0] - base
        peak = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.stop()
        out[label] = {
            "max_origins": max_origins,
            "cached": len(cache),
            "evictions": cache.evictions,
            "bytes": policies_only,
            "peak": peak,
            "per_origin": policies_only / max(len(cache), 1),
            "us_per_origin": elapsed / n * 1e6,
        }
        del cache
    print(json.dumps(out))


def run_memory(n: int, bound: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "_memory", str(n), str(bound)],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


# --------------------------------------------------------------------------- report


def pages_per_s(run: dict[str, Any]) -> float:
    return float(run["site"]["pages"] / run["site"]["span"])


def others_per_s(run: dict[str, Any]) -> float:
    return float(run["site"]["others"] / run["site"]["others_span"])


def cpu_ms_per_page(run: dict[str, Any]) -> float:
    return float(run["cpu"] / max(run["site"]["pages"], 1) * 1000)


def best(runs: list[dict[str, Any]], get: Callable[[dict[str, Any]], float]) -> float:
    """The best of the runs: on a shared machine, noise only ever slows a crawl down."""
    return float(max(get(r) for r in runs))


def least(runs: list[dict[str, Any]], get: Callable[[dict[str, Any]], float]) -> float:
    return float(min(get(r) for r in runs))


def worst(runs: list[dict[str, Any]], key: str) -> int:
    return max(int(r["site"].get(key, 0)) for r in runs)


def fetch_excess(run: dict[str, Any], kinds: Sequence[str]) -> tuple[int, int]:
    """(origins with a good robots.txt fetched more than once, refetches of bad ones)."""
    by_origin = run["site"]["robots_by_origin"]
    extra_good = sum(
        1 for n, kind in zip(by_origin, kinds, strict=True) if kind not in BAD_FIRST and n > 1
    )
    refetch_bad = sum(
        max(0, n - 1) for n, kind in zip(by_origin, kinds, strict=True) if kind in BAD_FIRST
    )
    return extra_good, refetch_bad


def progress(label: str, run: dict[str, Any]) -> None:
    site = run["site"]
    say(
        f"  {label}: {site['pages']} pages in {site['span']:.1f}s = {pages_per_s(run):.0f}/s, "
        f"crawler cpu {run['cpu']:.1f}s, server cpu {site['server_cpu']:.1f}s, "
        f"load {os.getloadavg()[0]:.1f}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 origins, 1 run (~2 min)")
    parser.add_argument("--runs", type=int, help="crawls per variant and site (default 3; 1 quick)")
    parser.add_argument("--seed", type=int, default=9309)
    args = parser.parse_args(argv)
    runs = args.runs or (1 if args.quick else 3)
    k, pages = (100, 25) if args.quick else (200, 50)
    slow_delay = 10.0 if args.quick else 30.0
    mem_n, mem_bound = (20_000, 2_000) if args.quick else (100_000, 10_000)
    wall = time.monotonic()
    say(
        f"bench_crawl: {k} origins x {pages} pages, seed {args.seed}, {runs} run(s) per variant, "
        f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f} at start"
    )
    server = Server(k, pages, args.seed)
    watch = POPULAR  # the origin made slow in the slow-robots.txt scenario
    clean: dict[str, list[dict[str, Any]]] = {v: [] for v in VARIANTS}
    mixed: dict[str, list[dict[str, Any]]] = {v: [] for v in VARIANTS}
    slow: dict[str, dict[str, Any]] = {}
    loads = [os.getloadavg()[0]]
    try:
        for n in range(runs):  # variants alternate, so drift hits all alike
            for variant in VARIANTS:
                clean[variant].append(run_crawl(server, variant, clean=True, watch=watch))
                progress(f"run {n + 1} clean {variant}", clean[variant][-1])
            for variant in VARIANTS:
                mixed[variant].append(run_crawl(server, variant, clean=False))
                progress(f"run {n + 1} mixed {variant}", mixed[variant][-1])
            loads.append(os.getloadavg()[0])
        for variant in ("b", "c"):
            slow[variant] = run_crawl(
                server, variant, clean=True, watch=watch, slow_delay=slow_delay
            )
            progress(f"slow {variant}", slow[variant])
    finally:
        server.close()
    memory = run_memory(mem_n, mem_bound)
    report(runs, k, pages, server.kinds, clean, mixed, watch, slow_delay, slow, memory)
    say(
        f"\ntotal wall time {time.monotonic() - wall:.0f}s; load average during the crawls "
        f"{min(loads):.1f}-{max(loads):.1f} (2 CPUs: anything above ~2 means other work)"
    )
    return 0


def report(
    runs: int,
    k: int,
    pages: int,
    kinds: list[str],
    clean: dict[str, list[dict[str, Any]]],
    mixed: dict[str, list[dict[str, Any]]],
    watch: int,
    slow_delay: float,
    slow: dict[str, dict[str, Any]],
    memory: dict[str, Any],
) -> None:
    base, base_best = med(clean["a"], pages_per_s), best(clean["a"], pages_per_s)
    base_cpu = least(clean["a"], cpu_ms_per_page)
    say(
        f"\n### Clean crawl: {k} origins, every robots.txt a 200 with rules that no link "
        "breaks, so every variant downloads the same pages"
    )
    say(
        f"\n| variant | pages | pages/s (median of {runs}) | vs (a) | pages/s (best of {runs}) | "
        "vs (a) | crawler CPU ms/page (least) | vs (a) | robots.txt requests | peak RSS MiB |"
    )
    say("|---|---|---|---|---|---|---|---|---|---|")
    for variant, label in LABELS.items():
        rs = clean[variant]
        rate, top = med(rs, pages_per_s), best(rs, pages_per_s)
        cpu = least(rs, cpu_ms_per_page)
        say(
            f"| {label} | {med(rs, lambda r: r['site']['pages']):.0f} | {rate:.0f} | "
            f"{rate / base:.1%} | {top:.0f} | {top / base_best:.1%} | {cpu:.2f} | "
            f"{cpu / base_cpu:.1%} | {med(rs, lambda r: r['site']['robots']):.0f} | "
            f"{med(rs, lambda r: r['maxrss_kb'] / 1024):.0f} |"
        )
    say(
        "\nEach run's pages/s: "
        + "; ".join(
            f"{v} " + ", ".join(f"{pages_per_s(r):.0f}" for r in clean[v]) for v in VARIANTS
        )
    )

    mix = Counter(kinds)
    say(f"\n### Mixed crawl: {k} origins, {pages} pages each, linked across origins")
    say(
        "\nrobots.txt mix: "
        + ", ".join(f"{kind} {n}" for kind, n in sorted(mix.items(), key=lambda x: -x[1]))
    )
    mbase = med(mixed["a"], pages_per_s)
    say(
        f"\n| variant | pages/s (median of {runs}) | vs (a) | pages downloaded | robots.txt "
        "requests (+ redirect hops) | good origins fetched twice | refetches of paused "
        "origins | disallowed URLs downloaded | downloaded while paused | downloaded "
        "twice | peak RSS MiB |"
    )
    say("|---|---|---|---|---|---|---|---|---|---|---|")
    for variant, label in LABELS.items():
        rs = mixed[variant]
        rate = med(rs, pages_per_s)
        extra_good = max(fetch_excess(r, kinds)[0] for r in rs)
        refetch_bad = med(rs, lambda r: fetch_excess(r, kinds)[1])
        say(
            f"| {label} | {rate:.0f} | {rate / mbase:.1%} | "
            f"{med(rs, lambda r: r['site']['pages']):.0f} | "
            f"{med(rs, lambda r: r['site']['robots']):.0f} "
            f"(+{med(rs, lambda r: r['site']['redirects']):.0f}) | {extra_good} | "
            f"{refetch_bad:.0f} | {worst(rs, 'disallowed')} | {worst(rs, 'paused')} | "
            f"{worst(rs, 'duplicate')} | {med(rs, lambda r: r['maxrss_kb'] / 1024):.0f} |"
        )
    say(
        "\nCounted by the server. Disallowed, paused and twice: the worst run. A page is "
        "'downloaded while paused' when its origin's robots.txt, as last served (or as it "
        "would first be served), was 401/403/429/5xx or a reset."
    )
    for variant in VARIANTS:
        run = mixed[variant][0]
        logs = sum(run["error_logs"].values())
        keys = ("rep/dropped", "rep/fetch/count", "rep/parked", "rep/released", "robotstxt/")
        stats = {k: v for k, v in sorted(run["stats"].items()) if k.startswith(keys)}
        say(f"- {variant}: ERROR log records {logs}; errbacks {dict(run['errors'])}; {stats}")

    say(
        f"\n### Slow robots.txt: one origin's robots.txt answers after {slow_delay:.0f} s "
        "(clean site); pages/s of the other origins"
    )
    say("\n| variant | without it (median) | with it | ratio | the slow origin's pages |")
    say("|---|---|---|---|---|")
    for variant in ("b", "c"):
        without = med(clean[variant], others_per_s)
        run = slow[variant]
        with_it = others_per_s(run)
        say(
            f"| {LABELS[variant]} | {without:.0f} | {with_it:.0f} | {with_it / without:.1%} | "
            f"{run['site']['pages'] - run['site']['others']} |"
        )
    say(
        "\nPages served per second, first 6 s of the run with the slow origin: "
        + "; ".join(f"{v} {slow[v]['site']['per_second'][:6]}" for v in ("b", "c"))
    )

    say(
        f"\n### Broad-crawl memory: PolicyCache + next_policy for {memory['n']:,} origins, "
        "no HTTP (80% rules, 10% 404, 10% 503 paused), tracemalloc"
    )
    say(
        "\n| origins at most | origins cached | evicted | cache size (parsed files "
        "included) | bytes per cached origin | µs per origin |"
    )
    say("|---|---|---|---|---|---|")
    for label in ("unbounded", "bounded"):
        m = memory[label]
        say(
            f"| {m['max_origins']:,} | {m['cached']:,} | {m['evictions']:,} | "
            f"{m['bytes'] / 2**20:.1f} MiB | {m['per_origin']:.0f} | {m['us_per_origin']:.0f} |"
        )

    c_rate, b_rate = best(clean["c"], pages_per_s), best(clean["b"], pages_per_s)
    c_cpu, b_cpu = least(clean["c"], cpu_ms_per_page), least(clean["b"], cpu_ms_per_page)
    every_c = clean["c"] + mixed["c"]
    slow_ratio = others_per_s(slow["c"]) / med(clean["c"], others_per_s)
    checks = [
        ("clean crawl, best runs: scrapy-rep pages/s >= 95% of (a)", c_rate >= 0.95 * base_best),
        (
            "clean crawl, best runs: scrapy-rep CPU per page <= 105% of (a)",
            c_cpu <= 1.05 * base_cpu,
        ),
        ("clean crawl, best runs: scrapy-rep pages/s >= (b)", c_rate >= b_rate),
        ("clean crawl, best runs: scrapy-rep CPU per page <= (b)", c_cpu <= b_cpu),
        (
            "one robots.txt fetch per origin with a readable file",
            all(fetch_excess(r, kinds)[0] == 0 for r in mixed["c"])
            and all(fetch_excess(r, ["rules"] * k)[0] == 0 for r in clean["c"]),
        ),
        (
            "zero disallowed URLs downloaded",
            all(r["site"].get("disallowed", 0) == 0 for r in every_c),
        ),
        (
            "zero URLs of paused origins downloaded",
            all(r["site"].get("paused", 0) == 0 for r in every_c),
        ),
        ("no URL downloaded twice", all(r["site"].get("duplicate", 0) == 0 for r in every_c)),
        ("slow robots.txt: the others' pages/s within 10%", slow_ratio >= 0.9),
        (
            "its count of origins bounds the cache",
            memory["bounded"]["cached"] == memory["bounded"]["max_origins"],
        ),
    ]
    say("\ntargets (scrapy-rep):")
    for what, ok in checks:
        say(f"- [{'met' if ok else 'MISSED'}] {what}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_serve":
        asyncio.run(_serve_main(*map(int, sys.argv[2:5])))
    elif len(sys.argv) > 1 and sys.argv[1] == "_crawl":
        _crawl_child(read_child_config())
    elif len(sys.argv) > 1 and sys.argv[1] == "_memory":
        _memory_child(int(sys.argv[2]), int(sys.argv[3]))
    else:
        sys.exit(main())

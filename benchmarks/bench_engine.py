"""scrapy-rep's robots.txt engine against Protego, urllib.robotparser and Google's parser.

Usage: ``python benchmarks/bench_engine.py [--quick]``

For every file of each corpus (see ``corpus.py``) and for the tokens
``googlebot`` (named in many real files) and ``examplebot`` (usually the ``*``
group), each engine:

1. parses the body (median of up to 3 runs); Protego and urllib are given the
   body decoded as Scrapy decodes it (UTF-8, errors ignored), and the decode
   is timed with the parse;
2. answers the first URL once per token: lazy work (scrapy-rep compiles the
   token's rule set, Protego picks its rule set and builds its prefix index)
   happens here and is reported on its own line, not in parse nor throughput;
3. answers every URL of the file for both tokens: URLs/s for that file
   (the warm, steady-state ``allowed()`` / ``can_fetch()``);
4. *cold cost*, what a broad crawl pays per origin: a fresh parse plus the
   first answer for one token, timed together, for each token on its own
   (best of 3 runs for files under 100 KB). Google's parser parses per call,
   so its cold cost is one call.

Google's C++ parser (jwm.robotstxt) parses the body on every call, so its
URLs/s is parse + match per call, and it has no parse column. It and urllib
(a linear scan per call) are given a time budget per file and token: they
answer a prefix of the same URL list, and agreement is counted on that prefix.

Retained memory is measured with tracemalloc on a sample of files: allocated
bytes still alive after parse + one answer per token (so scrapy-rep's compiled
rule sets and Protego's index are included), after gc.collect(). It is
reported as the median over files, with the ratio of medians and the median
of per-file ratios against Protego.

Timings are medians over files of per-file numbers; nothing here fails on a
timing. The script prints a table per corpus, the agreement counts, and
whether each of scrapy-rep's targets is met.
"""

from __future__ import annotations

import argparse
import gc
import math
import re
import statistics
import sys
import time
import tracemalloc
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.robotparser import RobotFileParser

import corpus
from protego import Protego

from scrapy_rep import parse as rep_parse

TOKENS = ("googlebot", "examplebot")
#: an Allow or Disallow line, what "the files with the most rules" are counted by
RULE_LINE = re.compile(rb"^[ \t]*(?:allow|disallow)[ \t]*:", re.I | re.M)
URLS_PER_FILE = 150
#: time budget per file and token for the engines that scan or parse per call
CAPPED_BUDGET_NS = 2_000_000
CAPPED_CHUNK = 8
ns = time.perf_counter_ns


# --------------------------------------------------------------------------- engines


class Engine:
    """How to parse with one library and ask it about URLs."""

    name = ""
    #: answers per call include a parse (Google)
    parses_per_call = False
    #: time budget per file and token, None for no limit
    budget_ns: int | None = None

    def parse(self, body: bytes) -> Any:
        raise NotImplementedError

    def answers(self, parsed: Any, token: str, urls: Sequence[str]) -> list[bool]:
        raise NotImplementedError


class ScrapyRep(Engine):
    name = "scrapy-rep"

    def parse(self, body: bytes) -> Any:
        return rep_parse(body)

    def answers(self, parsed: Any, token: str, urls: Sequence[str]) -> list[bool]:
        allowed = parsed.allowed
        return [allowed(token, url) for url in urls]


class ProtegoEngine(Engine):
    name = "protego"

    def parse(self, body: bytes) -> Any:
        return Protego.parse(body.decode("utf-8", "ignore"))

    def answers(self, parsed: Any, token: str, urls: Sequence[str]) -> list[bool]:
        can_fetch = parsed.can_fetch
        return [can_fetch(url, token) for url in urls]


class Urllib(Engine):
    name = "urllib"
    budget_ns = CAPPED_BUDGET_NS

    def parse(self, body: bytes) -> Any:
        parser = RobotFileParser()
        parser.parse(body.decode("utf-8", "ignore").splitlines())
        return parser

    def answers(self, parsed: Any, token: str, urls: Sequence[str]) -> list[bool]:
        can_fetch = parsed.can_fetch
        return [can_fetch(token, url) for url in urls]


class Google(Engine):
    name = "google-c++"
    parses_per_call = True
    budget_ns = CAPPED_BUDGET_NS

    def __init__(self, module: Any) -> None:
        self.matcher = module.RobotsMatcher()

    def parse(self, body: bytes) -> Any:
        return body

    def answers(self, parsed: Any, token: str, urls: Sequence[str]) -> list[bool]:
        allowed = self.matcher.OneAgentAllowedByRobots
        return [allowed(parsed, token, url) for url in urls]


def engines() -> tuple[list[Engine], str]:
    found: list[Engine] = [ScrapyRep(), ProtegoEngine(), Urllib()]
    try:
        from jwm.robotstxt import googlebot
    except ImportError as exc:
        return found, f"Google's parser not measured (jwm.robotstxt: {exc})"
    found.append(Google(googlebot))
    return found, "Google's parser via jwm.robotstxt"


# --------------------------------------------------------------------------- measuring


@dataclass
class Disagreement:
    checked: int = 0
    differ: int = 0
    by_token: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TOKENS, 0))
    examples: list[str] = field(default_factory=list)
    #: files an example was taken from (one example per file)
    files: set[str] = field(default_factory=set)


@dataclass
class Stats:
    parse_ns: list[int] = field(default_factory=list)
    first_ns: list[int] = field(default_factory=list)
    #: parse + first answer for one token, per (file, token)
    cold_ns: list[int] = field(default_factory=list)
    #: (body size, URLs/s) per file
    throughput: list[tuple[int, float]] = field(default_factory=list)
    calls: int = 0
    retained: list[int] = field(default_factory=list)
    retained_per_byte: list[float] = field(default_factory=list)


def _timed_answers(
    engine: Engine, parsed: Any, token: str, urls: Sequence[str]
) -> tuple[list[bool], int]:
    if engine.budget_ns is None:
        start = ns()
        result = engine.answers(parsed, token, urls)
        return result, ns() - start
    result = []
    elapsed = 0
    for at in range(0, len(urls), CAPPED_CHUNK):
        start = ns()
        result += engine.answers(parsed, token, urls[at : at + CAPPED_CHUNK])
        elapsed += ns() - start
        if elapsed >= engine.budget_ns:
            break
    return result, elapsed


def _median_parse(engine: Engine, body: bytes) -> tuple[Any, int]:
    runs = 3 if len(body) < 100_000 else 1
    times = []
    parsed = None
    for _ in range(runs):
        parsed = None
        start = ns()
        parsed = engine.parse(body)
        times.append(ns() - start)
    return parsed, int(statistics.median(times))


def _cold(engine: Engine, body: bytes, token: str, url: str) -> int:
    """Nanoseconds for a fresh parse plus the first answer for ``token``, best of a few."""
    best = None
    for _ in range(3 if len(body) < 100_000 else 1):
        parsed = None
        start = ns()
        parsed = engine.parse(body)
        engine.answers(parsed, token, [url])
        elapsed = ns() - start
        best = elapsed if best is None else min(best, elapsed)
    del parsed
    assert best is not None
    return best


def measure_speed(
    cases: Sequence[corpus.Case],
    engines: Sequence[Engine],
    stats: dict[str, Stats],
    agree: dict[str, Disagreement],
) -> None:
    rep = engines[0]
    for case in cases:
        answers: dict[str, dict[str, list[bool]]] = {}
        rep_parsed: Any = None
        for engine in engines:
            st = stats[engine.name]
            for token in TOKENS:
                st.cold_ns.append(_cold(engine, case.body, token, case.urls[0]))
            parsed, parse_ns = _median_parse(engine, case.body)
            if not engine.parses_per_call:
                st.parse_ns.append(parse_ns)
                first = 0
                for token in TOKENS:
                    start = ns()
                    engine.answers(parsed, token, case.urls[:1])
                    first += ns() - start
                st.first_ns.append(first)
            total_ns = calls = 0
            answers[engine.name] = {}
            for token in TOKENS:
                result, elapsed = _timed_answers(engine, parsed, token, case.urls)
                answers[engine.name][token] = result
                total_ns += elapsed
                calls += len(result)
            st.throughput.append((case.size, calls * 1e9 / max(total_ns, 1)))
            st.calls += calls
            if engine is rep:
                rep_parsed = parsed
        mine = answers[rep.name]
        for engine in engines[1:]:
            tally = agree[engine.name]
            for token in TOKENS:
                theirs = answers[engine.name][token]
                tally.checked += len(theirs)
                for url, a, b in zip(case.urls, mine[token], theirs, strict=False):
                    if a == b:
                        continue
                    tally.differ += 1
                    tally.by_token[token] += 1
                    if len(tally.examples) < 3 and case.name not in tally.files:
                        tally.files.add(case.name)
                        why = rep_parsed.decide(token, url)
                        tally.examples.append(
                            f"{case.name} {token} {_clip(url)}: scrapy-rep {a} ({why}), "
                            f"{engine.name} {b}"
                        )


def _clip(text: str, width: int = 90) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def measure_memory(
    cases: Sequence[corpus.Case], engines: Sequence[Engine], stats: dict[str, Stats]
) -> None:
    """Bytes still allocated after parse + one answer per token, per file."""
    measured = [engine for engine in engines if not engine.parses_per_call]
    for case in cases[:5]:  # warm caches (regexes, quoters) outside the measurement
        for engine in measured:
            warm = engine.parse(case.body)
            for token in TOKENS:
                engine.answers(warm, token, case.urls[:1])
    gc.collect()
    tracemalloc.start()
    try:
        for case in cases:
            for engine in measured:
                gc.collect()
                before = tracemalloc.get_traced_memory()[0]
                parsed = engine.parse(case.body)
                for token in TOKENS:
                    engine.answers(parsed, token, case.urls[:1])
                gc.collect()
                retained = tracemalloc.get_traced_memory()[0] - before
                del parsed
                st = stats[engine.name]
                st.retained.append(retained)
                st.retained_per_byte.append(retained / max(case.size, 1))
    finally:
        tracemalloc.stop()
    gc.collect()


# --------------------------------------------------------------------------- round robin


def clock_overhead(samples: int = 1_001) -> int:
    """What timing nothing costs: the least of many samples (one sample can hold a
    scheduler's hiccup of microseconds, which subtracted from every answer made the
    warm figures meaningless, even negative)."""
    least = 1 << 62
    for _ in range(samples):
        start = ns()
        least = min(least, ns() - start)
    return least


#: how many of the files with most rules the round robin names one by one
HEAVIEST_SHOWN = 5


def round_robin(
    cases: Sequence[corpus.Case], engines: Sequence[Engine], rounds: int = 20
) -> tuple[dict[str, dict[str, float]], list[tuple[str, int, dict[str, float]]]]:
    """A crawl's access pattern: every file parsed and kept, then URLs asked round-robin
    over the files (one URL of each file in turn, the tokens alternating), full URLs.

    The engines are interleaved at every step (each parse, each cold start, each
    URL timed for one engine then the next), so that a loaded machine slows both
    alike. Per engine: parse µs and cold µs (a fresh parse + the first answer for one
    token) per file, warm ns per answer, and the same for the largest 5% of files and
    for the 1% with the most rules, as totals over the files and as medians over files
    of each file's figure; retained bytes per file (everything parsed kept alive,
    tracemalloc).

    The second result: the files with most rules, each with its own warm ns per engine.
    """
    measured = [e for e in engines if not e.parses_per_call and e.budget_ns is None]
    sizes = sorted(case.size for case in cases)
    top_size = sizes[-max(1, math.ceil(len(sizes) * 0.05))]
    count = len(cases)
    parse_ns = {e.name: [0] * count for e in measured}
    cold_ns = {e.name: [0] * count for e in measured}
    warm_ns = {e.name: [0] * count for e in measured}
    parsed: dict[str, list[Any]] = {e.name: [] for e in measured}
    overhead = clock_overhead()
    gc.collect()
    for n, case in enumerate(cases):
        for engine in measured:
            start = ns()
            kept = engine.parse(case.body)
            parse_ns[engine.name][n] = ns() - start - overhead
            parsed[engine.name].append(kept)
            start = ns()
            engine.answers(engine.parse(case.body), TOKENS[n % 2], case.urls[:1])
            cold_ns[engine.name][n] = ns() - start - overhead
    for engine in measured:  # the first answers (compiles), outside the timing
        for n, case in enumerate(cases):
            for token in TOKENS:
                engine.answers(parsed[engine.name][n], token, case.urls[:1])
    gc.collect()
    for r in range(1, rounds + 1):
        for n, case in enumerate(cases):
            urls = [case.urls[r % len(case.urls)]]
            token = TOKENS[(n + r) % 2]
            for engine in measured:
                robots = parsed[engine.name][n]
                start = ns()
                engine.answers(robots, token, urls)
                warm_ns[engine.name][n] += ns() - start - overhead
    del parsed
    out: dict[str, dict[str, float]] = {}
    top = [n for n, case in enumerate(cases) if case.size >= top_size]
    rule_lines = [len(RULE_LINE.findall(case.body)) for case in cases]
    by_rules = sorted(range(count), key=rule_lines.__getitem__)
    most_rules = by_rules[-max(1, math.ceil(count * 0.01)) :]
    for engine in measured:
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            kept_all = [engine.parse(case.body) for case in cases]
            for n, case in enumerate(cases):
                for token in TOKENS:
                    engine.answers(kept_all[n], token, case.urls[:1])
            gc.collect()
            retained = tracemalloc.get_traced_memory()[0] - before
            del kept_all
        finally:
            tracemalloc.stop()
        name = engine.name
        out[name] = {
            "parse_us": sum(parse_ns[name]) / count / 1000,
            "cold_us": sum(cold_ns[name]) / count / 1000,
            "warm_ns": sum(warm_ns[name]) / (rounds * count),
            "top_ns": sum(warm_ns[name][n] for n in top) / max(1, rounds * len(top)),
            "rules_ns": sum(warm_ns[name][n] for n in most_rules) / (rounds * len(most_rules)),
            "retained": retained / count,
            "parse_median_us": _median(parse_ns[name]) / 1000,
            "cold_median_us": _median(cold_ns[name]) / 1000,
            "warm_median_ns": _median(warm_ns[name]) / rounds,
        }
    heaviest = [
        (cases[n].name, rule_lines[n], {e.name: warm_ns[e.name][n] / rounds for e in measured})
        for n in reversed(by_rules[-HEAVIEST_SHOWN:])
    ]
    return out, heaviest


def print_round_robin(
    title: str,
    figures: dict[str, dict[str, float]],
    heaviest: list[tuple[str, int, dict[str, float]]],
) -> dict[str, float]:
    base = figures["protego"]
    print(f"   round robin over the files ({title}; totals, every file kept, full URLs):")
    print(
        f"   {'engine':<12} {'parse µs':>9} {'×Prot':>6} {'cold µs':>8} {'×Prot':>6} "
        f"{'warm ns':>8} {'×Prot':>6} {'top5% ns':>9} {'×Prot':>6} {'rules1% ns':>10} {'×Prot':>6} "
        f"{'kept B/file':>11} {'×Prot':>6}"
    )
    for name, f in figures.items():
        print(
            f"   {name:<12} {f['parse_us']:>9.1f} {base['parse_us'] / f['parse_us']:>6.2f} "
            f"{f['cold_us']:>8.1f} {base['cold_us'] / f['cold_us']:>6.2f} "
            f"{f['warm_ns']:>8.0f} {base['warm_ns'] / f['warm_ns']:>6.2f} "
            f"{f['top_ns']:>9.0f} {base['top_ns'] / f['top_ns']:>6.2f} "
            f"{f['rules_ns']:>10.0f} {base['rules_ns'] / f['rules_ns']:>6.2f} "
            f"{f['retained']:>11,.0f} {f['retained'] / base['retained']:>6.2f}"
        )
    print(
        f"   {'medians over files':<12} {'parse µs':>9} {'×Prot':>6} {'cold µs':>8} {'×Prot':>6} "
        f"{'warm ns':>8} {'×Prot':>6}"
    )
    for name, f in figures.items():
        print(
            f"   {name:<12} {f['parse_median_us']:>9.1f} "
            f"{base['parse_median_us'] / f['parse_median_us']:>6.2f} "
            f"{f['cold_median_us']:>8.1f} {base['cold_median_us'] / f['cold_median_us']:>6.2f} "
            f"{f['warm_median_ns']:>8.0f} {base['warm_median_ns'] / f['warm_median_ns']:>6.2f}"
        )
    print("   the files with most rules, each (warm ns a URL, round robin):")
    for name, rules, warm in heaviest:
        print(
            f"   {name:<32} {rules:>7,} rules  scrapy-rep {warm['scrapy-rep']:>8,.0f}  "
            f"protego {warm['protego']:>10,.0f}  {warm['protego'] / warm['scrapy-rep']:>7.1f}×"
        )
    mine = figures["scrapy-rep"]
    ratios = {
        "warm": base["warm_ns"] / mine["warm_ns"],
        "cold": base["cold_us"] / mine["cold_us"],
        "parse": base["parse_us"] / mine["parse_us"],
        "memory": mine["retained"] / base["retained"],
        "top": base["top_ns"] / mine["top_ns"],
        "rules": base["rules_ns"] / mine["rules_ns"],
    }
    checks = [
        ("warm allowed() >= 3× Protego, round robin", ratios["warm"], ratios["warm"] >= 3),
        ("cold >= 1× Protego, round robin", ratios["cold"], ratios["cold"] >= 1),
        ("parse >= 2× Protego, round robin", ratios["parse"], ratios["parse"] >= 2),
        ("kept memory per file <= 1× Protego", ratios["memory"], ratios["memory"] <= 1),
        ("warm >= 100× Protego, the 1% most rules", ratios["rules"], ratios["rules"] >= 100),
    ]
    for label, value, met in checks:
        print(f"     {label:<44} {_fmt(value, 2, '×'):>9}  {'met' if met else 'MISSED'}")
    return ratios


# --------------------------------------------------------------------------- hostile


HOSTILE_PATTERN = "/" + "*a" * 99 + "*b"  # 100 '*', a 'b' the path lacks
HOSTILE = (
    f"User-agent: *\nDisallow: {HOSTILE_PATTERN}\n".encode(),
    corpus.HOST + "/" + "a" * 9_999,
)
ORDINARY = (b"User-agent: *\nDisallow: /private/\n", corpus.HOST + "/private/page.html")


def _batch(engine: Engine, body: bytes, url: str) -> tuple[Any, list[str]]:
    """The parsed body and enough copies of ``url`` for a run of a few ms."""
    parsed = engine.parse(body)
    urls = [url]
    engine.answers(parsed, TOKENS[1], urls)
    while True:
        start = ns()
        engine.answers(parsed, TOKENS[1], urls)
        if ns() - start > 2_000_000 or len(urls) > 100_000:
            return parsed, urls
        urls *= 4


def hostile(engines: Sequence[Engine], runs: int = 15) -> dict[str, tuple[float, float]]:
    """Median ns per answer (ordinary, hostile), runs of the two interleaved against noise.

    Parsed once; Google parses on every call, both cases alike.
    """
    out = {}
    for engine in engines:
        cases = [_batch(engine, *ORDINARY), _batch(engine, *HOSTILE)]
        times: list[list[float]] = [[], []]
        for _ in range(runs):
            for (parsed, urls), sink in zip(cases, times, strict=True):
                start = ns()
                engine.answers(parsed, TOKENS[1], urls)
                sink.append((ns() - start) / len(urls))
        out[engine.name] = (statistics.median(times[0]), statistics.median(times[1]))
    return out


# --------------------------------------------------------------------------- adversarial


def _lines(make: Any, limit: int = corpus.MAX_GENERATED) -> bytes:
    """``User-agent: *`` then ``make(n)`` lines for n = 0, 1, ... up to ``limit`` octets."""
    out = ["User-agent: *"]
    size = len(out[0]) + 1
    n = 0
    while True:
        line = make(n)
        if size + len(line) + 1 > limit:
            return ("\n".join(out) + "\n").encode()
        out.append(line)
        size += len(line) + 1
        n += 1


#: two-octet pieces without an 'a' (too short for the sieve): 3,600 of them
_PAIRS = [
    x + y
    for x in "bcdefghijklmnopqrstuvwxyz0123456789"
    for y in "bcdefghijklmnopqrstuvwxyz0123456789"
]
#: ~500 KB files built against the engine, each with the URLs (2,000-character paths,
#: under Scrapy's URLLENGTH_LIMIT) that make it work hardest
LONG = "x" * 1990
ADVERSARIAL: list[tuple[str, bytes, list[str]]] = [
    (
        "root wildcards × keys (Allow: /*abcN, Allow: /abcN*)",
        _lines(lambda n: f"Allow: /*abc{n // 2}" if n % 2 == 0 else f"Allow: /abc{n // 2}*"),
        [f"{corpus.HOST}/abc{n}/{LONG}" for n in range(0, 9000, 450)],
    ),
    (
        "root wildcards, none matching (Disallow: /*qNx)",
        _lines(lambda n: f"Disallow: /*q{n}x"),
        [f"{corpus.HOST}/{LONG}{n}" for n in range(20)],
    ),
    (
        "nested keys, each a wildcard (Disallow: /a…a*zN)",
        _lines(lambda n: f"Disallow: /{'a' * (n % 900 + 1)}*z{n}"),
        [f"{corpus.HOST}/{'a' * 900}{LONG[:1000]}{n}" for n in range(20)],
    ),
    (
        "many stars (Disallow: /*a*a…*b, 16 KB lines)",
        _lines(lambda n: "Disallow: /" + "*a" * 8000 + f"*b{n}"),
        [f"{corpus.HOST}/{'a' * 1999}{n}" for n in range(20)],
    ),
    (
        "anchored wildcards (Allow: /*xN$)",
        _lines(lambda n: f"Allow: /*x{n}$" if n else "Disallow: /"),
        [f"{corpus.HOST}/{LONG}y{n}" for n in range(20)],
    ),
    (
        "identical many-star lines (Disallow: /*a*a*a*a*a*a*a*a*b)",
        _lines(lambda n: "Disallow: /*a*a*a*a*a*a*a*a*b" if n else "Allow: /ok/"),
        [f"{corpus.HOST}/ok/{'a' * 1990}{n}" for n in range(20)],
    ),
    (
        "two-octet pieces, last one in the path (Disallow: /*pq*rs*a)",
        _lines(lambda n: f"Disallow: /*{_PAIRS[n // len(_PAIRS)]}*{_PAIRS[n % len(_PAIRS)]}*a"),
        [f"{corpus.HOST}/{'a' * 1995}{n}" for n in range(20)],
    ),
    (
        "55,000 plain rules (Disallow: /pN)",
        _lines(lambda n: f"Disallow: /p{n}"),
        [f"{corpus.HOST}/p{n}/{LONG}" for n in range(0, 50_000, 2_500)],
    ),
]


def adversarial(engines: Sequence[Engine]) -> None:
    """Per shape and engine: parse + compile ms, CPU ms per URL (worst of the URLs,
    after the first answer), and retained KiB (tracemalloc)."""
    print()
    print("== adversarial shapes (500 KB files; 2,000-character paths):")
    print(
        f"   {'shape':<54} {'engine':<11} {'parse ms':>9} {'1st ms':>9} {'ms/URL':>8} "
        f"{'max':>8} {'kept KiB':>9}"
    )
    measured = [e for e in engines if not e.parses_per_call and e.budget_ns is None]
    for title, body, urls in ADVERSARIAL:
        for engine in measured:
            gc.collect()
            tracemalloc.start()
            try:
                before = tracemalloc.get_traced_memory()[0]
                start = time.process_time()
                parsed = engine.parse(body)
                engine.answers(parsed, TOKENS[1], urls[:1])
                parse_ms = (time.process_time() - start) * 1000
                gc.collect()
                kept = tracemalloc.get_traced_memory()[0] - before
            finally:
                tracemalloc.stop()
            del parsed
            gc.collect()
            start = time.process_time()
            parsed = engine.parse(body)
            engine.answers(parsed, TOKENS[1], urls[:1])
            parse_ms = (time.process_time() - start) * 1000
            asked = urls[: 5 if engine.name == "protego" else None]
            start = time.process_time()
            engine.answers(parsed, TOKENS[1], asked)  # the first pass: intervals settled
            first_ms = (time.process_time() - start) * 1000 / len(asked)
            times = []
            for url in asked:
                start = time.process_time()
                engine.answers(parsed, TOKENS[1], [url])
                times.append((time.process_time() - start) * 1000)
            del parsed
            print(
                f"   {_clip(title, 54):<54} {engine.name:<11} {parse_ms:>9.1f} {first_ms:>9.2f} "
                f"{_median(times):>8.2f} {max(times):>8.2f} {kept / 1024:>9,.0f}"
            )
    print(
        "   parse ms: parse + the first answer (scrapy-rep compiles then); 1st ms: per URL,"
        " the first time\n   (an interval settled, the rule set rebased on the origin);"
        " ms/URL: CPU per URL asked again; kept: tracemalloc"
    )


# --------------------------------------------------------------------------- report


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan


def _ratio(value: float, base: float) -> float:
    return value / base if base and not math.isnan(base) and not math.isnan(value) else math.nan


def _fmt(value: float, digits: int = 1, suffix: str = "") -> str:
    if math.isnan(value):
        return "n/a"
    if abs(value) >= 10_000:
        return f"{value:,.0f}{suffix}"
    return f"{value:,.{digits}f}{suffix}"


@dataclass
class Summary:
    parse_us: float
    parse_total_ms: float
    first_us: float
    mix: float
    top: float
    retained_kib: float
    retained_per_byte: float
    cold_us: float


def summarise(st: Stats, top_sizes: float) -> Summary:
    return Summary(
        parse_us=_median(st.parse_ns) / 1000,
        parse_total_ms=sum(st.parse_ns) / 1e6 if st.parse_ns else math.nan,
        first_us=_median(st.first_ns) / 1000,
        mix=_median([t for _, t in st.throughput]),
        top=_median([t for size, t in st.throughput if size >= top_sizes]),
        retained_kib=_median(st.retained) / 1024,
        retained_per_byte=_median(st.retained_per_byte),
        cold_us=_median(st.cold_ns) / 1000,
    )


def _paired_ratio(mine: Sequence[float], theirs: Sequence[float]) -> float:
    """Median of per-item ratios mine/theirs (the lists are measured pairwise)."""
    pairs = [a / b for a, b in zip(mine, theirs, strict=False) if b]
    return _median(pairs)


def report(
    title: str,
    cases: Sequence[corpus.Case],
    engines: Sequence[Engine],
    stats: dict[str, Stats],
    agree: dict[str, Disagreement],
    memory_files: int,
) -> dict[str, float]:
    sizes = sorted(case.size for case in cases)
    top_count = max(1, math.ceil(len(sizes) * 0.05))
    top_sizes = sizes[-top_count]
    summaries = {name: summarise(st, top_sizes) for name, st in stats.items()}
    base = summaries["protego"]
    print()
    print(
        f"== {title}: {len(cases)} files, {sum(sizes) / 1e6:.1f} MB, median {_median(sizes):,.0f} B"
    )
    print(
        f"   tokens {', '.join(TOKENS)}; {URLS_PER_FILE} URLs per file and token; largest 5% = "
        f"{top_count} files >= {top_sizes:,} B; retained memory on {memory_files} files"
    )
    header = (
        f"{'engine':<12} {'parse µs':>9} {'×Prot':>6} {'parse tot ms':>12} "
        f"{'cold µs':>8} {'×Prot':>6} "
        f"{'URLs/s mix':>11} {'×Prot':>6} {'URLs/s top5%':>12} {'×Prot':>6} "
        f"{'retained KiB':>12} {'×Prot':>6} {'ret/body':>8}"
    )
    print(header)
    print("-" * len(header))
    for engine in engines:
        s = summaries[engine.name]
        star = "*" if engine.parses_per_call else ""
        cells = [
            f"{engine.name + star:<12}",
            f"{_fmt(s.parse_us):>9}",
            f"{_fmt(_ratio(base.parse_us, s.parse_us), 2):>6}",
            f"{_fmt(s.parse_total_ms):>12}",
            f"{_fmt(s.cold_us):>8}",
            f"{_fmt(_ratio(base.cold_us, s.cold_us), 2):>6}",
            f"{_fmt(s.mix, 0):>11}",
            f"{_fmt(_ratio(s.mix, base.mix), 2):>6}",
            f"{_fmt(s.top, 0):>12}",
            f"{_fmt(_ratio(s.top, base.top), 2):>6}",
            f"{_fmt(s.retained_kib):>12}",
            f"{_fmt(_ratio(s.retained_kib, base.retained_kib), 2):>6}",
            f"{_fmt(s.retained_per_byte, 2, '×'):>8}",
        ]
        print(" ".join(cells))
    print(
        "   ×Prot: parse and cold = Protego time / engine time, URLs/s = engine / Protego "
        "(higher is faster);\n   retained = engine / Protego (lower is smaller). ret/body: "
        "median retained bytes per body byte.\n   cold = parse + first answer for one token "
        "(what a broad crawl pays per origin), median over files × tokens."
    )
    if any(engine.parses_per_call for engine in engines):
        print("   * google-c++ parses the file on every call: its URLs/s is parse + match per URL.")
    capped = [e.name for e in engines if e.budget_ns is not None]
    if capped:
        counts = ", ".join(f"{name} {stats[name].calls:,}" for name in capped)
        print(
            f"   {' and '.join(capped)} answer as many URLs as fit in "
            f"{CAPPED_BUDGET_NS / 1e6:g} ms per file and token "
            f"(calls: {counts}; others {stats[engines[0].name].calls:,})."
        )
    firsts = ", ".join(
        f"{e.name} {_fmt(summaries[e.name].first_us)} µs" for e in engines if not e.parses_per_call
    )
    print(f"   first answer per file for both tokens (lazy compile/index, not in parse): {firsts}")
    rep = summaries[engines[0].name]
    both = _ratio(base.parse_us + base.first_us, rep.parse_us + rep.first_us)
    print(f"   scrapy-rep parse + compile vs Protego parse + first answers: {_fmt(both, 2)}×")
    mine, theirs = stats[engines[0].name], stats["protego"]
    warm_pairs = [a / b for (_, a), (_, b) in zip(mine.throughput, theirs.throughput, strict=True)]
    cold_pairs = _paired_ratio(theirs.cold_ns, mine.cold_ns)
    memory_pairs = _paired_ratio(mine.retained, theirs.retained)
    print("   scrapy-rep vs Protego, medians (ratio of medians; median of per-file ratios):")
    print(
        f"     warm allowed()   {_fmt(rep.mix, 0)} vs {_fmt(base.mix, 0)} URLs/s  "
        f"{_fmt(_ratio(rep.mix, base.mix), 2)}× faster; {_fmt(_median(warm_pairs), 2)}×"
    )
    print(
        f"     cold (parse + 1st answer, one token)  {_fmt(rep.cold_us)} vs "
        f"{_fmt(base.cold_us)} µs  {_fmt(_ratio(base.cold_us, rep.cold_us), 2)}× faster; "
        f"{_fmt(cold_pairs, 2)}×"
    )
    print(
        f"     retained after parse + first answers  {_fmt(rep.retained_kib, 2)} vs "
        f"{_fmt(base.retained_kib, 2)} KiB  {_fmt(_ratio(rep.retained_kib, base.retained_kib), 2)}"
        f"× Protego's; {_fmt(memory_pairs, 2)}×"
    )
    print("   agreement of scrapy-rep with (same URLs, same tokens):")
    for engine in engines[1:]:
        tally = agree[engine.name]
        share = 100 * tally.differ / tally.checked if tally.checked else 0.0
        print(
            f"     {engine.name:<11} {tally.differ:>7,} of {tally.checked:>9,} "
            f"answers differ ({share:.2f}%; "
            + ", ".join(f"{token} {count:,}" for token, count in tally.by_token.items())
            + ")"
        )
        for example in tally.examples:
            print(f"       e.g. {example}")
    return {
        "mix": _ratio(rep.mix, base.mix),
        "top": _ratio(rep.top, base.top),
        "parse": _ratio(base.parse_us, rep.parse_us),
        "cold": _ratio(base.cold_us, rep.cold_us),
        "memory": _ratio(rep.retained_kib, base.retained_kib),
    }


def print_targets(title: str, ratios: dict[str, float]) -> None:
    checks = [
        ("allowed() >= 5× Protego on the mix", ratios["mix"], ratios["mix"] >= 5),
        ("allowed() >= 20× Protego on the largest 5%", ratios["top"], ratios["top"] >= 20),
        ("parse >= 2× Protego", ratios["parse"], ratios["parse"] >= 2),
        ("cold (parse + first answer) >= Protego", ratios["cold"], ratios["cold"] >= 1),
        ("retained memory median <= Protego", ratios["memory"], ratios["memory"] <= 1),
    ]
    print(f"   targets ({title}):")
    for label, value, met in checks:
        print(f"     {label:<44} {_fmt(value, 2, '×'):>9}  {'met' if met else 'MISSED'}")


def run_corpus(
    title: str, cases: Sequence[corpus.Case], engines: Sequence[Engine], memory_sample: int
) -> dict[str, float]:
    stats = {engine.name: Stats() for engine in engines}
    agree = {engine.name: Disagreement() for engine in engines[1:]}
    started = time.perf_counter()
    gc.collect()
    measure_speed(cases, engines, stats, agree)
    gc.collect()
    spread = sorted(cases, key=lambda c: c.size)
    step = max(1, len(spread) // memory_sample)
    sample = spread[::step][:memory_sample]
    measure_memory(sample, engines, stats)
    ratios = report(title, cases, engines, stats, agree, len(sample))
    print_targets(title, ratios)
    print(f"   ({time.perf_counter() - started:.1f} s)")
    return ratios


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a sample of files (~45 s)")
    parser.add_argument(
        "--only",
        choices=("round-robin", "adversarial"),
        help="only the round-robin figures on the real files, or only the adversarial rows",
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    found, google_note = engines()
    print(f"bench_engine: Python {sys.version.split()[0]}; {google_note}")
    print(f"mode: {'quick (samples)' if args.quick else 'full'}")

    if args.only == "adversarial":
        adversarial(found)
        return 0
    real_cases, real_note = corpus.real(URLS_PER_FILE, sample=300 if args.quick else None)
    if args.only == "round-robin":
        print(f"real corpus: {real_note}")
        print_round_robin(
            "real files", *round_robin(real_cases, found, rounds=5 if args.quick else 20)
        )
        return 0
    print(f"real corpus: {real_note}")
    if not real_cases:
        print("real corpus: skipped, continuing with the generated corpus only")
    generated = corpus.generated(60 if args.quick else 200, URLS_PER_FILE)
    print(
        f"generated corpus: {len(generated)} files ({time.perf_counter() - started:.1f} s to load)"
    )

    if real_cases:
        run_corpus("real files", real_cases, found, 150 if args.quick else 800)
    run_corpus("generated files", generated, found, 60 if args.quick else 200)

    if real_cases:
        print()
        print("== real files, a crawl's access pattern")
        print_round_robin(
            "real files", *round_robin(real_cases, found, rounds=5 if args.quick else 20)
        )
    adversarial(found)

    gc.collect()
    timings = hostile(found)
    print()
    print(
        "== hostile pattern: Disallow: /*a*a…*a*b (100 '*') vs a "
        f"{len(HOSTILE[1]) - len(corpus.HOST)}-char path of 'a's;\n"
        "   ordinary: Disallow: /private/ vs /private/page.html"
    )
    print(f"{'engine':<12} {'ordinary ns':>12} {'hostile ns':>12} {'ratio':>8}")
    for engine in found:
        ordinary, nasty = timings[engine.name]
        print(f"{engine.name:<12} {ordinary:>12,.0f} {nasty:>12,.0f} {nasty / ordinary:>7.1f}×")
    ordinary, nasty = timings[found[0].name]
    verdict = "met" if nasty <= 10 * ordinary else "MISSED"
    print(
        f"   target: scrapy-rep hostile within 10× of ordinary: {nasty / ordinary:.1f}×  {verdict}"
    )
    print(f"\ntotal {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

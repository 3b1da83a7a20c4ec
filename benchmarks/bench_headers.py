"""What reading hostile response headers costs: the header bombs, the structured fields, walls.

Usage: ``python benchmarks/bench_headers.py [--source DIR] [--rounds N]``

Each case hands the pure readers (what ``PageDirectivesMiddleware``, the use
signals and ``BodyGuard``'s walls call per response) one response's headers
and reports process CPU time, the minimum of ``--rounds`` (default 3):

- ``x-robots-tag 32 MB``: 4,096 ``X-Robots-Tag`` lines of 8 KiB
  (``page_directives``);
- ``content-usage N params``: one ``Content-Usage`` member with N
  parameters, N = 3,000 and 12,000 (``response_signals``), and an inner list
  of N items; the 4x pair shows how the cost grows;
- ``www-authenticate 2 x 15,000``: a ``401`` with two 15,000-character
  ``License`` challenges, and the shape a backtracking challenge reader
  chokes on (a run of token characters with no ``=``) (``wall_of``);
- ``crawler-price 250 x 8,000``: a ``402`` with 250 such headers, and the
  characters its summary keeps (``said()``, kept per walled origin);
- ``structured, per octet``: ``parse_dictionary`` on 8 KiB (the bound of
  every header read) of each shape, ns per octet.

``--source DIR`` benchmarks another checkout's ``scrapy_rep`` (before a
change: ``--source /path/to/main``). Nothing fails on a number.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any


def _cpu(call: Callable[[], Any], rounds: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(rounds):
        start = time.process_time()
        result = call()
        best = min(best, time.process_time() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", help="a checkout whose scrapy_rep to benchmark")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.source:
        sys.path.insert(0, args.source)
    import scrapy_rep
    from scrapy_rep.core.directives import page_directives
    from scrapy_rep.core.structured import parse_dictionary
    from scrapy_rep.core.use_signals import response_signals
    from scrapy_rep.core.walls import wall_of

    print(f"scrapy_rep from {scrapy_rep.__file__}")
    rounds = args.rounds

    def show(name: str, seconds: float, octets: int, extra: str = "") -> None:
        print(f"  {name:<42} {seconds * 1000:9.2f} ms  ({octets:,} octets){extra}")

    lines = [b"noindex, " * 910] * 4096
    seconds, _ = _cpu(lambda: page_directives("bot", 0.0, headers=lines), rounds)
    show("x-robots-tag 32 MB", seconds, sum(map(len, lines)))

    for n in (3000, 12000):
        value = b"train-ai=n" + b"".join(b";p%d=1" % i for i in range(n))
        seconds, _ = _cpu(lambda v=value: response_signals("bot", content_usage=[v]), rounds)
        show(f"content-usage {n:,} params", seconds, len(value))
    for n in (6000, 24000):
        value = b"a=(" + b" ".join(b"1" for _ in range(n)) + b")"
        seconds, _ = _cpu(lambda v=value: response_signals("bot", content_usage=[v]), rounds)
        show(f"content-usage inner list of {n:,}", seconds, len(value))

    def walls(status: int, found: dict[str, list[str]]) -> Any:
        return wall_of(status, lambda name: iter(found.get(name, [])))

    challenge = 'License server="https://l.example/", x="' + "a" * 15_000 + '"'
    both = {"www-authenticate": [challenge, challenge]}
    seconds, _ = _cpu(lambda: walls(401, both), rounds)
    show("www-authenticate 2 x 15,000", seconds, 2 * len(challenge))
    tokens = {"www-authenticate": ["License " + "a" * 15_000] * 2}
    seconds, _ = _cpu(lambda: walls(401, tokens), rounds)
    show("www-authenticate 2 x 15,000 (no '=')", seconds, 2 * 15_008)
    prices = {"crawler-price": [f"USD {n}.00 " + "x" * 8_000 for n in range(250)]}
    seconds, wall = _cpu(lambda: walls(402, prices), rounds)
    kept = len(wall.said()) + sum(len(v) for vs in wall.headers.values() for v in vs)
    show("crawler-price 250 x 8,000", seconds, 250 * 8_010, f", {kept:,} characters kept")

    print("  structured, per octet (8 KiB of each shape):")
    shapes = {
        "parameters": lambda n: b"a=1" + b"".join(b";p%d=1" % i for i in range(n)),
        "members": lambda n: b", ".join(b"k%d=?1" % i for i in range(n)),
        "inner list": lambda n: b"a=(" + b" ".join(b"1" for _ in range(n)) + b")",
        "strings": lambda n: b"a=(" + b" ".join(b'"s\\"t"' for _ in range(n)) + b")",
    }
    for name, grow in shapes.items():
        n = 1
        while len(grow(n * 2)) <= 8192:
            n *= 2
        value = grow(n)
        seconds, _ = _cpu(lambda v=value: [parse_dictionary(v) for _ in range(100)], rounds)
        print(f"    {name:<12} {seconds / 100 / len(value) * 1e9:7.0f} ns/octet")


if __name__ == "__main__":
    main()

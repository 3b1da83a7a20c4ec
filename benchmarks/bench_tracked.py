"""The cost of a paused origin below and past the pushback core's tracked-origin bound.

Usage: ``python benchmarks/bench_tracked.py [--past 2000]``

:class:`~scrapy_rep.core.pushback.Pushback` keeps at most ``TRACKED_MAX``
origins' states (paused, ramping or paced). This pauses ``TRACKED_MAX``
origins (a 429 each, every one still paused), then ``--past`` more, and
prints the CPU time per pause below the bound and past it (each past it
forgets one tracked origin first), their ratio, and how many origins are
tracked at the end (never more than the bound). Pure code, one process, no
network. Nothing here fails on a figure.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(1, str(Path(__file__).resolve().parent.parent))

from scrapy_rep.core.pushback import TRACKED_MAX, Pushback, PushbackConfig

NOW = 1_000_000.0
HEADERS = {"retry-after": "600"}


def pause_all(pb: Pushback, origins: list[str]) -> float:
    """CPU seconds per origin paused."""
    start = time.process_time()
    for origin in origins:
        pb.on_response(origin, 429, HEADERS, origin + "/", NOW)
    return (time.process_time() - start) / max(1, len(origins))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--past", type=int, default=2_000, help="origins paused past the bound")
    args = parser.parse_args()
    origins = [f"http://h{i}.example:80" for i in range(TRACKED_MAX + args.past)]
    pb = Pushback(PushbackConfig(pause_max=3_600.0))
    below = pause_all(pb, origins[:TRACKED_MAX])
    past = pause_all(pb, origins[TRACKED_MAX:])
    tracked = sum(origin in pb for origin in origins)
    print(f"bound {TRACKED_MAX:,} origins, all paused; then {args.past:,} more")
    print(f"  below the bound: {below * 1e6:8.2f} us per pause")
    print(f"  past the bound:  {past * 1e6:8.2f} us per pause ({past / below:.1f}x)")
    print(f"  tracked at the end: {tracked:,}")


if __name__ == "__main__":
    main()

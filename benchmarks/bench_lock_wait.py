"""How long a worker waiting on another's robots.txt fetch lock takes to learn the result.

Two resolvers share a real ``redis-server`` on loopback. The first fetches an
origin's robots.txt (a fake fetch of a given duration, no HTTP); the second
asks for the same origin a moment later, finds the lock taken and waits,
reading the store until the result is there. Printed: the median delay
between the holder adopting its policy and the waiter adopting the same one,
for fetch durations from 20 ms to 3 s, with the resolver's polling (first
after 1/80 s, doubling up to 0.1 s). The polling before it was a flat 0.5 s:
a waiter learnt of a result 0-500 ms late, 250 ms on average, however short
the fetch.

    .venv/bin/python benchmarks/bench_lock_wait.py    # ~1 min
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scrapy_rep.core.policy import FetchResult, PolicyConfig  # noqa: E402
from scrapy_rep.runtime.resolver import Resolver  # noqa: E402
from scrapy_rep.runtime.store.memory import PolicyCache  # noqa: E402
from scrapy_rep.runtime.store.redis import RedisStore  # noqa: E402
from tests.support.redis_fixture import RedisServer  # noqa: E402

DURATIONS = (0.02, 0.1, 0.3, 1.0, 3.0)
ROUNDS = 9


async def one(url: str, origin: str, duration: float) -> float:
    prefix = f"bench-{time.monotonic_ns()}"  # one store per round, shared by both workers
    stores = [RedisStore.from_url(url, prefix=prefix) for _ in range(2)]
    adopted: dict[str, float] = {}

    def resolver(store: RedisStore, name: str) -> Resolver:
        r = Resolver(PolicyCache(), PolicyConfig(), time.time, shared=store, lock_ttl=10.0)
        r.listeners.append(_Adopted(name, adopted))
        return r

    calls: list[str] = []

    async def fetch(origin: str, validators: object = None) -> FetchResult:
        calls.append(origin)
        await asyncio.sleep(duration)
        url = f"{origin}/robots.txt"
        return FetchResult(url, url, 200, b"User-agent: *\nDisallow: /x\n")

    holder, waiter = resolver(stores[0], "holder"), resolver(stores[1], "waiter")
    first = holder.resolve(origin, fetch)
    await asyncio.sleep(0.005)
    second = waiter.resolve(origin, fetch)
    await asyncio.gather(first, second)
    assert len(calls) == 1, "the waiter fetched itself"
    for store in stores:
        await store.close()
    return adopted["waiter"] - adopted["holder"]


class _Adopted:
    def __init__(self, name: str, adopted: dict[str, float]) -> None:
        self.name, self.adopted = name, adopted

    def on_policy(self, origin: str, old: object, new: object, fetched: object) -> None:
        self.adopted.setdefault(self.name, time.monotonic())

    def on_abandoned(self, origin: str) -> None:
        pass


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(Path(tmp)).start()
        try:
            print("| fetch takes | waiter learns it after (median of 9) |")
            print("|---|---|")
            for duration in DURATIONS:
                delays = [await one(server.url, f"http://o{n}:80", duration) for n in range(ROUNDS)]
                print(f"| {duration * 1000:.0f} ms | {statistics.median(delays) * 1000:.0f} ms |")
        finally:
            server.stop()


if __name__ == "__main__":
    asyncio.run(main())

"""One process hammering a SQLite policy file.

``tests/integration/test_sqlite_store.py`` runs several.

Usage: ``python -m tests.support.sqlite_worker '<json config>'`` with keys ``path`` (the
SQLite file), ``origins`` (a few, so the workers contend), ``iterations``,
``guards`` (a directory), ``ready`` (a file written once the store is open),
``go`` (a file the worker waits for, so all workers start together) and
``out`` (a JSON report written at the end).

Each iteration tries to take the origin's lock. The holder then creates
``guards/<n>`` with ``O_EXCL``, saves a policy naming itself, reads it back,
holds on a moment and removes the guard before releasing: finding the guard
already there means two processes held the lock at once. Without the lock,
the worker reads the origin (any stored policy must decode) and saves another
origin's policy anyway, so writes from every process interleave. Bounded:
``iterations`` rounds, and at most 30 s waiting for ``go``.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

from scrapy_rep.core.policy import Policy, Status, digest_of
from scrapy_rep.runtime.store.sqlite import SqliteStore


def policy_of(pid: int, i: int) -> Policy:
    body = f"User-agent: *\nDisallow: /{pid}/{i}\n".encode() * (1 + i % 40)
    now = time.time()
    return Policy(
        Status.OK,
        "2xx",
        200,
        now,
        now + 3600,
        "http://o/robots.txt",
        "http://o/robots.txt",
        f"written by {pid} round {i}",
        body=body,
        digest=digest_of(body),
        failures=i % 3,
    )


async def work(config: dict[str, Any]) -> dict[str, Any]:
    report: dict[str, Any] = {
        "acquired": 0,
        "busy": 0,
        "saves": 0,
        "loads": 0,
        "violations": [],
        "errors": [],
    }
    store = SqliteStore(config["path"])
    Path(config["ready"]).touch()
    deadline = time.monotonic() + 30
    while not os.path.exists(config["go"]):
        if time.monotonic() > deadline:
            raise SystemExit("no go signal")
        await asyncio.sleep(0.005)
    pid = os.getpid()
    origins: list[str] = config["origins"]
    guards = Path(config["guards"])
    try:
        for i in range(config["iterations"]):
            n = i % len(origins)
            origin = origins[n]
            try:
                token = await store.acquire(origin, 5.0)
                if token is None:
                    report["busy"] += 1
                    loaded = await store.load(origin)
                    report["loads"] += 1
                    if loaded is not None and not loaded.reason.startswith("written by"):
                        report["errors"].append(f"odd policy {loaded.reason!r}")
                    other = origins[(n + 1) % len(origins)] + "/unlocked"
                    await store.save(other, policy_of(pid, i))
                    report["saves"] += 1
                    continue
                report["acquired"] += 1
                try:
                    fd = os.open(guards / str(n), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                except FileExistsError:
                    report["violations"].append(f"{origin} round {i}: the guard was there")
                    await store.unlock(origin, token)
                    continue
                os.close(fd)
                mine = policy_of(pid, i)
                await store.save(origin, mine)
                report["saves"] += 1
                if await store.load(origin) != mine:
                    report["violations"].append(f"{origin} round {i}: overwritten under my lock")
                report["loads"] += 1
                await asyncio.sleep(random.uniform(0, 0.003))
                os.unlink(guards / str(n))
                await store.unlock(origin, token)
            except Exception as exc:  # reported, so the test shows what went wrong
                report["errors"].append(f"round {i}: {type(exc).__name__}: {exc}")
    finally:
        report["counts"] = dict(store.counts)
        await store.close()
    return report


def main() -> None:
    config = json.loads(sys.argv[1])
    report = asyncio.run(work(config))
    Path(config["out"]).write_text(json.dumps(report))


if __name__ == "__main__":
    main()

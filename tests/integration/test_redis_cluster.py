"""A real scrapy-redis cluster: worker processes sharing one queue and one policy store.

The fake origins run in this process; each worker (``tests/support/cluster_worker.py``)
is a subprocess with its own reactor, crawling with scrapy-redis's scheduler and
dupefilter and ``REP_STORE = "redis"``. What is asserted is what the origins saw
(robots.txt and page hits, in arrival order) and what each worker reports.
Every wait is bounded; no assertion is about time.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from scrapy_rep.cli.explain import explain
from scrapy_rep.runtime.settings import TUNE
from tests.support import processes
from tests.support.audit import records
from tests.support.fakesite import FakeSite, Origin, Reply
from tests.support.pushback_site import PushbackSite, pages
from tests.support.redis_fixture import RedisServer

ROOT = Path(__file__).resolve().parents[2]
ROBOTS = b"User-agent: *\nDisallow: /private\n"
WAIT = 60.0  # seconds any single wait may take before the test fails (a busy machine)
STORE_FAILED = "shared policy store failed"


def wait_until(check: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
    """Poll ``check`` every 20 ms; fail with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.02)
    pytest.fail(f"timed out waiting for {what}")


class Worker:
    """One worker process and what it reported."""

    def __init__(
        self,
        cluster: Cluster,
        name: str,
        spider: str,
        settings: dict[str, Any],
        follow: bool = False,
        lead: float | None = None,
    ):
        self.name = name
        self.spider = spider
        self.log = cluster.tmp / f"{name}.log"
        self.ready = cluster.tmp / f"{name}.ready"
        self.out = cluster.tmp / f"{name}.json"
        config = {
            "spider": spider,
            "ready": str(self.ready),
            "out": str(self.out),
            "settings": settings,
            "follow": follow,
        }
        if lead is not None:
            config["lead"] = lead
        self.process = processes.start(
            "tests.support.cluster_worker",
            [json.dumps(config)],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=self.log,
        )
        self.report: dict[str, Any] = {}

    def logged(self) -> str:
        return self.log.read_text(errors="replace")

    def stat(self, key: str) -> Any:
        return self.report.get("stats", {}).get(key, 0)

    def store(self, key: str) -> int:
        return int(self.report.get("store", {}).get(key, 0))

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)


class Cluster:
    """Workers, their Redis, and the test's view of the queue and store."""

    def __init__(self, tmp: Path, queue_url: str, store_url: str | None = None) -> None:
        self.tmp = tmp
        self.queue_url = queue_url
        self.store_url = store_url or queue_url
        self.redis = redis.Redis.from_url(queue_url)
        self.workers: list[Worker] = []

    def start(
        self,
        name: str,
        spider: str = "cluster",
        follow: bool = False,
        lead: float | None = None,
        **settings: Any,
    ) -> Worker:
        """A worker process; ``follow``: its spider follows the links of the pages it gets;
        ``lead``: how long a first contact's lead lasts (seconds; else the package's)."""
        base = {"REDIS_URL": self.queue_url, "REP_STORE": self.store_url}
        worker = Worker(self, name, spider, {**base, **settings}, follow, lead)
        self.workers.append(worker)
        return worker

    def wait_ready(self, *workers: Worker) -> None:
        for worker in workers:

            def started(w: Worker = worker) -> bool:
                return w.ready.exists() or w.process.poll() is not None

            wait_until(started, f"{worker.name} to open its spider")
            assert worker.process.poll() is None, f"{worker.name} died:\n{worker.logged()[-3000:]}"

    def push(self, spider: str, urls: Iterable[str]) -> None:
        self.redis.rpush(f"{spider}:start_urls", *urls)

    def finish(self, *workers: Worker, timeout: float = 60.0) -> None:
        """Tell the workers' spiders they may close when idle, and collect their reports."""
        for spider in {w.spider for w in workers}:
            self.redis.set(f"{spider}:done", 1)
        deadline = time.monotonic() + timeout
        for worker in workers:
            try:
                worker.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                worker.process.send_signal(signal.SIGUSR1)  # it prints its asyncio tasks
                time.sleep(1)
                worker.kill()
                pytest.fail(f"{worker.name} did not finish:\n{worker.logged()[-6000:]}")
            assert worker.process.returncode == 0, f"{worker.name}:\n{worker.logged()[-3000:]}"
            worker.report = json.loads(worker.out.read_text())
            errors = worker.report["errors"]
            assert not errors, f"{worker.name} had download errors: {errors}"
            assert "Traceback" not in worker.logged(), worker.logged()[-3000:]

    def stop(self) -> None:
        for worker in self.workers:
            if worker.process.poll() is None:
                worker.kill()
        self.redis.close()

    def downloaded(self) -> list[str]:
        return sorted(u for w in self.workers for u in w.report.get("downloaded", []))

    def dropped(self) -> dict[str, str]:
        return {u: r for w in self.workers for u, r in w.report.get("dropped", {}).items()}


@pytest.fixture
def cluster(tmp_path: Path, redis_server: str) -> Iterator[Cluster]:
    c = Cluster(tmp_path, redis_server)
    try:
        yield c
    finally:
        c.stop()


def stored(url: str, origin: Origin) -> dict[bytes, bytes]:
    """The raw hash the cluster keeps for ``origin``."""
    client = redis.Redis.from_url(url)
    try:
        return dict(client.hgetall(f"scrapy-rep:v1:policy:http://127.0.0.1:{origin.port}"))
    finally:
        client.close()


def pages_after_robots(origin: Origin, robots_fetches: int) -> bool:
    """True if no page of ``origin`` was requested before its n-th robots.txt fetch."""
    paths = origin.hit_paths()
    return paths[:robots_fetches] == ["/robots.txt"] * robots_fetches


# -- the tests ------------------------------------------------------------------------------


def test_one_robots_fetch_per_origin_for_the_whole_cluster(
    site: FakeSite, cluster: Cluster
) -> None:
    origins = [site.add(f"o{i}").robots(Reply(body=ROBOTS, delay=0.3)) for i in range(8)]
    paths = ["/p0", "/p1", "/p2", "/private/x", "/p3"]
    workers = [cluster.start(f"w{i}") for i in range(3)]
    cluster.wait_ready(*workers)
    # round robin: consecutive URLs are on different origins, so workers meet on each
    cluster.push("cluster", [o.url_for(p) for p in paths for o in origins])
    wait_until(
        lambda: all(o.hits(p) for o in origins for p in paths if "private" not in p),
        "every allowed page",
    )
    cluster.finish(*workers)

    for o in origins:
        assert o.hits("/robots.txt") == 1, o
        assert o.hits("/private/x") == 0, o
        for p in paths:
            if "private" not in p:
                assert o.hits(p) == 1, (o, p)  # the shared dupefilter at work
    allowed = sorted(o.url_for(p) for o in origins for p in paths if "private" not in p)
    assert cluster.downloaded() == allowed
    assert cluster.dropped() == {o.url_for("/private/x"): "disallow-rule" for o in origins}
    assert sum(w.stat("rep/fetch/count") for w in workers) == len(origins)
    # the cluster really shared the work, and some worker used another's fetch
    assert sum(1 for w in workers if w.stat("rep/judgements")) >= 2
    assert sum(w.store("found") + w.store("lock_busy") for w in workers) >= 1


def test_a_pause_is_shared_by_every_worker(site: FakeSite, cluster: Cluster) -> None:
    x = site.add("x").robots(Reply(status=503), Reply(body=b"User-agent: *\nAllow: /\n"))
    # long enough that b, polling the shared queue on a loaded machine, meets it still paused
    settings = {"REP_PAUSE_INITIAL": 8}
    a, b = cluster.start("a", spider="a", **settings), cluster.start("b", spider="b", **settings)
    cluster.wait_ready(a, b)
    cluster.push("a", [x.url_for("/a1")])
    wait_until(lambda: stored(cluster.store_url, x).get(b"status") == b"paused", "the pause")
    cluster.push("b", [x.url_for(f"/b{i}") for i in range(3)])
    cluster.push("a", [x.url_for("/a2")])
    wait_until(lambda: x.hits() >= 7, "every page after the pause")
    cluster.finish(a, b)

    assert x.hits("/robots.txt") == 2  # the 503, then one refetch when the pause ended
    assert pages_after_robots(x, 2), x.hit_paths()  # nobody touched a page while paused
    assert len(cluster.downloaded()) == 5
    assert b.store("found") >= 1  # b learnt of the pause from the store ...
    assert b.stat("rep/parked/origin-paused") >= 1  # ... and held its requests
    assert a.stat("rep/fetch/count") + b.stat("rep/fetch/count") == 2


def test_parked_requests_go_back_to_the_shared_queue(site: FakeSite, cluster: Cluster) -> None:
    """A worker closing with requests parked hands them to the cluster, not to oblivion."""
    x = site.add("x").robots(Reply(status=503), Reply(body=b"User-agent: *\nAllow: /\n"))
    pages = [x.url_for(f"/p{i}") for i in range(4)]
    first = cluster.start(
        "first",
        REP_PAUSE_INITIAL=6,
        CLOSESPIDER_TIMEOUT=3,
        REP_DECISION_LOG=str(cluster.tmp / "first.audit.jsonl"),
    )
    cluster.wait_ready(first)
    cluster.push("cluster", pages)
    wait_until(lambda: sum(held_records(cluster.redis).values()) == 4, "the pages held")
    first.process.wait(WAIT)  # closes on its timeout, pages still parked
    first.report = json.loads(first.out.read_text())
    assert first.stat("rep/requeued") == 4, first.logged()[-3000:]
    requeued = [r for r in audit(first, "decision") if r["action"] == "requeue"]
    # one decision record per requeued request, made as every other, not a drop
    assert sorted(r["url"] for r in requeued) == sorted(pages)
    assert {r["reason"] for r in requeued} <= {"origin-paused", "origin-pending"}  # why held
    assert {r["policy_status"] for r in requeued} == {"paused"}  # what the origin was at close
    assert audit(first, "requeued") == []  # this worker's own requeues are decisions
    assert held_records(cluster.redis) == {}  # handed over: its records went with it
    assert first.stat("rep/dropped/spider-closed") == 0
    assert first.report["downloaded"] == []
    assert x.hits("/robots.txt") == 1 and x.hits() == 1  # paused: no page touched

    second = cluster.start("second", REP_PAUSE_INITIAL=6)
    cluster.wait_ready(second)
    wait_until(lambda: x.hits() >= 6, "the requeued pages")
    cluster.finish(second)
    assert sorted(second.report["downloaded"]) == sorted(pages)
    assert x.hits("/robots.txt") == 2
    assert pages_after_robots(x, 2), x.hit_paths()


def test_a_dead_lock_owner_is_replaced_when_its_lock_expires(
    site: FakeSite, cluster: Cluster
) -> None:
    x = site.add("x").robots(Reply(hang=True), Reply(body=ROBOTS))
    # a 2 s lock (a lease): the heir, started beside the doomed worker, finds it still held
    settings = {"REP_FETCH_TIMEOUT": 2, TUNE: {"max_redirects": 0, "lock_timeout": 2}}
    doomed = cluster.start("doomed", spider="doomed", **settings)
    heir = cluster.start("heir", spider="heir", **settings)
    cluster.wait_ready(doomed, heir)
    cluster.push("doomed", [x.url_for("/first")])
    assert x.wait_for_hits(1, "/robots.txt", timeout=WAIT)
    lock = f"scrapy-rep:v1:lock:http://127.0.0.1:{x.port}"
    assert cluster.redis.get(lock) is not None
    doomed.kill()  # mid-fetch: its lock stays behind until it expires

    cluster.push("heir", [x.url_for("/second"), x.url_for("/private/no")])
    wait_until(lambda: x.hits("/second") == 1, "the heir's page")
    cluster.finish(heir)
    assert x.hits("/robots.txt") == 2
    assert heir.store("lock_busy") >= 1  # it waited for the dead worker's lock ...
    assert heir.store("lock_acquired") == 1  # ... then took it over
    assert heir.stat("rep/fetch/count") == 1
    assert heir.report["downloaded"] == [x.url_for("/second")]
    assert x.hits("/private/no") == 0


def test_a_killed_lock_holder_blocks_its_origin_for_one_lease_only(
    site: FakeSite, cluster: Cluster
) -> None:
    """The lock is a lease: with a 1.2 s lease, not the 185 s a whole fetch budget would be."""
    x = site.add("x").robots(Reply(hang=True), Reply(body=ROBOTS))
    lease = 1.2
    settings = {"REP_FETCH_TIMEOUT": 30, TUNE: {"lock_timeout": lease}}
    doomed = cluster.start("doomed", spider="doomed", **settings)
    heirs = [cluster.start(f"heir{n}", spider="heirs", **settings) for n in range(2)]
    for worker in (doomed, *heirs):
        cluster.wait_ready(worker)
    cluster.push("doomed", [x.url_for("/first")])
    assert x.wait_for_hits(1, "/robots.txt", timeout=WAIT)
    time.sleep(lease * 1.5)  # longer than one lease: the live holder has renewed it
    lock = f"scrapy-rep:v1:lock:http://127.0.0.1:{x.port}"
    assert cluster.redis.get(lock) is not None
    doomed.kill()
    killed_at = time.monotonic()
    cluster.push("heirs", [x.url_for(f"/p{n}") for n in range(4)])
    assert x.wait_for_hits(2, "/robots.txt", timeout=WAIT)
    waited = time.monotonic() - killed_at
    wait_until(lambda: all(x.hits(f"/p{n}") == 1 for n in range(4)), "the heirs' pages")
    for heir in heirs:
        cluster.finish(heir)
    assert waited < lease + 3, f"the dead worker's lock blocked the origin for {waited:.1f} s"
    assert x.hits("/robots.txt") == 2
    assert sum(h.stat("rep/fetch/count") for h in heirs) == 1


def test_a_slow_live_fetch_keeps_its_lock(site: FakeSite, cluster: Cluster) -> None:
    """A fetch longer than the lease is renewed, so nobody fetches the same file twice."""
    x = site.add("x").robots(Reply(body=ROBOTS, delay=2.0))  # over three leases
    settings = {TUNE: {"lock_timeout": 0.6}}
    workers = [cluster.start(f"w{n}", spider="slow", **settings) for n in range(2)]
    for worker in workers:
        cluster.wait_ready(worker)
    cluster.push("slow", [x.url_for(f"/p{n}") for n in range(6)])
    wait_until(lambda: all(x.hits(f"/p{n}") == 1 for n in range(6)), "every page")
    for worker in workers:
        cluster.finish(worker)
    assert x.hits("/robots.txt") == 1
    assert sum(w.store("lock_renewed") for w in workers) >= 3


def test_redis_restarted_mid_crawl(site: FakeSite, tmp_path: Path, redis_server: str) -> None:
    """The store's Redis goes away and comes back; the queue's Redis stays up."""
    store = RedisServer(tmp_path).start()
    cluster = Cluster(tmp_path, redis_server, store.url)
    try:
        batches = [
            [site.add(f"b{n}o{i}").robots(Reply(body=ROBOTS)) for i in range(3)] for n in range(3)
        ]
        workers = [cluster.start(f"w{i}", REP_PAUSE_INITIAL=1) for i in range(2)]
        cluster.wait_ready(*workers)

        def crawl(origins: list[Origin]) -> None:
            cluster.push(
                "cluster", [o.url_for(p) for p in ("/a", "/private/b", "/c") for o in origins]
            )
            wait_until(lambda: all(o.hits("/a") and o.hits("/c") for o in origins), "a batch")

        crawl(batches[0])
        store.stop()
        crawl(batches[1])  # no store: each worker fetches for itself
        store.start()
        crawl(batches[2])
        cluster.finish(*workers)
        # the store came back (empty: no persistence) and the workers used it again
        after = [stored(store.url, o) for o in batches[2]]
    finally:
        cluster.stop()
        store.stop()

    every = [o for batch in batches for o in batch]
    assert all(o.hits("/private/b") == 0 for o in every)  # nothing disallowed, ever
    assert all(o.hits("/a") == o.hits("/c") == 1 for o in every)
    assert all(o.hits("/robots.txt") == 1 for o in batches[0] + batches[2])
    assert all(1 <= o.hits("/robots.txt") <= len(workers) for o in batches[1])
    assert all(entry.get(b"status") == b"ok" for entry in after)
    warned = [w for w in workers if STORE_FAILED in w.logged()]
    assert warned, "no worker said that the store failed"
    for w in warned:  # one clear WARNING per outage, not one per origin
        assert w.logged().count(f"WARNING: scrapy-rep: {STORE_FAILED}") == 1, w.logged()


def test_two_product_tokens_share_one_fetch(site: FakeSite, cluster: Cluster) -> None:
    robots = b"User-agent: alphabot\nDisallow: /beta\n\nUser-agent: betabot\nDisallow: /alpha\n"
    x = site.add("x").robots(Reply(body=robots, delay=1.0))
    alpha = cluster.start(
        "alpha", spider="alpha", REP_PRODUCT_TOKEN="alphabot", USER_AGENT="alphabot/1.0"
    )
    beta = cluster.start(
        "beta", spider="beta", REP_PRODUCT_TOKEN="betabot", USER_AGENT="betabot/1.0"
    )
    cluster.wait_ready(alpha, beta)
    urls = [x.url_for(p) for p in ("/alpha", "/beta", "/common")]
    cluster.push("alpha", urls)
    cluster.push("beta", urls)
    wait_until(lambda: x.hits("/common") == 2, "both crawls")
    cluster.finish(alpha, beta)
    assert x.hits("/robots.txt") == 1
    assert sorted(alpha.report["downloaded"]) == sorted([x.url_for("/alpha"), x.url_for("/common")])
    assert sorted(beta.report["downloaded"]) == sorted([x.url_for("/beta"), x.url_for("/common")])
    assert alpha.report["dropped"] == {x.url_for("/beta"): "disallow-rule"}
    assert beta.report["dropped"] == {x.url_for("/alpha"): "disallow-rule"}
    assert alpha.stat("rep/fetch/count") + beta.stat("rep/fetch/count") == 1


def test_forget_is_picked_up_by_running_workers(site: FakeSite, cluster: Cluster) -> None:
    v1, v2 = b"User-agent: *\nDisallow: /old\n", b"User-agent: *\nDisallow: /new\n"
    x = site.add("x").robots(Reply(body=v1), Reply(body=v2))
    a, b = cluster.start("a", spider="a"), cluster.start("b", spider="b")
    cluster.wait_ready(a, b)
    cluster.push("a", [x.url_for("/a1")])
    cluster.push("b", [x.url_for("/b1")])
    wait_until(lambda: x.hits("/a1") == x.hits("/b1") == 1, "both workers to know v1")
    assert x.hits("/robots.txt") == 1

    forget = processes.run(
        "scrapy_rep.cli",
        ["store", "forget", x.url, "--redis-url", cluster.store_url],
        cwd=ROOT,
        timeout=WAIT,
    )
    assert forget.returncode == 0, forget.stderr
    assert "2 workers told" in forget.stdout
    heard = "forgotten in the shared store"
    wait_until(lambda: heard in a.logged() and heard in b.logged(), "the invalidation")

    cluster.push("a", [x.url_for("/new/a"), x.url_for("/old/a")])
    cluster.push("b", [x.url_for("/new/b"), x.url_for("/old/b")])
    wait_until(lambda: x.hits("/old/a") == x.hits("/old/b") == 1, "the pages under v2")
    cluster.finish(a, b)
    assert x.hits("/robots.txt") == 2  # one refetch for the cluster
    assert x.hits("/new/a") == x.hits("/new/b") == 0
    assert cluster.dropped() == {
        x.url_for("/new/a"): "disallow-rule",
        x.url_for("/new/b"): "disallow-rule",
    }


# -- Crawl-delay for the cluster as a whole ------------------------------------------------------


def page_times(origin: Origin) -> list[float]:
    """When ``origin`` saw each page request (robots.txt aside), in arrival order."""
    return [h.at for h in origin.requests() if h.path != "/robots.txt"]


#: how late a request may reach the loopback site after it was sent, on a loaded machine
ARRIVAL_JITTER = 0.3


def test_crawl_delay_holds_for_the_whole_cluster(site: FakeSite, cluster: Cluster) -> None:
    # the point is two workers or more sending to the delayed site; on a loaded machine one
    # worker may take every delayed page (the others slow to look at the queue): again then,
    # with new workers and sites
    for attempt in range(3):
        if delay_kept_across_workers(site, cluster, attempt):
            return
    pytest.fail("three crawls in a row, one worker took every delayed page")


def delay_kept_across_workers(site: FakeSite, cluster: Cluster, attempt: int) -> bool:
    """One crawl of a delayed site by three workers: its assertions; False when one worker
    alone sent to the delayed site (the crawl says nothing about the cluster)."""
    slow = site.add(f"slow{attempt}").robots(Reply(body=b"User-agent: *\nCrawl-delay: 1\n"))
    # other loopback addresses: other hosts, so other download slots
    fast = [
        site.add(f"f{attempt}{i}", host=f"127.0.0.{i + 2}").robots(Reply(body=ROBOTS))
        for i in (0, 1)
    ]
    cluster.redis.delete("paced:done")  # an earlier crawl's workers were told to close
    workers = [cluster.start(f"w{attempt}{i}", spider="paced") for i in range(3)]
    cluster.wait_ready(*workers)
    slow_pages = [slow.url_for(f"/s{i}") for i in range(5)]
    fast_pages = [o.url_for(f"/f{i}") for i in range(6) for o in fast]
    mixed = [u for pair in zip(slow_pages, fast_pages[:5], strict=True) for u in pair]
    mixed += fast_pages[5:]
    cluster.push("paced", mixed)
    wait_until(
        lambda: (
            all(o.hits(p) == 1 for o in fast for p in (f"/f{i}" for i in range(6)))
            and all(slow.hits(f"/s{i}") == 1 for i in range(5))
        ),
        "every page",
    )
    cluster.finish(*workers)

    times = page_times(slow)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    # as the site saw them, all workers together. The site sees arrivals, not sends: on a
    # loaded machine one arrival can lag its send by a few tenths, shortening one gap and
    # lengthening the next, so each gap may lose ARRIVAL_JITTER but the run as a whole
    # keeps the delay (sends are booked 1.25 s apart, never more than 0.125 s late)
    assert len(times) == 5 and min(gaps) >= 1.0 - ARRIVAL_JITTER, gaps
    assert times[-1] - times[0] >= 4 * 1.0, gaps
    downloaded = [u for w in workers for u in w.report["downloaded"]]
    assert sorted(downloaded) == sorted(slow_pages + fast_pages)  # each page once
    # the undelayed origins did not queue behind the delayed one
    assert all(t < times[-1] for o in fast for t in page_times(o))
    if sum(1 for w in workers if any(u.startswith(slow.url) for u in w.report["downloaded"])) < 2:
        return False
    # one reservation per delayed page; for the others, one per worker and origin it sent
    # to (its first contact asks whether the cluster paces the origin); most had to wait
    contacts = {
        (w.name, o.url)
        for w in workers
        for o in fast
        for u in w.report["downloaded"]
        if u.startswith(o.url)
    }
    assert sum(w.store("pace") for w in workers) == 5 + len(contacts)
    assert sum(w.stat("rep/cluster/delay-waits") for w in workers) >= 3
    return True


# -- held requests outlive their worker -----------------------------------------------------------


def held_records(client: redis.Redis) -> dict[int, int]:
    """pid -> how many held requests that worker has recorded in the queue's Redis."""
    found = {}
    for key in client.scan_iter(match="scrapy-rep:v1:held:*"):
        worker = key.decode().removeprefix("scrapy-rep:v1:held:")
        pid = int(worker.split(":")[-2])
        found[pid] = sum(1 for field in client.hkeys(key) if not field.startswith(b"~"))
    return found


def audit(worker: Worker, kind: str) -> list[dict[str, Any]]:
    return records(worker.log.with_suffix(".audit.jsonl"), kind)


def test_a_killed_worker_loses_none_of_its_held_requests(site: FakeSite, cluster: Cluster) -> None:
    """SIGKILLed while holding a paused origin's requests: the survivors download them all."""
    x = site.add("x").robots(Reply(status=503), Reply(body=b"User-agent: *\nAllow: /\n"))
    for i in range(6):
        x.links(f"/p{i}", [f"/c{i}"])
    lease, check = 1.0, 0.3
    workers = [
        cluster.start(
            f"w{n}",
            spider="held",
            follow=True,
            REP_PAUSE_INITIAL=6,
            REP_WORKER_LEASE=lease,
            **{TUNE: {"worker_check_interval": check}},
            REP_DECISION_LOG=str(cluster.tmp / f"w{n}.audit.jsonl"),
        )
        for n in range(3)
    ]
    cluster.wait_ready(*workers)
    cluster.push("held", [x.url_for(f"/p{i}") for i in range(6)])
    wait_until(lambda: sum(held_records(cluster.redis).values()) == 6, "every page held")
    holding = held_records(cluster.redis)
    victim = max(workers, key=lambda w: holding.get(w.process.pid, 0))
    lost_with_it = holding[victim.process.pid]
    assert lost_with_it >= 1
    victim.kill()
    killed_at = time.monotonic()
    wait_until(lambda: victim.process.pid not in held_records(cluster.redis), "the requeue")
    requeued_after = time.monotonic() - killed_at
    assert x.hits() == 1  # still paused: only the robots.txt 503 so far
    survivors = [w for w in workers if w is not victim]
    pages = [f"/p{i}" for i in range(6)] + [f"/c{i}" for i in range(6)]
    wait_until(lambda: all(x.hits(p) for p in pages), "every page after the pause")
    cluster.finish(*survivors)

    assert requeued_after < lease + check + 3, f"requeued {requeued_after:.1f} s after the kill"
    assert all(x.hits(p) == 1 for p in pages), x.hit_paths()  # none lost, none twice
    assert x.hits("/robots.txt") == 2 and pages_after_robots(x, 2), x.hit_paths()
    assert sorted(cluster.downloaded()) == sorted(x.url_for(p) for p in pages)
    assert sum(w.stat("rep/cluster/requeued-from-dead-worker") for w in survivors) == lost_with_it
    # each requeued request's final answer, written by the survivor in the dead worker's stead
    moved = [(w, r) for w in survivors for r in audit(w, "decision") if r["action"] == "requeue"]
    assert len(moved) == lost_with_it
    assert [r for w in survivors for r in audit(w, "requeued")] == []  # no bare records
    assert {r["origin"] for _, r in moved} == {x.url}
    assert {r["product_token"] for _, r in moved} == {"clusterbot"}
    assert {r["reason"] for _, r in moved} <= {"origin-paused", "origin-pending"}  # why held
    assert {r["policy_status"] for _, r in moved} <= {"paused", "pending"}  # held under what
    assert all(f":{victim.process.pid}:" in r["detail"] for _, r in moved)  # whose it was
    survivor, first = moved[0]
    _, story = explain(str(survivor.log.with_suffix(".audit.jsonl")), first["url"])
    assert any("whose lease expired: pushed back" in line for line in story), story
    # no spinning while paused: each held page parked once, and once more if it was requeued
    assert sum(w.stat("rep/parked") for w in survivors) <= 6 + lost_with_it
    assert held_records(cluster.redis) == {}  # a graceful close leaves no records behind


def test_a_pages_429_at_one_worker_pauses_the_origin_for_every_worker(
    site: FakeSite, cluster: Cluster
) -> None:
    x = site.add("x").robots(Reply(body=b"User-agent: *\nAllow: /\n"))
    x.page("/a1", Reply(status=429, headers={"Retry-After": "3"}), Reply(body=b"ok"))
    for i in range(4):
        x.page(f"/b{i}", Reply(body=b"ok"))
    settings = {"RETRY_ENABLED": True}
    a, b = cluster.start("a", spider="a", **settings), cluster.start("b", spider="b", **settings)
    cluster.wait_ready(a, b)
    cluster.push("a", [x.url_for("/a1")])
    client = redis.Redis.from_url(cluster.store_url)
    try:
        key = f"scrapy-rep:v1:policy:http://127.0.0.1:{x.port}"  # the origin's one record
        wait_until(lambda: client.hexists(key, "pause"), "the shared pause")
    finally:
        client.close()
    cluster.push("b", [x.url_for(f"/b{i}") for i in range(4)])
    wait_until(lambda: x.hits("/a1") == 2 and all(x.hits(f"/b{i}") for i in range(4)), "pages")
    cluster.finish(a, b)

    refused = x.requests("/a1")[0].at
    later = [h for h in x.requests() if h.path != "/robots.txt" and h is not x.requests("/a1")[0]]
    # nobody sent to the origin during the pause the 429 asked for (3 s)
    assert all(h.at >= refused + 3 - 0.05 for h in later), [(h.path, h.at - refused) for h in later]
    # then one pace for the cluster: at the pause's end a and b each let a request go, and
    # the moments reserved in Redis space them (each worker alone would send at once)
    times = sorted(h.at for h in later)
    assert min(b - a for a, b in itertools.pairwise(times)) >= 0.2, [t - refused for t in times]
    assert a.store("pace") + b.store("pace") >= len(later)
    assert len(cluster.downloaded()) == 5  # the refused page too: not lost
    assert b.stat("rep/parked/rate-limited") >= 1  # b held its requests, told by a
    assert a.stat("rep/pushback/pauses/rate-limited") == 1
    assert b.store("pause_heard") >= 1 or b.stat("rep/pushback/pauses/rate-limited") == 1
    assert x.hits("/robots.txt") == 1


def test_a_worker_meeting_a_paced_origin_after_its_pause_keeps_the_clusters_pace(
    site: FakeSite, cluster: Cluster
) -> None:
    # a heard the 429 and paces x; b meets x only after that pause ended, so it never heard
    # it. Its first send joins the gap the cluster keeps (the last reservation's); before,
    # its other pages came while that join was pending and went unpaced, three within 10 ms:
    # now each waits for room at the first contact's ramp, then reserves at the joined pace
    x = site.add("x").robots(Reply(body=b"User-agent: *\nAllow: /\n"))
    x.page("/a0", Reply(status=429, headers={"Retry-After": "1"}), Reply(body=b"ok"))
    for name in [f"/a{i}" for i in range(1, 7)] + [f"/b{i}" for i in range(4)]:
        x.page(name, Reply(body=b"ok"))
    a, b = cluster.start("a", spider="a"), cluster.start("b", spider="b")
    cluster.wait_ready(a, b)
    cluster.push("a", [x.url_for(f"/a{i}") for i in range(7)])
    wait_until(lambda: x.hits("/a0") == 2, "a's refused page sent again, paced")
    cluster.push("b", [x.url_for(f"/b{i}") for i in range(4)])
    wait_until(lambda: all(x.hits(f"/b{i}") for i in range(4)), "b's pages")
    wait_until(lambda: all(x.hits(f"/a{i}") for i in range(7)), "a's pages")
    cluster.finish(a, b)

    resumed = x.requests("/a0")[1].at
    times = sorted(h.at for h in x.requests() if h.path != "/robots.txt" and h.at >= resumed)
    gaps = [round(later - sooner, 3) for sooner, later in itertools.pairwise(times)]
    paths = [(h.path, round(h.at - resumed, 3)) for h in x.requests() if h.at >= resumed]
    # a's pace shrinks from 1 s by a quarter per page any worker sends: 0.056 s after ten
    assert min(gaps) >= 0.04, paths
    assert b.store("pace") >= 4  # each of b's sends reserved its moment in the cluster
    assert len(cluster.downloaded()) == 11


def test_two_workers_meeting_a_rate_limit_at_once_send_as_one_would(cluster: Cluster) -> None:
    # a and b meet x together: before, each sent its first request at once, two in flight
    # before any answer, and a bucket of one refused the second. Now the first to join leads
    # x's first contact alone: the other waits for what it learns (here its pause, shared)
    with PushbackSite() as pbsite:
        x = pbsite.add("x", rate=5.0, burst=1.0, retry_after=2, pages=10)
        # a lead longer than the package's: the pause must reach b within it on a busy machine
        a, b = (cluster.start(name, spider=name, lead=1.0) for name in "ab")
        cluster.wait_ready(a, b)
        halves = {"a": [f"/p/{i}" for i in range(5)], "b": [f"/p/{i}" for i in range(5, 10)]}
        cluster.push("a", [x.url_for(path) for path in halves["a"]])
        cluster.push("b", [x.url_for(path) for path in halves["b"]])
        wanted = set(halves["a"] + halves["b"])
        wait_until(lambda: wanted <= {e.path for e in x.log() if e.status == 200}, "pages")
        cluster.finish(a, b)
        log = pages(x.log())
    refused = [e.at for e in log if e.status == 429]
    assert refused, [(e.path, e.status) for e in log]  # the bucket of one was met
    opening = [e for e in log if e.at < refused[0] + 2]  # before the first pause ended
    whose = {name for e in opening for name, half in halves.items() if e.path in half}
    assert len(whose) == 1, [(e.path, e.status, round(e.at - log[0].at, 3)) for e in log]
    assert len(cluster.downloaded()) == 10  # nothing lost

"""Stop and resume with JOBDIR: held requests come back, fresh policies are not refetched.

Real processes: a crawl stopped with SIGINT (Scrapy's graceful stop) while one
origin is paused and another's robots.txt fetch is in flight, then resumed
with the same JOBDIR once the paused origin recovers.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from scrapy_rep.core.origin import origin_of
from tests.support import processes
from tests.support.audit import of, records
from tests.support.fakesite import FakeSite, Reply

ROOT = Path(__file__).resolve().parents[2]
WAIT = 40.0
RULES = b"User-agent: *\nDisallow: /private\n"


class Run:
    """One crawl process with the given JOBDIR."""

    def __init__(self, tmp: Path, name: str, urls: list[str], settings: dict[str, Any]) -> None:
        self.ready, self.out = tmp / f"{name}.ready", tmp / f"{name}.json"
        self.log = tmp / f"{name}.log"
        config = {
            "urls": urls,
            "settings": settings,
            "ready": str(self.ready),
            "out": str(self.out),
        }
        self.process = processes.start(
            "tests.support.jobdir_worker",
            [json.dumps(config)],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=self.log,
        )

    def finish(self) -> dict[str, Any]:
        try:
            self.process.wait(WAIT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise AssertionError(f"the crawl did not end:\n{self.logged()}") from None
        assert self.out.exists(), f"no report:\n{self.logged()}"
        report: dict[str, Any] = json.loads(self.out.read_text())
        return report

    def logged(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


def until(check: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_crawl_stopped_and_resumed_with_jobdir_loses_nothing(
    site: FakeSite, tmp_path: Path
) -> None:
    good = site.add("good").robots(Reply(body=RULES))
    paused = site.add("paused").robots(Reply(status=503), Reply(body=RULES))
    slow = site.add("slow").robots(Reply(body=RULES, delay=4.0), Reply(body=RULES))
    pages = {
        "good": [good.url_for("/1"), good.url_for("/2"), good.url_for("/private/no")],
        "paused": [paused.url_for("/1"), paused.url_for("/2")],
        "slow": [slow.url_for("/1")],
    }
    urls = [url for group in pages.values() for url in group]
    settings = {
        "JOBDIR": str(tmp_path / "job"),
        "REP_PAUSE_INITIAL": 4,
        "REP_PENDING_WAIT": 0.2,
    }

    audit = tmp_path / "first-audit.jsonl"
    first = Run(tmp_path, "first", urls, {**settings, "REP_DECISION_LOG": str(audit)})
    until(lambda: good.hits("/1") and good.hits("/2"), "the healthy origin's pages")
    until(lambda: paused.hits("/robots.txt") == 1 and slow.hits("/robots.txt") == 1, "fetches")
    until(lambda: first.ready.exists(), "the spider to open")
    first.process.send_signal(signal.SIGINT)  # one Ctrl-C: Scrapy stops gracefully
    one = first.finish()
    assert one["stats"].get("rep/held/saved", 0) == 3, first.logged()
    assert (tmp_path / "job" / "rep-held.pickle").exists()
    found = records(audit)
    kept = [r for r in of(found, "decision") if r["action"] == "keep"]
    # one decision record per kept request, its final answer in this run: not a drop
    assert sorted(r["url"] for r in kept) == sorted([*pages["paused"], *pages["slow"]])
    assert {r["reason"] for r in kept} <= {"origin-paused", "origin-pending"}  # why held
    judged = {r["product_token"] for r in of(found, "decision")}
    assert len(judged) == 1 and all(r["origin"] == origin_of(r["url"]) for r in kept)
    assert {r["rep_decision"] for r in kept} == {"unresolved"}
    assert "kept" not in {r["type"] for r in found}
    assert (tmp_path / "job" / "rep-policies.sqlite").exists()  # REP_STORE = "auto"

    second = Run(tmp_path, "second", urls, settings)
    two = second.finish()
    assert two["stats"].get("rep/held/restored", 0) == 3, second.logged()

    downloaded = one["downloaded"] + two["downloaded"]
    expected = [u for u in urls if "/private" not in u]
    assert sorted(downloaded) == sorted(expected)  # every page exactly once over both runs
    for origin in (good, paused, slow):
        for path in ("/1", "/2"):
            assert origin.hits(path) <= 1
    assert good.hits("/private/no") == 0  # nothing disallowed, in either run
    assert good.hits("/robots.txt") == 1  # still fresh in the JOBDIR's store: not refetched
    # the paused origin stayed paused across the stop, then recovered with its next fetch
    assert paused.hits("/robots.txt") == 2
    dropped = {**one["dropped"], **two["dropped"]}
    assert dropped == {good.url_for("/private/no"): "disallow-rule"}
    assert not (tmp_path / "job" / "rep-held.pickle").exists()  # read back, then removed


def test_without_jobdir_held_requests_end_with_a_reason(site: FakeSite, tmp_path: Path) -> None:
    paused = site.add("paused").robots(Reply(status=503))
    run = Run(tmp_path, "plain", [paused.url_for("/1")], {"REP_PAUSE_INITIAL": 60})
    until(lambda: paused.hits("/robots.txt") == 1 and run.ready.exists(), "the fetch")
    time.sleep(0.5)
    run.process.send_signal(signal.SIGINT)
    report = run.finish()
    assert report["stats"].get("rep/dropped/spider-closed") == 1
    assert "rep/held/saved" not in report["stats"]
    assert paused.hits("/1") == 0


def test_requests_a_pages_429_held_survive_a_stop_and_the_pause_with_them(
    site: FakeSite, tmp_path: Path
) -> None:
    x = site.add("x").robots(Reply(body=RULES))
    x.page("/1", Reply(status=429, headers={"Retry-After": "5"}), Reply(body=b"ok"))
    x.page("/2", Reply(body=b"ok"))
    x.page("/3", Reply(body=b"ok"))
    urls = [x.url_for(p) for p in ("/1", "/2", "/3")]
    settings = {"JOBDIR": str(tmp_path / "job"), "CONCURRENT_REQUESTS": 1, "RETRY_ENABLED": True}

    first = Run(tmp_path, "first", urls, settings)
    until(lambda: x.hits("/1") == 1 and first.ready.exists(), "the 429")
    time.sleep(0.5)  # the others reach the gate and are held
    first.process.send_signal(signal.SIGINT)
    one = first.finish()
    assert one["stats"].get("rep/held/saved", 0) == 3, first.logged()
    assert one["stats"].get("retry/count", 0) == 0

    second = Run(tmp_path, "second", urls, settings)
    two = second.finish()
    assert two["stats"].get("rep/held/restored", 0) == 3, second.logged()
    assert sorted(one["downloaded"] + two["downloaded"]) == sorted(urls)  # none lost
    refused = x.requests("/1")[0].at
    later = [h for h in x.requests() if h.path != "/robots.txt"][1:]
    assert later and all(h.at >= refused + 5 - 0.05 for h in later)  # the pause held across
    assert two["stats"].get("rep/pushback/pauses/rate-limited", 0) == 1  # read from the JOBDIR

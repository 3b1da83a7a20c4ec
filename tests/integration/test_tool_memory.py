"""The after-crawl tools in flat memory: a file several times larger costs about the same.

``scrapy-rep report`` reads the audit log as a stream, and ``scrapy-rep recheck``
its feed (a JSON array too), one item at a time; what they keep is traced here
with tracemalloc, on generated files of two sizes. Tracing makes
the tools many times slower, so these run in ``make test``, not the quick loop.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scrapy_rep.cli.recheck import _items, _url, _write
from scrapy_rep.core.recheck import ALLOWED, ItemVerdict
from scrapy_rep.report.html import write_report
from tests.support.memory import peak

ORIGIN = "https://a.example:443"
DECISION = {
    "type": "decision",
    "at": 1_700_000_000.0,
    "crawl": "c",
    "origin": ORIGIN,
    "action": "download",
    "rep_decision": "allow",
    "reason": "no-matching-rule",
    "product_token": "bot",
}


def write_log(path: Path, records: Iterator[dict[str, Any]]) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record) + "\n")
    return path


def report_peak(log: Path) -> int:
    """The most memory ``scrapy-rep report`` needs at once for ``log``."""
    return peak(lambda: write_report(str(log), str(log.with_suffix(".html"))))[0]


def test_report_memory_does_not_grow_with_the_logs_size(tmp_path: Path) -> None:
    """A log eight times longer (same origins, more decisions) costs about the same memory:
    the log is read as a stream, not held."""

    def downloads(n: int) -> Iterator[dict[str, Any]]:
        for i in range(n):
            yield {**DECISION, "url": f"https://a.example/{i}", "detail": "d" * 200}

    small = report_peak(write_log(tmp_path / "small.jsonl", downloads(2_000)))
    large = report_peak(write_log(tmp_path / "large.jsonl", downloads(16_000)))
    assert large < 2 * small, (small, large)


def refusals(n: int) -> Iterator[dict[str, Any]]:
    """A log of a crawl that met mostly refusals: per request, a drop (three reasons), or a
    hold and its fate, or a wall; a few origins."""
    for i in range(n):
        origin = f"https://s{i % 4}.example:443"
        url = f"{origin}/page/{i}"
        kind = i % 5
        if kind < 3:
            reason = ("disallowed", "use-refused", "identity-changed")[kind]
            yield {**DECISION, "origin": origin, "url": url, "action": "drop", "reason": reason,
                   "rep_decision": "disallow", "matched_rule": "/page",
                   "detail": "d" * 200}  # fmt: skip
        elif kind == 3:
            yield {"type": "parked", "at": 1.0, "crawl": "c", "origin": origin, "url": url,
                   "reason": "origin-paused"}  # fmt: skip
            yield {**DECISION, "origin": origin, "url": url, "at": 2.0}
        else:
            yield {"type": "licence_wall", "at": 1.0, "crawl": "c", "origin": origin,
                   "url": url, "said": "402 USD 0.01", "walled": True,
                   "licenses": []}  # fmt: skip


def test_report_memory_stays_flat_for_a_log_of_drops_holds_and_walls(tmp_path: Path) -> None:
    """Drops, held requests and walls are counted; the page lists the first and last few of
    each reason and says how many it left out: eight times the log, about the same memory."""
    small_log = write_log(tmp_path / "small.jsonl", refusals(3_000))
    small = report_peak(small_log)
    large = report_peak(write_log(tmp_path / "large.jsonl", refusals(24_000)))
    assert large < 2 * small, (small, large)


def feed_of(path: Path, kind: str, n: int) -> Path:
    """A feed of ``n`` items of a page's text (20,000 characters) each."""
    items = ({"url": f"https://a.example/{i}", "text": "word " * 4_000} for i in range(n))
    with open(path, "w", encoding="utf-8", newline="") as f:
        if kind == "csv":
            writer = csv.DictWriter(f, fieldnames=["url", "text"])
            writer.writeheader()
            writer.writerows(items)
        elif kind == "json":
            f.write("[" + ",\n".join(json.dumps(item) for item in items) + "]")
        else:
            f.writelines(json.dumps(item) + "\n" for item in items)
    return path


def recheck_peak(feed: Path, kind: str) -> int:
    """The most memory ``scrapy-rep recheck FEED -o KEPT`` needs at once to read the feed
    (its URLs), then write the items kept (every one: allowed), the sites not asked."""
    kept = feed.with_name(f"kept.{kind}")
    args = argparse.Namespace(
        feed=str(feed), output=str(kept), report=None, keep_unknown=False, url_field="url"
    )

    def run() -> int:
        urls = {_url(item, "url") for item in _items(str(feed), kind)}
        verdicts = {url: ItemVerdict(ALLOWED, "") for url in urls if url is not None}
        with contextlib.redirect_stdout(io.StringIO()):
            return _write(args, kind, kind, verdicts, {})

    most, done = peak(run)
    assert done == 0  # every item allowed, and kept
    assert sum(1 for _ in _items(str(kept), kind)) == sum(1 for _ in _items(str(feed), kind))
    return most


@pytest.mark.parametrize("kind", ["json", "jsonl", "csv"])
def test_recheck_reads_and_writes_a_feed_one_item_at_a_time(kind: str, tmp_path: Path) -> None:
    """A feed five times longer costs about the same memory: a JSON array is decoded an
    item at a time, and the items kept are written as they are read again, not held."""
    (tmp_path / "small").mkdir()
    (tmp_path / "large").mkdir()
    small = recheck_peak(feed_of(tmp_path / "small" / f"feed.{kind}", kind, 50), kind)
    large = recheck_peak(feed_of(tmp_path / "large" / f"feed.{kind}", kind, 250), kind)
    assert large < 2 * small, (small, large)

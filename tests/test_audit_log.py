"""The audit log file itself: whole lines from two writers, nothing after close, and any
record over MAX_RECORD clipped to fit.

The records a crawl writes: ``tests/integration/test_audit.py``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from scrapy_rep.robotstxt.text import MAX_RECORD
from scrapy_rep.runtime.audit import AuditLog
from tests.support.audit import longest_line, records


def test_log_lines_are_whole_and_late_writes_are_ignored(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    first, second = AuditLog(str(path), buffer_records=3), AuditLog(str(path), buffer_records=2)
    for n in range(10):
        first.write("decision", {"n": n, "by": "first"})
        second.write("decision", {"n": n, "by": "second"})
    first.close()
    second.close()
    second.write("decision", {"n": 99})  # after close: dropped, no exception
    found = records(path)
    assert Counter(r["by"] for r in found) == {"first": 10, "second": 10}


def test_the_audit_log_clips_any_record_still_over_the_limit(tmp_path: Path) -> None:
    """The last line of defence: whatever a future record carries, its line fits."""
    path = tmp_path / "audit.jsonl"
    log = AuditLog(str(path))
    rule = "disallow: /" + "a" * 16_652  # the longest line a robots.txt is read with
    log.write("decision", {"url": "http://a/", "matched_rule": rule, "detail": rule})
    log.write("decision", {"url": "http://a/x", "detail": "\x1b" * 600_000, "uses": {"u": {}}})
    log.write("tdmrep", {"origin": "http://a", "diagnostics": ["entry: bad"] * 100_000})
    log.write("origin", {"origin": "http://a", "dropped": {f"r{n}": n for n in range(50_000)}})
    log.close()
    quoted, escaped, diagnosed, counted = map(json.loads, path.open())
    assert quoted["detail"] == rule and "clipped" not in quoted  # a rule quoted twice fits
    assert longest_line(path) <= MAX_RECORD
    assert escaped["url"] == "http://a/x" and escaped["clipped"] > 600_000 * 6
    assert diagnosed["diagnostics"][-1] == f"and {100_000 - 10} more"
    assert counted["origin"] == "http://a" and counted["clipped"]

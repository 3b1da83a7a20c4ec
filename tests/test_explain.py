"""``scrapy-rep explain`` of hand-written audit logs: kept, requeued, older record forms.

The crawls that write the logs it reads: ``tests/integration/test_explain.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scrapy_rep import cli
from scrapy_rep.cli.explain import explain
from scrapy_rep.core.decision import KEEP, REQUEUE
from scrapy_rep.crawl.handover import handed_over
from scrapy_rep.crawl.held_records import held_fields, requeued_from_dead

URL = "http://a.example/p"


def _log(path: Path, *found: dict[str, Any]) -> str:
    path.write_text("".join(json.dumps(record) + "\n" for record in found))
    return str(path)


PARKED = {"type": "parked", "at": 1.0, "url": URL, "origin": "http://a.example:80",
          "reason": "origin-paused"}  # fmt: skip


def test_explain_says_a_request_was_kept_in_the_jobdir_at_close(tmp_path: Path) -> None:
    record = handed_over("http://a.example:80", "testbot", URL, None, KEEP, "origin-paused")
    log = _log(tmp_path / "audit.jsonl", PARKED, {"type": "decision", "at": 2.0, **record})
    action, lines = explain(log, URL)
    assert action == "keep"
    assert lines[1].startswith("  decision  UNRESOLVED -> keep (origin-paused), token testbot")
    assert any("kept in the JOBDIR" in line and "why" in line for line in lines)
    assert lines[-1].endswith("kept      held (origin-paused); kept in the JOBDIR for the "
                              "resumed crawl")  # fmt: skip
    assert cli.main(["explain", log, URL]) == 1  # not downloaded (yet)


def test_explain_says_a_request_was_requeued_for_another_worker(tmp_path: Path) -> None:
    record = handed_over("http://a.example:80", "testbot", URL, None, REQUEUE, "origin-paused")
    log = _log(tmp_path / "audit.jsonl", PARKED, {"type": "decision", "at": 2.0, **record})
    action, lines = explain(log, URL)
    assert action == "requeue"
    assert lines[-1].endswith("requeued  held (origin-paused); pushed back into the shared "
                              "queue at close")  # fmt: skip


def test_explain_says_a_dead_workers_request_was_requeued_by_a_survivor(tmp_path: Path) -> None:
    held = held_fields("http://a.example:80", "testbot", None, "origin-pending")
    record = requeued_from_dead(URL, held, "host:41:ab")
    assert record is not None
    log = _log(tmp_path / "audit.jsonl", {"type": "decision", "at": 2.0, **record})
    action, lines = explain(log, URL)
    assert action == "requeue"
    assert lines[-1].endswith("requeued  held (origin-pending); held by worker host:41:ab, "
                              "whose lease expired: pushed back into the shared scrapy-redis "
                              "queue by this worker")  # fmt: skip


def test_explain_still_reads_the_kept_record_of_an_older_log(tmp_path: Path) -> None:
    kept = {"type": "kept", "at": 2.0, "url": URL, "reason": "jobdir"}
    action, lines = explain(_log(tmp_path / "audit.jsonl", PARKED, kept), URL)
    assert action == "park"
    assert "  no decision recorded; last seen kept (jobdir)" in lines
    assert lines[-1].endswith("kept      jobdir")

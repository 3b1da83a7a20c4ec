"""A robots.txt cut at 512,000 bytes (RFC 9309 §2.5) says so: one WARNING per origin naming
the size read, and every decision taken under the cut file carries ``policy_truncated``."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import pytest_twisted

from tests.support.audit import records
from tests.support.crawl import crawl
from tests.support.fakesite import FakeSite, Reply


def big_file() -> bytes:
    """756 KB: ``/early`` disallowed in the part read, ``/late`` in the part cut off."""
    head = b"User-agent: testbot\nDisallow: /early\n"
    pad = b"# " + b"x" * 97 + b"\n"
    body = head + pad * ((600_000 - len(head)) // len(pad)) + b"Disallow: /late\n"
    return body + pad * ((756_000 - len(body)) // len(pad))


@pytest_twisted.ensureDeferred
async def test_a_cut_file_is_said_once_per_origin_and_in_each_decision(
    site: FakeSite, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    big = site.add("big").robots(Reply(body=big_file()))
    small = site.add("small").robots(Reply(body=b"User-agent: *\nDisallow: /early\n"))
    log = tmp_path / "audit.jsonl"
    urls = [big.url_for(p) for p in ("/early", "/late", "/late/2", "/")]
    urls += [small.url_for(p) for p in ("/early", "/late")]
    with caplog.at_level(logging.INFO):
        result = await crawl(urls, {"REP_DECISION_LOG": str(log)})
    assert result.stat("rep/fetch/truncated") == 1
    assert big.url_for("/late") in result.downloaded  # the rule past the cut is not obeyed
    cut = [r for r in caplog.records if r.levelno == logging.WARNING and "cut at" in r.getMessage()]
    assert len(cut) == 1, [r.getMessage() for r in cut]
    message = cut[0].getMessage()
    assert big.url in message and "512000 bytes" in message, message
    decisions = {r["url"]: r for r in records(log, "decision")}
    for path in ("/early", "/late", "/late/2", "/"):
        assert decisions[big.url_for(path)]["policy_truncated"] is True
    for path in ("/early", "/late"):
        assert decisions[small.url_for(path)]["policy_truncated"] is False

"""robots.txt text the site chose, in records, log lines and the audit log: escaped, valid UTF-8.

A rule can carry ESC sequences (recolour, retitle the terminal), BEL, NEL and
U+2028 (a log reader starts a new line there, with text the site chose), a
bidi override, or octets of invalid UTF-8 (kept by the parser as lone
surrogates, which a UTF-8 log file or a strict JSON reader refuses).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted

from tests.support.audit import audited_crawl
from tests.support.fakesite import FakeSite, Reply

HOSTILE = "/x\x1b]0;pwned\x07\x1b[31m\u0085\u2028\u202eevil"
BODY = f"User-agent: *\nDisallow: {HOSTILE}\n".encode() + b"Disallow: /bad\xff\n"
#: what must never reach a log line, a record or the audit log raw
RAW = ("\x1b", "\x07", "\x85", "\u2028", "\u202e")


def clean(text: str) -> bool:
    """No raw control character, no lone surrogate: safe to print and to encode as UTF-8."""
    text.encode("utf-8")  # raises on a lone surrogate
    return not any(ch in text for ch in RAW)


def strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    return [value] if isinstance(value, str) else []


@pytest_twisted.ensureDeferred
async def test_rules_reach_records_logs_and_the_audit_log_escaped(
    site: FakeSite, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    a = site.add("a").robots(Reply(body=BODY))
    hostile, invalid = a.url_for(HOSTILE), a.url_for("/bad%FF")
    # the handler Scrapy's LOG_FILE installs: a UTF-8 file
    log_file = tmp_path / "crawl.log"
    handler = logging.FileHandler(log_file, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logger = logging.getLogger("scrapy_rep")
    logger.addHandler(handler)
    try:
        with caplog.at_level(logging.DEBUG, logger="scrapy_rep"):
            result, audit = await audited_crawl(tmp_path, [hostile, invalid, a.url_for("/ok")])
    finally:
        logger.removeHandler(handler)
        handler.close()

    assert sorted(result.dropped.values()) == ["disallow-rule", "disallow-rule"]
    assert len(result.dropped) == 2 and result.downloaded == [a.url_for("/ok")]
    # the records the requests carry
    records = list(result.decisions.values())
    assert all(clean(s) for record in records for s in strings(record))
    rules = sorted(r["matched_rule"] for r in records if r["matched_rule"])
    assert rules == [
        "disallow: /bad\\xff",
        "disallow: /x\\x1b]0;pwned\\x07\\x1b[31m\\x85\\u2028\\u202eevil",
    ]
    # the audit log: strict UTF-8, no "\udcff" escape a strict JSON reader refuses
    text = (tmp_path / "audit.jsonl").read_bytes().decode("utf-8")
    assert "\\udc" not in text
    assert all(clean(s) for record in audit for s in strings(record))
    # every log line, and the log file: nothing lost, nothing raw
    assert all(clean(r.getMessage()) for r in caplog.records)
    written = log_file.read_bytes().decode("utf-8")
    dropped = [line for line in written.splitlines() if "scrapy-rep: dropped" in line]
    assert len(dropped) == 2, written
    assert clean(written)
    assert any("Disallow: /bad\\xff (line 3)" in line for line in dropped)

"""Crawls with the audit log on, and reading it back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.crawl import CrawlResult, crawl


def records(path: Path | str, kind: str | None = None) -> list[dict[str, Any]]:
    """The audit log at ``path``, one dict per line; only those of type ``kind`` if given."""
    with open(path, encoding="utf-8") as f:
        found = [json.loads(line) for line in f]
    return found if kind is None else of(found, kind)


def of(found: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [r for r in found if r["type"] == kind]


async def audited_crawl(
    tmp_path: Path, urls: list[str], **settings: Any
) -> tuple[CrawlResult, list[dict[str, Any]]]:
    log = tmp_path / "audit.jsonl"
    result = await crawl(
        urls,
        {
            "REP_DECISION_LOG": str(log),
            "REP_POLICY_ARCHIVE": str(tmp_path / "archive"),
            **settings,
        },
    )
    return result, records(log)


def longest_line(path: Path) -> int:
    """The longest line of a file, in characters (UTF-8), read in pieces."""
    longest = 0
    with path.open(encoding="utf-8", errors="replace") as f:
        for line in f:
            longest = max(longest, len(line.rstrip("\n")))
    return longest

"""Crawls with the audit log on, and reading it back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.crawl import CrawlResult, crawl


def records(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


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

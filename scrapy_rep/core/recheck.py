"""Re-judging a dataset's items against what their sites say now (``scrapy-rep recheck``).

Pure: a decision record (as a crawl would make it now) in, a verdict out.

- ``allowed``: robots.txt lets the URL through and no declared use is refused;
- ``refused``: a rule disallows it now, a declared use is refused (robots.txt's
  lines, a policy token's group, tdmrep.json), the site is on ``REP_EXCLUDE``, or
  the collection policy rejects it; ``why`` says which;
- ``unknown``: the site's robots.txt could not be read (5xx, a network error,
  401/403/429 pausing it): nothing is known of what it says now; ``why`` has
  the status.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ALLOWED, REFUSED, UNKNOWN = "allowed", "refused", "unknown"
VERDICTS = (ALLOWED, REFUSED, UNKNOWN)
#: reasons that say the site could not be asked, not what it says
_UNKNOWN_REASONS = frozenset(
    {"robots-unreachable", "origin-paused", "origin-pending", "policy-unresolved"}
)


@dataclass(frozen=True, slots=True)
class ItemVerdict:
    """One item's verdict and why."""

    verdict: str
    why: str


def verdict(record: Mapping[str, Any]) -> ItemVerdict:
    """The verdict a decision record (``DecisionRecord``) gives an item now."""
    reason = record.get("reason", "")
    if reason in _UNKNOWN_REASONS:
        status = record.get("policy_http_status")
        said = f"robots.txt {status}" if status else "robots.txt not read"
        detail = str(record.get("detail") or reason)
        return ItemVerdict(UNKNOWN, detail if detail.startswith(said) else f"{said}: {detail}")
    if record.get("rep_decision") == "disallow" or reason.startswith("collection-"):
        rule = record.get("matched_rule")
        where = f"{rule} (line {record.get('matched_line')})" if rule else reason
        return ItemVerdict(REFUSED, f"{reason}: {where}")
    for use, said in (record.get("uses") or {}).items():
        if said.get("answer") == "refused":
            return ItemVerdict(REFUSED, f"use-refused: {use} by {said.get('source', '')}")
    if record.get("action") == "download" or record.get("rep_decision") == "allow":
        return ItemVerdict(ALLOWED, reason)
    return ItemVerdict(UNKNOWN, f"{reason}: {record.get('detail', '')}")

"""The decision record's fields, shared by the record's unit tests and the crawls that check it."""

from __future__ import annotations

#: the record's fields, as docs/design.md lists them
FIELDS = [
    "origin",
    "product_token",
    "url",
    "policy_status",
    "policy_http_status",
    "policy_fetched_at",
    "policy_digest",
    "policy_url",
    "policy_final_url",
    "group",
    "matched_rule",
    "matched_line",
    "rep_decision",
    "collection_decision",
    "action",
    "reason",
    "detail",
    "uses",
]

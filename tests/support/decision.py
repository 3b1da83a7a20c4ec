"""The decision record's fields, shared by the record's unit tests and the crawls that check it."""

from __future__ import annotations

from scrapy_rep.core.decision import DecisionRecord

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

#: every field of a record, in the order its one builder writes them (``page_use``: only in
#: a browser sub-request's record)
EVERY_FIELD = [name for name in DecisionRecord.__annotations__ if name != "page_use"]

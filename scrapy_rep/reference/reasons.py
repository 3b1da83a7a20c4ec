"""Every reason a decision record (or an audit record) may give, in the reference's order.

The reference's list of reasons is made from :data:`REASONS`, and
``tests/test_reasons.py`` holds every reason the package spells against it. Plain
data for the docs, the tests and the command: a crawl never imports it.
"""

from __future__ import annotations

#: reason -> (who gives it, what it means)
REASONS: dict[str, tuple[str, str]] = {
    "allow-rule": ("robots.txt", "an `Allow` rule decided (the longest match): allowed"),
    "disallow-rule": ("robots.txt", "a `Disallow` rule decided (the longest match): disallowed"),
    "no-matching-rule": ("robots.txt", "a group applies, but none of its rules matches: allowed"),
    "no-group": ("robots.txt", "no group names the product token, and there is no `*`: allowed"),
    "robots-txt": ("robots.txt", "`/robots.txt` itself, always allowed"),
    "robots-unavailable": (
        "the status table",
        "robots.txt is unavailable (a 4xx by default): everything allowed",
    ),
    "robots-unreachable": (
        "the status table",
        "a `disallow` row of `REP_STATUS_ACTIONS` (the RFC's letter for 5xx): nothing allowed",
    ),
    "origin-paused": (
        "the gate",
        "the origin is paused (its robots.txt could not be read): held, refetched with back-off",
    ),
    "origin-pending": (
        "the gate",
        "its robots.txt did not arrive within `REP_PENDING_WAIT`: held until it does",
    ),
    "policy-unresolved": (
        "the status table",
        "robots.txt still failing after 5 fetches: dropped, never downloaded",
    ),
    "collection-rejected": ("the collection hook", "`REP_COLLECTION_POLICY` answered `rejected`"),
    "collection-unresolved": (
        "the collection hook",
        "`REP_COLLECTION_POLICY` answered `unresolved` (`REP_COLLECTION_UNRESOLVED_ACTION`)",
    ),
    "collection-error": (
        "the collection hook",
        "the hook raised, or answered something else than the three answers; `detail` says what",
    ),
    "use-refused": (
        "declared uses",
        'with `REP_USE_ACTION = "drop"`, robots.txt (or tdmrep.json) refuses a use the crawl '
        "declares (`REP_USES`); `detail` names the use and the line",
    ),
    "park-overflow": ("holding", "`REP_PARK_MAX` requests are parked already"),
    "park-expired": ("holding", "parked longer than `REP_PARK_TIMEOUT`"),
    "spider-closed": ("holding", "held when the spider closed, with no JOBDIR"),
    "unserializable": (
        "holding",
        "held at a stop with JOBDIR, but Scrapy cannot serialise it to keep it",
    ),
    "page-nofollow": (
        "the page directives middleware",
        "the page that yielded it says `nofollow` or `none`; `matched_rule` holds the directive "
        "and where, e.g. `X-Robots-Tag (mybot:): nofollow`",
    ),
    "link-nofollow": (
        "the page directives middleware",
        '`REP_REL_NOFOLLOW`: the page links to it only with `rel="nofollow"`',
    ),
    "page-noindex": (
        "the page directives middleware",
        "an `item_dropped` record: the page says `noindex` (or `none`), so its items are "
        "dropped (`REP_PAGE_NOINDEX_ACTION`)",
    ),
    "token-missing": (
        "the identity guard",
        'with `REP_IDENTITY_ACTION = "drop"`: the `User-Agent` leaving for the network '
        "does not carry the product token",
    ),
    "identity-changed": (
        "the identity guard",
        "the origin answered 403 or 429 lately to another `User-Agent` or proxy than this "
        "request's; the record keeps the request's robots.txt judgement",
    ),
    "rate-limited": (
        "pushback",
        "held: a page of its origin answered 429; `detail` names the page, the `Retry-After` "
        "read and the pause's end (`REP_PAGE_STATUS_ACTIONS`)",
    ),
    "service-unavailable": (
        "pushback",
        "held: a page of its origin answered 503; `detail` names the page, the `Retry-After` "
        "read and the pause's end",
    ),
    "pushback-gave-up": (
        "pushback",
        "held, then ended: its origin answered 429 or 503 to 5 pages in a row with no healthy "
        "answer between, each after the pause it asked for: not sent again",
    ),
    "blocked": (
        "pushback",
        "held, then ended: its origin answered `REP_BLOCK_AFTER` pages in a row with 401/403 "
        "after serving pages, or with licence or payment walls (stop and diagnose)",
    ),
    "excluded-site": (
        "`REP_EXCLUDE`",
        "the URL's host is on the exclusion list (or a subdomain of an entry): dropped before "
        "anything is fetched, robots.txt included; `matched_rule` names the entry",
    ),
    "licence-required": (
        "licence walls",
        "the response was a licence or payment wall (`402`, or `401` with `WWW-Authenticate: "
        "License`): not retried, its items never produced; `matched_rule` says what it asked",
    ),
    "guard-error": (
        "the browser guard",
        "it could not judge a sub-request in time, or failed: the sub-request is aborted",
    ),
    "not-governed": (
        "the browser guard",
        "a sub-request to a URL with no origin (`data:`, `blob:`): robots.txt does not govern "
        "it; let through, and not recorded",
    ),
    "worker-lease-expired": (
        "the cluster",
        "a `requeued` audit record: a dead worker's held request, recorded by an older "
        "scrapy-rep without its decision fields, requeued when its lease expired",
    ),
}

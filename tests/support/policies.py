"""Sample policies for the stores' round-trip tests (Redis, SQLite)."""

from __future__ import annotations

from scrapy_rep.core.policy import Policy, Status, digest_of

BODY = "User-agent: *\nDisallow: /private\n# ünïcode\n".encode() * 50


def full_policy() -> Policy:
    """A policy with every field set to something other than its default."""
    return Policy(
        status=Status.OK,
        outcome="5xx",
        http_status=503,
        fetched_at=1_700_000_000.125,
        expires_at=1_700_000_360.5,
        url="https://example.com/robots.txt",
        final_url="https://www.example.com/robots.txt",
        reason="robots.txt 503: using the last good copy (RFC 9309 §2.3.1.4)",
        body=BODY,
        digest=digest_of(BODY),
        truncated=True,
        failures=3,
        unreachable_since=1_699_999_000.25,
        stale_since=1_699_990_000.75,
        etag='W/"r\u00e9v-7"',
        last_modified="Tue, 01 Dec 2026 09:00:00 GMT",
    )


def bare_policy() -> Policy:
    """Every optional field at None (a paused origin has no body, digest or status code)."""
    return Policy(
        Status.PAUSED,
        "network",
        None,
        100.0,
        160.0,
        "http://h/robots.txt",
        "http://h/robots.txt",
        "paused",
    )

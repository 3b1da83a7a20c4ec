"""Conditional refetch, the pure part: what is sent on an expired policy and what a 304
makes of the copy in hand, checked on :func:`next_policy`.

The request itself, in real crawls: ``tests/integration/test_conditional_refetch.py``.
"""

from __future__ import annotations

from dataclasses import replace

from scrapy_rep.core.policy import (
    NOT_MODIFIED,
    Conditional,
    FetchResult,
    PolicyConfig,
    Status,
    classify,
    conditional,
    next_policy,
)
from scrapy_rep.runtime.store.memory import PolicyCache

URL = "https://a.example/robots.txt"
RULES = b"User-agent: *\nDisallow: /private\n"

ETAG = '"v1"'
MODIFIED = "Mon, 30 Nov 2026 12:00:00 GMT"
CONFIG = PolicyConfig(ttl=100.0, min_ttl=0.0)


def ok(headers: dict[str, str] | None = None) -> FetchResult:
    validators = {"etag": ETAG, "last-modified": MODIFIED} if headers is None else headers
    return FetchResult(URL, URL, status=200, body=RULES, headers=validators)


def not_modified(headers: dict[str, str] | None = None, asked: bool = True) -> FetchResult:
    return FetchResult(URL, URL, status=304, headers=headers or {}, conditional=asked)


def test_a_200_keeps_its_validators_and_a_refetch_sends_them() -> None:
    policy = next_policy(None, ok(), 0.0, CONFIG)
    assert (policy.etag, policy.last_modified) == (ETAG, MODIFIED)
    asked = conditional(policy)
    assert asked == Conditional(URL, ETAG, MODIFIED)
    assert asked.headers() == {"If-None-Match": ETAG, "If-Modified-Since": MODIFIED}


def test_nothing_is_sent_without_a_copy_or_without_validators() -> None:
    assert conditional(None) is None
    assert conditional(next_policy(None, ok(headers={}), 0.0, CONFIG)) is None
    gone = next_policy(None, FetchResult(URL, URL, status=404), 0.0, CONFIG)
    assert conditional(gone) is None
    only_date = next_policy(None, ok(headers={"last-modified": MODIFIED}), 0.0, CONFIG)
    assert conditional(only_date) == Conditional(URL, None, MODIFIED)
    assert conditional(only_date).headers() == {"If-Modified-Since": MODIFIED}  # type: ignore[union-attr]


def test_a_304_renews_the_copy_in_hand() -> None:
    first = next_policy(None, ok(), 0.0, CONFIG)
    renewed = next_policy(first, not_modified({"cache-control": "max-age=50"}), 150.0, CONFIG)
    assert classify(not_modified()) == NOT_MODIFIED
    assert renewed.status is Status.OK and renewed.outcome == NOT_MODIFIED
    assert renewed.http_status == 304
    assert (renewed.body, renewed.digest) == (first.body, first.digest)
    assert (renewed.fetched_at, renewed.expires_at) == (150.0, 200.0)
    assert (renewed.etag, renewed.last_modified) == (ETAG, MODIFIED)


def test_a_304_with_new_validators_keeps_those() -> None:
    first = next_policy(None, ok(), 0.0, CONFIG)
    renewed = next_policy(first, not_modified({"etag": '"v2"'}), 150.0, CONFIG)
    assert (renewed.etag, renewed.last_modified) == ('"v2"', MODIFIED)


def test_a_304_ends_a_stale_copy_and_its_failures() -> None:
    first = next_policy(None, ok(), 0.0, CONFIG)
    stale = next_policy(first, FetchResult(URL, URL, status=503), 150.0, CONFIG)
    assert stale.stale_since == 0.0 and stale.failures == 1
    renewed = next_policy(stale, not_modified(), 250.0, CONFIG)
    assert renewed.status is Status.OK and renewed.digest == first.digest
    assert (renewed.failures, renewed.unreachable_since, renewed.stale_since) == (0, None, None)
    assert renewed.expires_at == 350.0


def test_a_304_nobody_asked_for_is_an_ordinary_3xx() -> None:
    first = next_policy(None, ok(), 0.0, CONFIG)
    unasked = not_modified(asked=False)
    assert classify(unasked) == "3xx"
    assert next_policy(first, unasked, 150.0, CONFIG).status is Status.UNAVAILABLE
    # asked, but with no copy to renew: the same row
    orphan = next_policy(None, not_modified(), 150.0, CONFIG)
    assert orphan.status is Status.UNAVAILABLE and orphan.outcome == "3xx"


def test_the_memory_cache_keeps_the_validators_and_the_parse() -> None:
    cache = PolicyCache()
    first = next_policy(None, ok(), 0.0, CONFIG)
    cache.put("https://a.example:443", first)
    parsed = cache.robots(first)
    kept = cache.with_body("https://a.example:443")
    assert kept == first
    renewed = next_policy(kept, not_modified(), 150.0, CONFIG)
    cache.put("https://a.example:443", renewed)
    assert cache.with_body("https://a.example:443") == renewed
    assert cache.robots(replace(renewed, body=None)) is parsed

"""The status table as pure functions: fetch result + previous policy + clock -> policy.

No Scrapy, no reactor: every row of ``DEFAULT_ACTIONS`` is checked against a
hand-made :class:`FetchResult`, with the clock passed in as a number.
"""

from __future__ import annotations

import email.utils
from dataclasses import replace

import pytest

from scrapy_rep.core.policy import (
    DEFAULT_ACTIONS,
    Action,
    FetchResult,
    Policy,
    PolicyConfig,
    Status,
    cache_lifetime,
    classify,
    digest_of,
    given_up_at,
    next_policy,
    retry_after,
)

NOW = 1_700_000_000.0
DAY = 86_400.0
URL = "https://example.com/robots.txt"
BODY = b"User-agent: *\nDisallow: /private\n"
#: small numbers so the arithmetic is easy to read
CONFIG = PolicyConfig(
    ttl=1000.0,
    min_ttl=10.0,
    pause_initial=5.0,
    pause_max=40.0,
    pause_max_tries=100,
    retry_after_max=300.0,
)


def result(
    status: int | None = 200,
    body: bytes = b"",
    headers: dict[str, str] | None = None,
    error: str | None = None,
    **kwargs: object,
) -> FetchResult:
    if status is None and error is None:
        error = "ConnectionRefusedError"
    return FetchResult(URL, URL, status, body, headers or {}, error, **kwargs)  # type: ignore[arg-type]


def http_date(when: float) -> str:
    return email.utils.formatdate(when, usegmt=True)


#: one fetch result per row of the status table
ROW_EXAMPLES: dict[str, FetchResult] = {
    "2xx": result(200, BODY),
    "4xx": result(404),
    "401": result(401),
    "403": result(403),
    "429": result(429),
    "5xx": result(503),
    "network": result(None, error="TimeoutError"),
    "redirect-limit": result(302, redirects=6, redirect_limit=True),
    "3xx": result(302),
    "excluded-redirect": result(302, excluded="http://intranet.example:80, excluded by ..."),
}


# -- classify -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "outcome"),
    [
        (200, "2xx"),
        (204, "2xx"),
        (299, "2xx"),
        (400, "4xx"),
        (404, "4xx"),
        (410, "4xx"),
        (418, "4xx"),
        (401, "401"),
        (403, "403"),
        (429, "429"),
        (500, "5xx"),
        (503, "5xx"),
        (599, "5xx"),
        (301, "3xx"),  # a redirect with no Location (a followed one never gets here)
        (None, "network"),
    ],
)
def test_classify(status: int | None, outcome: str) -> None:
    assert classify(result(status)) == outcome


def test_too_many_redirects_keep_the_real_status() -> None:
    over = result(302, redirects=6, redirect_limit=True)
    assert classify(over) == "redirect-limit"
    assert over.status == 302


def test_a_redirect_into_an_excluded_site_pauses_and_its_reason_names_the_host() -> None:
    off = result(302, excluded="http://intra\x1bnet.example:80, excluded by the entry")
    assert classify(off) == "excluded-redirect"
    policy = next_policy(None, off, NOW, CONFIG)
    assert policy.status is Status.PAUSED
    assert "not followed" in policy.reason and "intra\\x1bnet.example" in policy.reason


def test_every_row_has_an_example_and_every_outcome_a_row() -> None:
    assert set(ROW_EXAMPLES) == set(DEFAULT_ACTIONS)
    for outcome, example in ROW_EXAMPLES.items():
        assert classify(example) == outcome


# -- next_policy, one row at a time -----------------------------------------------------------


@pytest.mark.parametrize(
    ("outcome", "status"),
    [
        ("2xx", Status.OK),
        ("4xx", Status.UNAVAILABLE),
        ("401", Status.PAUSED),
        ("403", Status.PAUSED),
        ("429", Status.PAUSED),
        ("5xx", Status.PAUSED),
        ("network", Status.PAUSED),
        ("redirect-limit", Status.UNAVAILABLE),
        ("3xx", Status.UNAVAILABLE),
        ("excluded-redirect", Status.PAUSED),
    ],
)
def test_default_row(outcome: str, status: Status) -> None:
    policy = next_policy(None, ROW_EXAMPLES[outcome], NOW, CONFIG)
    assert policy.status is status
    assert policy.outcome == outcome
    assert policy.fetched_at == NOW
    assert policy.url == URL
    assert policy.http_status == ROW_EXAMPLES[outcome].status
    if status is Status.PAUSED:
        assert policy.expires_at == NOW + CONFIG.pause_initial
        assert policy.failures == 1
        assert policy.body is None  # a failure is never turned into a robots.txt
    else:
        assert policy.expires_at == NOW + CONFIG.ttl
        assert policy.failures == 0


def test_2xx_keeps_the_body_digest_and_truncation() -> None:
    policy = next_policy(None, result(200, BODY, truncated=True), NOW, CONFIG)
    assert policy.status is Status.OK
    assert policy.body == BODY
    assert policy.digest == digest_of(BODY)
    assert policy.truncated is True
    assert policy.usable_copy() is policy
    assert "rules apply" in policy.reason


def test_2xx_with_an_empty_or_garbage_body_is_still_rules() -> None:
    for body in (b"", b"<html>not a robots.txt</html>"):
        policy = next_policy(None, result(200, body), NOW, CONFIG)
        assert policy.status is Status.OK
        assert policy.body == body


@pytest.mark.parametrize("status", [400, 404, 410, 451])
def test_4xx_allows_everything(status: int) -> None:
    policy = next_policy(None, result(status, b"User-agent: *\nDisallow: /\n"), NOW, CONFIG)
    assert policy.status is Status.UNAVAILABLE
    assert policy.body is None  # the error page is not parsed as rules
    assert str(status) in policy.reason


@pytest.mark.parametrize("status", [401, 403, 429, 500, 503, None])
def test_pause_backs_off_doubling_up_to_pause_max(status: int | None) -> None:
    policy: Policy | None = None
    waits = []
    now = NOW
    for _ in range(6):
        policy = next_policy(policy, result(status), now, CONFIG)
        assert policy.status is Status.PAUSED
        waits.append(policy.expires_at - now)
        now = policy.expires_at
    assert waits == [5.0, 10.0, 20.0, 40.0, 40.0, 40.0]
    assert policy is not None and policy.failures == 6


def test_a_success_resets_the_failure_count() -> None:
    paused = next_policy(None, result(503), NOW, CONFIG)
    paused = next_policy(paused, result(503), NOW + 5, CONFIG)
    assert paused.failures == 2
    ok = next_policy(paused, result(200, BODY), NOW + 20, CONFIG)
    assert ok.status is Status.OK and ok.failures == 0 and ok.unreachable_since is None
    again = next_policy(None, result(503), NOW + 30, CONFIG)
    assert again.failures == 1


# -- 429 and Retry-After ----------------------------------------------------------------------


def test_429_retry_after_seconds() -> None:
    policy = next_policy(None, result(429, headers={"retry-after": "120"}), NOW, CONFIG)
    assert policy.status is Status.PAUSED
    assert policy.expires_at == NOW + 120


def test_429_retry_after_http_date() -> None:
    headers = {"retry-after": http_date(NOW + 200)}
    policy = next_policy(None, result(429, headers=headers), NOW, CONFIG)
    assert policy.expires_at == NOW + 200


def test_429_retry_after_is_capped() -> None:
    for value in ("999999", http_date(NOW + 10 * DAY)):
        policy = next_policy(None, result(429, headers={"retry-after": value}), NOW, CONFIG)
        assert policy.expires_at == NOW + CONFIG.retry_after_max


def test_429_retry_after_zero_or_past_waits_at_least_a_second() -> None:
    for value in ("0", http_date(NOW - 60)):
        policy = next_policy(None, result(429, headers={"retry-after": value}), NOW, CONFIG)
        assert policy.status is Status.PAUSED
        assert policy.expires_at == NOW + 1


@pytest.mark.parametrize("value", ["soon", "-5", "1.5", "Wed, 99 Foo 2024 00:00:00 GMT", ""])
def test_429_malformed_retry_after_falls_back_to_backoff(value: str) -> None:
    policy = next_policy(None, result(429, headers={"retry-after": value}), NOW, CONFIG)
    assert policy.status is Status.PAUSED
    assert policy.expires_at == NOW + CONFIG.pause_initial


# -- hostile numbers in headers: a value, never an exception -----------------------------------


@pytest.mark.parametrize("status", [429, 503])
@pytest.mark.parametrize("value", ["\u00b2", "1\u00b2", "\u0663", "\uff15"])
def test_a_retry_after_of_digits_that_are_not_ascii_is_unreadable(status: int, value: str) -> None:
    # "²".isdigit() is true and float("²") raises: the header is ignored, the back-off applies
    assert retry_after({"retry-after": value}, NOW) is None
    policy = next_policy(None, result(status, headers={"retry-after": value}), NOW, CONFIG)
    assert policy.status is Status.PAUSED
    assert policy.expires_at == NOW + CONFIG.pause_initial


@pytest.mark.parametrize("digits", [400, 5000])
def test_a_retry_after_of_thousands_of_digits_is_capped(digits: int) -> None:
    headers = {"retry-after": "9" * digits}
    policy = next_policy(None, result(429, headers=headers), NOW, CONFIG)
    assert policy.expires_at == NOW + CONFIG.retry_after_max


@pytest.mark.parametrize("digits", [400, 5000])
@pytest.mark.parametrize("name", ["max-age", "s-maxage"])
def test_a_max_age_of_hundreds_or_thousands_of_digits_is_the_longest_ttl(
    name: str, digits: int
) -> None:
    # int() of 400 digits overflows float(); more than 4,300 digits int() refuses outright
    headers = {"cache-control": f"{name}={'9' * digits}"}
    assert cache_lifetime(headers, NOW) == float("inf")
    policy = next_policy(None, result(200, BODY, headers=headers), NOW, CONFIG)
    assert policy.expires_at == NOW + CONFIG.ttl


def test_a_max_age_of_non_ascii_digits_is_no_max_age() -> None:
    assert cache_lifetime({"cache-control": "max-age=\u0663\u0663"}, NOW) is None


# -- giving up, stale copies, the 30-day rule -------------------------------------------------


@pytest.mark.parametrize("status", [401, 403, 429, 503, None])
def test_gives_up_after_pause_max_tries(status: int | None) -> None:
    config = replace(CONFIG, pause_max_tries=3)
    policy: Policy | None = None
    now = NOW
    seen = []
    for _ in range(4):
        policy = next_policy(policy, result(status), now, config)
        seen.append(policy.status)
        now = policy.expires_at
    assert seen == [Status.PAUSED, Status.PAUSED, Status.UNRESOLVED, Status.UNRESOLVED]
    assert policy is not None
    assert policy.expires_at - policy.fetched_at == config.pause_max
    assert "giving up" in policy.reason


def ok_policy(at: float = NOW) -> Policy:
    return next_policy(None, result(200, BODY), at, CONFIG)


@pytest.mark.parametrize("status", [500, 503, None])
def test_unreachable_uses_the_last_good_copy(status: int | None) -> None:
    good = ok_policy()
    stale = next_policy(good, result(status), NOW + 2000, CONFIG)
    assert stale.status is Status.OK
    assert stale.body == BODY and stale.digest == good.digest
    assert stale.stale_since == NOW
    assert stale.unreachable_since == NOW + 2000
    assert stale.failures == 1
    assert stale.expires_at == NOW + 2000 + CONFIG.pause_initial  # refetched on the back-off
    assert "last good copy" in stale.reason
    # it keeps being used, past pause_max_tries, and keeps its original date
    config = replace(CONFIG, pause_max_tries=2)
    later = stale
    for i in range(4):
        later = next_policy(later, result(status), NOW + 3000 + i, config)
        assert later.status is Status.OK
        assert later.stale_since == NOW
        assert later.unreachable_since == NOW + 2000


@pytest.mark.parametrize("status", [401, 403, 429])
def test_no_stale_copy_for_unavailable_statuses(status: int) -> None:
    policy = next_policy(ok_policy(), result(status), NOW + 2000, CONFIG)
    assert policy.status is Status.PAUSED
    assert policy.body is None
    assert policy.stale_since is None


def test_use_stale_off_pauses() -> None:
    config = replace(CONFIG, use_stale=False)
    policy = next_policy(ok_policy(), result(503), NOW + 2000, config)
    assert policy.status is Status.PAUSED
    assert policy.body is None


def test_30_days_unreachable_becomes_unavailable() -> None:
    config = replace(CONFIG, pause_max_tries=10_000)
    first = next_policy(None, result(503), NOW, config)
    assert first.unreachable_since == NOW
    day29 = next_policy(first, result(None), NOW + 29 * DAY, config)
    assert day29.status is Status.PAUSED
    assert day29.unreachable_since == NOW
    day30 = next_policy(day29, result(503), NOW + 30 * DAY, config)
    assert day30.status is Status.UNAVAILABLE
    assert "30 days" in day30.reason
    assert day30.expires_at > NOW + 30 * DAY  # it is still refetched later


def test_30_days_applies_even_after_giving_up_and_with_a_stale_copy() -> None:
    config = replace(CONFIG, pause_max_tries=2)
    policy: Policy | None = next_policy(None, result(503), NOW, config)
    policy = next_policy(policy, result(503), NOW + DAY, config)
    assert policy.status is Status.UNRESOLVED
    policy = next_policy(policy, result(503), NOW + 31 * DAY, config)
    assert policy.status is Status.UNAVAILABLE
    stale = next_policy(ok_policy(), result(503), NOW, config)
    assert stale.status is Status.OK
    assert next_policy(stale, result(503), NOW + 30 * DAY, config).status is Status.UNAVAILABLE


def test_403_for_30_days_is_not_unreachable() -> None:
    config = replace(CONFIG, pause_max_tries=10_000)
    policy = next_policy(None, result(403), NOW, config)
    policy = next_policy(policy, result(403), NOW + 31 * DAY, config)
    assert policy.status is Status.PAUSED
    assert policy.unreachable_since is None


# -- cache lifetime ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "ttl"),
    [
        ({}, 1000.0),
        ({"cache-control": "max-age=600"}, 600.0),
        ({"cache-control": "public, max-age=600, s-maxage=300"}, 300.0),
        ({"cache-control": 'max-age="300"'}, 300.0),
        ({"cache-control": "max-age=3"}, 10.0),  # never below min_ttl
        ({"cache-control": "max-age=0"}, 10.0),
        ({"cache-control": "max-age=999999"}, 1000.0),  # never above ttl
        ({"cache-control": "no-store"}, 10.0),
        ({"cache-control": "private, no-cache"}, 10.0),
        ({"cache-control": "private"}, 1000.0),
        ({"expires": http_date(NOW + 500)}, 500.0),
        ({"expires": http_date(NOW - 500)}, 10.0),
        ({"expires": "garbage"}, 10.0),
        ({"expires": http_date(NOW + 500), "cache-control": "max-age=100"}, 100.0),
    ],
)
def test_cache_headers_shorten_the_ttl(headers: dict[str, str], ttl: float) -> None:
    for status, expected in ((200, Status.OK), (404, Status.UNAVAILABLE)):
        policy = next_policy(None, result(status, BODY, headers), NOW, CONFIG)
        assert policy.status is expected
        assert policy.expires_at == NOW + ttl


def test_cache_headers_do_not_change_a_pause() -> None:
    headers = {"cache-control": "max-age=600"}
    policy = next_policy(None, result(503, headers=headers), NOW, CONFIG)
    assert policy.expires_at == NOW + CONFIG.pause_initial


def test_cache_lifetime() -> None:
    assert cache_lifetime({}, NOW) is None
    assert cache_lifetime({"cache-control": "private"}, NOW) is None
    assert cache_lifetime({"cache-control": "Max-Age=60"}, NOW) == 60.0
    assert cache_lifetime({"cache-control": "no-store, max-age=60"}, NOW) == 0.0
    assert cache_lifetime({"expires": http_date(NOW + 90)}, NOW) == 90.0
    assert cache_lifetime({"expires": http_date(NOW - 90)}, NOW) == 0.0
    assert cache_lifetime({"expires": "0"}, NOW) == 0.0


# -- the RFC-literal configuration ------------------------------------------------------------

RFC_LITERAL = replace(
    CONFIG,
    actions={**DEFAULT_ACTIONS, "401": Action.ALLOW, "403": Action.ALLOW, "5xx": Action.DISALLOW},
)


def test_rfc_literal_401_403_allow() -> None:
    for status in (401, 403):
        policy = next_policy(None, result(status), NOW, RFC_LITERAL)
        assert policy.status is Status.UNAVAILABLE
        assert policy.expires_at == NOW + CONFIG.ttl


def test_rfc_literal_5xx_is_complete_disallow_refetched_on_backoff() -> None:
    config = replace(RFC_LITERAL, pause_max_tries=2)
    policy: Policy | None = None
    now = NOW
    for wait in (5.0, 10.0, 20.0):  # never given up: a disallow is already safe
        policy = next_policy(policy, result(500), now, config)
        assert policy.status is Status.UNREACHABLE
        assert policy.expires_at == now + wait
        now = policy.expires_at


def test_rfc_literal_keeps_the_rows_it_does_not_override() -> None:
    assert next_policy(None, result(None), NOW, RFC_LITERAL).status is Status.PAUSED
    assert next_policy(None, result(429), NOW, RFC_LITERAL).status is Status.PAUSED
    # and a good copy still stands in for an unreachable origin (RFC 9309 §2.3.1.4)
    assert next_policy(ok_policy(), result(503), NOW + 1, RFC_LITERAL).status is Status.OK


def test_actions_may_be_plain_strings() -> None:
    config = replace(CONFIG, actions={"403": "allow"})  # type: ignore[dict-item]
    assert next_policy(None, result(403), NOW, config).status is Status.UNAVAILABLE
    assert next_policy(None, result(401), NOW, config).status is Status.PAUSED


# -- backoff and retry_after ------------------------------------------------------------------


def test_backoff() -> None:
    assert [CONFIG.backoff.wait(n) for n in range(7)] == [5.0, 5.0, 10.0, 20.0, 40.0, 40.0, 40.0]
    assert CONFIG.backoff.wait(10_000) == CONFIG.pause_max  # no overflow


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("120", 120.0),
        (" 120 ", 120.0),
        ("0", 0.0),
        (http_date(NOW + 300), 300.0),
        (http_date(NOW - 300), 0.0),
        ("", None),
        ("soon", None),
        ("-5", None),
        ("1.5", None),
    ],
)
def test_retry_after(value: str, seconds: float | None) -> None:
    assert retry_after({"retry-after": value}, NOW) == seconds


def test_retry_after_absent() -> None:
    assert retry_after({}, NOW) is None


def test_policy_fresh_until_expiry() -> None:
    policy = ok_policy()
    assert policy.fresh(NOW)
    assert policy.fresh(NOW + CONFIG.ttl - 0.001)
    assert not policy.fresh(NOW + CONFIG.ttl)
    paused = next_policy(None, result(503), NOW, CONFIG)
    assert paused.usable_copy() is None


def test_given_up_at_is_when_the_back_off_runs_out() -> None:
    """Defaults: a failing origin is given up 60 + 120 + 240 + 480 s after its first fetch."""
    config = PolicyConfig()
    first = next_policy(None, result(503), NOW, config)
    assert given_up_at(first, config) == NOW + 900
    second = next_policy(first, result(503), NOW + 60, config)
    assert given_up_at(second, config) == NOW + 900
    last = next_policy(None, result(200, BODY), NOW, config)
    assert given_up_at(last, config) is None  # not paused: nothing to give up

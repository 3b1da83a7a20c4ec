"""Where Google's parser is more forgiving than RFC 9309, and we follow it.

Each expectation was checked against Google's robots.cc through jwm.robotstxt
(the differential test keeps checking the general cases); the crawl-delay and
request-rate records are de-facto extensions (RFC 9309 §2.2.4 "other records").
"""

from __future__ import annotations

import math

import pytest

from scrapy_rep.robotstxt import parse
from scrapy_rep.robotstxt.selection import runs_in

TOKEN = "mybot"


def kinds(robots) -> list[tuple[int, str]]:
    return [(d.line, d.kind) for d in robots.diagnostics]


# --- typos and longer keys ------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    ["Disalow", "dissallow", "Dissalow", "diasllow", "disallaw", "Disallowed", "DISALLOWING"],
)
def test_disallow_typos_are_understood_and_reported(key: str) -> None:
    # Google robots.cc KeyIsDisallow: prefix match on "disallow" and five typos.
    robots = parse(f"User-agent: *\n{key}: /private\n")
    assert not robots.allowed(TOKEN, "/private")
    assert kinds(robots) == [(2, "typo")]


@pytest.mark.parametrize("key", ["Allowed", "allowance", "ALLOW-THIS"])
def test_longer_allow_keys_are_understood_and_reported(key: str) -> None:
    # Google robots.cc KeyIsAllow: StartsWithIgnoreCase(key, "allow").
    robots = parse(f"User-agent: *\nDisallow: /\n{key}: /ok\n")
    assert robots.allowed(TOKEN, "/ok")
    assert not robots.allowed(TOKEN, "/other")
    assert kinds(robots) == [(3, "typo")]


@pytest.mark.parametrize("key", ["useragent", "User agent", "User-Agents", "USERAGENT"])
def test_user_agent_typos_are_understood_and_reported(key: str) -> None:
    # Google robots.cc KeyIsUserAgent: "user-agent", "useragent", "user agent".
    robots = parse(f"{key}: mybot\nDisallow: /x\n")
    assert not robots.allowed(TOKEN, "/x")
    assert robots.allowed("other", "/x")
    assert kinds(robots) == [(1, "typo")]


@pytest.mark.parametrize("key", ["Site-map", "sitemaps"])
def test_sitemap_variants_are_understood_and_reported(key: str) -> None:
    # Google robots.cc KeyIsSitemap: "sitemap" or "site-map" prefixes.
    robots = parse(f"{key}: https://example.com/s.xml\n")
    assert robots.sitemaps == ("https://example.com/s.xml",)
    assert kinds(robots) == [(1, "typo")]


@pytest.mark.parametrize("key", ["Dis-allow", "Alow", "Agent", "Noindex", "Host"])
def test_other_keys_are_unknown(key: str) -> None:
    # Google robots.cc: anything else is an unknown action, ignored.
    robots = parse(f"User-agent: *\n{key}: /x\n")
    assert robots.allowed(TOKEN, "/x")
    assert kinds(robots) == [(2, "unknown-directive")]


# --- missing colon --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "blocked"),
    [
        ("Disallow /x", True),
        ("Disallow\t/x", True),
        ("Disallow   /x  ", True),
        ("disalow /x", True),
    ],
)
def test_missing_colon_with_exactly_two_words(line: str, blocked: bool) -> None:
    # Google robots.cc GetKeyAndValueFrom: whitespace stands in for the colon
    # when exactly two words remain.
    robots = parse(f"User-agent mybot\n{line}\n")
    assert robots.allowed(TOKEN, "/x") is not blocked
    assert (1, "missing-colon") in kinds(robots)
    assert (2, "missing-colon") in kinds(robots)


@pytest.mark.parametrize("line", ["Disallow /x /y", "Disallow", "User agent mybot"])
def test_missing_colon_with_other_word_counts_is_no_record(line: str) -> None:
    # Google robots.cc GetKeyAndValueFrom: one word, or three or more, is rejected.
    robots = parse(f"User-agent: *\n{line}\nDisallow: /z\n")
    assert robots.allowed(TOKEN, "/x")
    assert not robots.allowed(TOKEN, "/z")
    assert (2, "not-a-record") in kinds(robots)


def test_whitespace_other_than_space_and_tab_is_no_separator() -> None:
    # Google robots.cc: only " \t" may replace the colon ("Disallow\v/x" and
    # "Disallow<NBSP>/x" are one word; checked with jwm.robotstxt).
    robots = parse("User-agent: *\nDisallow\x0b/x\nDisallow\u00a0/y\n")
    assert robots.allowed(TOKEN, "/x")
    assert robots.allowed(TOKEN, "/y")
    assert kinds(robots) == [(2, "not-a-record"), (3, "not-a-record")]


# --- patterns without a leading slash -------------------------------------------------


@pytest.mark.parametrize("pattern", ["private", "private/*", "a$", "?q", "%2Fprivate"])
def test_pattern_without_slash_matches_nothing(pattern: str) -> None:
    # Google robots.cc: patterns are anchored at the path's leading '/', so these
    # never match; RFC 9309 §2.2 path-pattern starts with "/". Reported.
    robots = parse(f"User-agent: *\nDisallow: {pattern}\n")
    for path in ("/", "/private", "/private/x", "/a", "/?q", "private"):
        assert robots.allowed(TOKEN, path)
    assert kinds(robots) == [(2, "pattern-without-slash")]


def test_pattern_starting_with_star_is_fine() -> None:
    # RFC 9309 §2.2.3 / Google robots.cc: "*" may start a pattern.
    robots = parse("User-agent: *\nDisallow: *.pdf$\n")
    assert not robots.allowed(TOKEN, "/docs/a.pdf")
    assert robots.diagnostics == ()


# --- the index.html quirk -------------------------------------------------------------


@pytest.mark.parametrize(
    ("allow", "path", "allowed"),
    [
        ("/d/index.html", "/d/", True),
        ("/d/index.html", "/d/index.html", True),
        ("/d/index.html", "/d", False),
        ("/d/index.html", "/d/x", False),
        ("/d/index.html", "/d/?q", False),
        ("/d/index.htm", "/d/", True),
        ("/d/index.html$", "/d/", True),
        ("/d/index.php", "/d/", False),
        ("/d/INDEX.html", "/d/", False),
        ("/index.html", "/", True),
        ("/*/index.html", "/anything/", True),
        ("/*/index.html", "/anything/x", False),
        ("/d/%69ndex.html", "/d/", True),  # %69 is 'i': the same pattern once normalised
    ],
)
def test_allow_index_html_also_allows_its_directory(allow: str, path: str, allowed: bool) -> None:
    # Google robots.cc HandleAllow: "Allow: /d/index.htm*" also allows "/d/$"
    # (wildcards kept, as Google builds the pattern "<dir>$"). Checked with jwm.robotstxt.
    robots = parse(f"User-agent: *\nDisallow: /\nAllow: {allow}\n")
    verdict = robots.decide(TOKEN, path)
    assert verdict.allowed is allowed
    if allowed:
        assert verdict.rule is not None and verdict.rule.line == 3


@pytest.mark.parametrize(
    ("disallow", "allowed"),
    [("/d/", True), ("/d/$", True), ("/d/*", True), ("/d/*$", False)],
)
def test_index_html_directory_weight(disallow: str, allowed: bool) -> None:
    # Google robots.cc: the directory rule "/d/$" weighs len("/d/$") = 4, so it
    # beats "/d/" (3), ties with "/d/$" and "/d/*" (allow wins), loses to "/d/*$" (5).
    robots = parse(f"User-agent: *\nAllow: /d/index.html\nDisallow: {disallow}\n")
    assert robots.allowed(TOKEN, "/d/") is allowed


def test_disallow_index_html_has_no_quirk() -> None:
    # Google robots.cc: only Allow gets the directory treatment.
    robots = parse("User-agent: *\nDisallow: /d/index.html\n")
    assert robots.allowed(TOKEN, "/d/")
    assert not robots.allowed(TOKEN, "/d/index.html")


# --- '* anything' is global -----------------------------------------------------------


def test_star_with_trailing_words_is_the_global_group() -> None:
    # Google robots.cc HandleUserAgent: "*" followed by whitespace is global.
    robots = parse("User-agent: * (all robots)\nDisallow: /x\n")
    assert robots.groups[0].agents == ["*"]
    assert not robots.allowed(TOKEN, "/x")
    assert robots.diagnostics == ()


# --- crawl-delay and request-rate -----------------------------------------------------


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("10", 10.0), ("1.5", 1.5), ("0", 0.0), (" 3 ", 3.0), ("1e1", 10.0), ("007", 7.0)],
)
def test_crawl_delay_values(value: str, seconds: float) -> None:
    # De-facto Crawl-delay (RFC 9309 §2.2.4): seconds between requests.
    robots = parse(f"User-agent: mybot\nCrawl-delay: {value}\n")
    assert robots.crawl_delay(TOKEN) == seconds
    assert robots.diagnostics == ()


@pytest.mark.parametrize("value", ["", "soon", "-1", "inf", "nan", "1,5", "5s"])
def test_bad_crawl_delay_is_reported_and_ignored(value: str) -> None:
    robots = parse(f"User-agent: mybot\nCrawl-delay: {value}\n")
    assert robots.crawl_delay(TOKEN) is None
    assert kinds(robots) == [(2, "invalid-crawl-delay")]


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("1/10", 10.0),
        ("1/10s", 10.0),
        ("2/5", 2.5),
        ("3/1m", 20.0),
        ("1/2h", 7200.0),
        ("1/1d", 86400.0),
        ("1 / 30 s", 30.0),
        ("4/1.5M", 22.5),
        # A time window after the rate (hhmm-hhmm, UTC) is accepted; the rate
        # then applies all day.
        ("1/10s 1820-1940", 10.0),
        ("1/10s 18:20-19:40", 10.0),
        ("2/1m 0000 - 0600", 30.0),
        ("1/5\t0800-1700", 5.0),
    ],
)
def test_request_rate_values(value: str, seconds: float) -> None:
    # De-facto Request-rate "n/T[smhd]" (RFC 9309 §2.2.4): n requests per T.
    robots = parse(f"User-agent: mybot\nRequest-rate: {value}\n")
    delay = robots.crawl_delay(TOKEN)
    assert delay is not None and math.isclose(delay, seconds)
    assert robots.diagnostics == ()


@pytest.mark.parametrize(
    "value",
    ["0/5", "fast", "1/", "/5", "1/5x", "-1/5", "1/10s 1820", "1/10s 2520-2600", "1/10s soon"],
)
def test_bad_request_rate_is_reported_and_ignored(value: str) -> None:
    robots = parse(f"User-agent: mybot\nRequest-rate: {value}\n")
    assert robots.crawl_delay(TOKEN) is None
    assert kinds(robots) == [(2, "invalid-request-rate")]


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("9" * 5000 + "/1s", 0.0),  # int() refuses more than 4,300 digits
        ("1/" + "0" * 5000 + "1s", 1.0),
        ("1/" + "9" * 400 + "s", None),  # no finite interval: unreadable
        ("9" * 400 + "/" + "9" * 400 + "s", None),
        ("0" * 5000 + "/5", None),
    ],
)
def test_request_rate_with_thousands_of_digits_is_a_number_or_unreadable(
    value: str, seconds: float | None
) -> None:
    robots = parse(f"User-agent: mybot\nRequest-rate: {value}\n")
    assert robots.crawl_delay(TOKEN) == seconds
    assert kinds(robots) == ([] if seconds is not None else [(2, "invalid-request-rate")])


@pytest.mark.parametrize(
    ("value", "seconds"), [("1" + "0" * 300, 1e300), ("9" * 5000, None), ("1" + "0" * 400, None)]
)
def test_crawl_delay_with_hundreds_of_digits_is_a_number_or_unreadable(
    value: str, seconds: float | None
) -> None:
    robots = parse(f"User-agent: mybot\nCrawl-delay: {value}\n")
    assert robots.crawl_delay(TOKEN) == seconds
    assert kinds(robots) == ([] if seconds is not None else [(2, "invalid-crawl-delay")])


def test_crawl_delay_belongs_to_its_group() -> None:
    # RFC 9309 §2.2.4 + group semantics of §2.2.1.
    robots = parse(
        "User-agent: mybot\nCrawl-delay: 5\nDisallow: /a\n"
        "User-agent: other\nCrawl-delay: 9\nDisallow: /b\n"
        "User-agent: *\nCrawl-delay: 1\n"
    )
    assert robots.crawl_delay(TOKEN) == 5.0
    assert robots.crawl_delay("other") == 9.0
    assert robots.crawl_delay("unknown") == 1.0
    assert [run.crawl_delay for g in robots.groups for run in g.runs] == [5.0, 9.0, 1.0]


def test_crawl_delay_is_the_max_over_merged_groups_and_both_records() -> None:
    # RFC 9309 §2.2.1 merging; the politest reading of several delays wins.
    robots = parse(
        "User-agent: mybot\nCrawl-delay: 2\nDisallow: /a\n"
        "User-agent: other\nCrawl-delay: 60\nDisallow: /\n"
        "User-agent: mybot\nRequest-rate: 1/7\nDisallow: /b\n"
        "User-agent: mybot\nCrawl-delay: 4\n"
    )
    assert robots.crawl_delay(TOKEN) == 7.0
    runs = runs_in(robots.groups_for(TOKEN), TOKEN)
    assert [(run.crawl_delay, run.request_interval) for run in runs] == [
        (2.0, None),
        (None, 7.0),
        (4.0, None),
    ]


def test_crawl_delay_goes_to_the_user_agent_lines_right_above_it() -> None:
    # Every other parser (crawler-commons, Protego, reppy, CPython) gives each
    # agent the value written under it; the rule below is still shared by both
    # (Google's grouping: only a rule ends a run of user-agent lines).
    robots = parse(
        "User-agent: *\nCrawl-delay: 30\nUser-agent: Googlebot\nCrawl-delay: 1\nDisallow: /x\n"
    )
    assert robots.crawl_delay(TOKEN) == 30.0
    assert robots.crawl_delay("googlebot") == 1.0
    assert not robots.allowed(TOKEN, "/x") and not robots.allowed("googlebot", "/x")


def test_each_of_two_agents_gets_its_own_delay() -> None:
    robots = parse("User-agent: one\nCrawl-delay: 1\nUser-agent: two\nCrawl-delay: 2\n")
    assert robots.crawl_delay("one") == 1.0
    assert robots.crawl_delay("two") == 2.0
    assert robots.crawl_delay(TOKEN) is None


def test_request_rate_goes_to_the_user_agent_lines_right_above_it() -> None:
    robots = parse(
        "User-agent: one\nRequest-rate: 1/10\nUser-agent: two\nRequest-rate: 1/20\nDisallow: /x\n"
    )
    assert robots.crawl_delay("one") == 10.0
    assert robots.crawl_delay("two") == 20.0
    assert not robots.allowed("one", "/x")


def test_a_delay_for_one_crawler_is_not_given_to_star() -> None:
    # A real file from texting_robots' suite: '*' was never asked to wait 60 s.
    robots = parse(
        "User-agent: SemrushBot\nCrawl-delay: 60\nUser-agent: SemrushBot-BA\nUser-agent: *\n"
    )
    assert robots.crawl_delay("semrushbot") == 60.0
    assert robots.crawl_delay("SemrushBot-BA") is None
    assert robots.crawl_delay(TOKEN) is None


def test_a_delay_after_the_rules_belongs_to_the_last_run() -> None:
    robots = parse(
        "User-agent: a\nUser-agent: b\nDisallow: /x\nCrawl-delay: 5\n"
        "User-agent: c\nCrawl-delay: 1\nUser-agent: d\nDisallow: /y\nCrawl-delay: 2\n"
    )
    assert [robots.crawl_delay(token) for token in "abcd"] == [5.0, 5.0, 1.0, 2.0]


@pytest.mark.parametrize(
    "between",
    ["# a comment", "", "Sitemap: https://example.com/s.xml", "Unknown: x", "License: https://e/l"],
)
def test_lines_that_belong_to_no_group_do_not_split_a_run(between: str) -> None:
    robots = parse(f"User-agent: one\n{between}\nUser-agent: two\nCrawl-delay: 2\n")
    assert robots.crawl_delay("one") == 2.0 and robots.crawl_delay("two") == 2.0


def test_no_delay_or_no_group_gives_none() -> None:
    robots = parse("User-agent: mybot\nDisallow: /a\nUser-agent: other\nCrawl-delay: 3\n")
    assert robots.crawl_delay(TOKEN) is None
    assert parse("").crawl_delay(TOKEN) is None


def test_crawl_delay_outside_a_group_is_ignored() -> None:
    # RFC 9309 §2.2 grammar: group records need a group.
    robots = parse("Crawl-delay: 5\nUser-agent: *\nDisallow: /a\n")
    assert robots.crawl_delay(TOKEN) is None
    assert kinds(robots) == [(1, "outside-group")]


# --- NUL ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "url", "allowed"),
    [
        # Google robots.cc works on C strings: a line ends at NUL (checked with
        # jwm.robotstxt); the RFC says nothing, so Google's reading is followed.
        ("User-agent: *\nDisallow: /a\0bc\n", "/a", False),
        ("User-agent: *\nDisallow: /a\0bc\n", "/ax", False),
        ("User-agent: *\nDisallow: /a\0bc\n", "/b", True),
        ("User-agent: *\nDisallow\0: /a\n", "/a", True),  # no colon left: no record
        ("User-agent: *\0x\nDisallow: /a\n", "/a", False),
        ("User-agent: *\nDisallow: /a\0\nDisallow: /b\n", "/b", False),
    ],
)
def test_a_nul_ends_the_line(body: str, url: str, allowed: bool) -> None:
    robots = parse(body)
    assert robots.allowed(TOKEN, url) is allowed
    assert any(d.kind == "nul-octet" for d in robots.diagnostics)
    assert parse(body.encode()).allowed(TOKEN, url) is allowed


def test_nul_cut_value_is_the_pattern() -> None:
    robots = parse(b"User-agent: *\nDisallow: /a\x00bc # x\n")
    (rule,) = robots.groups[0].rules
    assert rule.pattern == "/a"
    assert kinds(robots) == [(2, "nul-octet")]


# --- sitemaps -------------------------------------------------------------------------


def test_sitemaps_are_file_wide_and_in_order() -> None:
    # RFC 9309 §2.2.4 / sitemaps.org: Sitemap lines are independent of groups.
    robots = parse(
        "Sitemap: https://example.com/1.xml\n"
        "User-agent: other\n"
        "Sitemap: https://example.com/2.xml\n"
        "Disallow: /\n"
        "User-agent: *\n"
        "Disallow: /x\n"
        "sitemap:https://example.com/3.xml # after\n"
        "Sitemap: relative.xml\n"
    )
    assert robots.sitemaps == (
        "https://example.com/1.xml",
        "https://example.com/2.xml",
        "https://example.com/3.xml",
    )
    assert kinds(robots) == [(8, "invalid-sitemap")]

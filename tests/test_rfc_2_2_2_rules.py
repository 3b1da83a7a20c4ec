"""RFC 9309 §2.2.2: allow/disallow rules, longest match, URL handling, verdicts."""

from __future__ import annotations

import pytest
from scrapy import Request
from w3lib.url import safe_url_string

from scrapy_rep.robotstxt import parse

TOKEN = "mybot"


def robots_with(*rules: str):
    return parse("User-agent: *\n" + "".join(f"{rule}\n" for rule in rules))


# --- longest match --------------------------------------------------------------------


@pytest.mark.parametrize("order", ["disallow-first", "allow-first"])
def test_longest_match_wins_regardless_of_order(order: str) -> None:
    # RFC 9309 §2.2.2: "the most specific match found MUST be used. The most
    # specific match is the match that has the most octets." (and §5.2)
    rules = ["Disallow: /a", "Allow: /a/b"]
    robots = robots_with(*(rules if order == "disallow-first" else rules[::-1]))
    assert robots.allowed(TOKEN, "/a/b")
    assert robots.allowed(TOKEN, "/a/b/c")
    assert not robots.allowed(TOKEN, "/a/c")
    assert not robots.allowed(TOKEN, "/a")
    assert robots.allowed(TOKEN, "/b")


def test_longer_disallow_beats_shorter_allow() -> None:
    # RFC 9309 §2.2.2 / §5.2 longest-match example.
    robots = robots_with("Allow: /shop", "Disallow: /shop/cart", "Allow: /shop/cart/view")
    assert robots.allowed(TOKEN, "/shop/item")
    assert not robots.allowed(TOKEN, "/shop/cart/pay")
    assert robots.allowed(TOKEN, "/shop/cart/view/1")


def test_weight_counts_wildcards() -> None:
    # Google robots.cc: a rule's priority is the length of its pattern, '*'
    # and '$' included (checked with jwm.robotstxt: "/*a" beats "/a" on "/a").
    robots = robots_with("Allow: /a", "Disallow: /*a")
    assert not robots.allowed(TOKEN, "/a")
    robots = robots_with("Disallow: /a", "Allow: /a*")
    assert robots.allowed(TOKEN, "/a")


@pytest.mark.parametrize(
    ("disallow", "allow", "path"),
    [
        ("/a", "/a", "/a"),
        ("/a*", "/a$", "/a"),
        ("/*", "/a", "/a"),
        ("*", "/", "/x"),
    ],
)
def test_equal_weight_allow_wins(disallow: str, allow: str, path: str) -> None:
    # RFC 9309 §2.2.2: "If an allow rule and a disallow rule are equivalent,
    # then the allow rule SHOULD be used."
    rules = (f"Disallow: {disallow}", f"Allow: {allow}")
    for ordered in (rules, rules[::-1]):
        verdict = robots_with(*ordered).decide(TOKEN, path)
        assert verdict.allowed
        assert verdict.rule is not None and verdict.rule.allow


# --- empty and non-matching rules -----------------------------------------------------


def test_empty_disallow_matches_nothing() -> None:
    # RFC 9309 §2.2.2 grammar: empty-pattern; an empty Disallow disallows nothing.
    robots = robots_with("Disallow:")
    verdict = robots.decide(TOKEN, "/anything")
    assert verdict.allowed
    assert verdict.rule is None
    assert verdict.reason == "no-matching-rule"


def test_empty_disallow_does_not_cancel_other_rules() -> None:
    # RFC 9309 §2.2.2: rules are combined; the empty one just never matches.
    robots = robots_with("Disallow:", "Disallow: /x")
    assert not robots.allowed(TOKEN, "/x")
    assert robots.allowed(TOKEN, "/y")


def test_empty_allow_matches_nothing() -> None:
    # RFC 9309 §2.2.2: an empty Allow allows nothing extra.
    robots = robots_with("Allow:", "Disallow: /")
    assert not robots.allowed(TOKEN, "/x")


def test_no_matching_rule_means_allowed() -> None:
    # RFC 9309 §2.2.2: "If no match is found ... the URI is allowed".
    robots = robots_with("Disallow: /private")
    verdict = robots.decide(TOKEN, "/public")
    assert verdict.allowed and verdict.rule is None
    assert verdict.reason == "no-matching-rule"


# --- /robots.txt ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    ["/robots.txt", "https://example.com/robots.txt", "http://example.com:8080/robots.txt#x"],
)
@pytest.mark.parametrize("rule", ["Disallow: /", "Disallow: /robots.txt", "Disallow: /*.txt$"])
def test_robots_txt_is_always_allowed(url: str, rule: str) -> None:
    # RFC 9309 §2.2.2: "The /robots.txt URI is implicitly allowed."
    robots = robots_with(rule)
    verdict = robots.decide(TOKEN, url)
    assert verdict.allowed
    assert verdict.reason == "robots-txt"
    assert verdict.rule is None
    assert robots.allowed(TOKEN, url)


@pytest.mark.parametrize(
    "url", ["/robots.txt?x=1", "/ROBOTS.TXT", "/dir/robots.txt", "/robots.txt/"]
)
def test_only_the_exact_robots_txt_path_is_special(url: str) -> None:
    # RFC 9309 §2.2.2: only /robots.txt; paths are case-sensitive (§2.2.2).
    robots = robots_with("Disallow: /")
    assert not robots.allowed(TOKEN, url)


# --- percent-encoding -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        # RFC 9309 §2.2.2 table: non-ASCII is compared UTF-8 percent-encoded.
        ("/foo/bar/ツ", "/foo/bar/%E3%83%84", True),
        ("/foo/bar/%E3%83%84", "/foo/bar/ツ", True),
        ("/foo/bar/%E3%83%84", "/foo/bar/%E3%83%84", True),
        # RFC 9309 §2.2.2 table: "/foo/bar/%62%61%7A" matches "/foo/bar/baz".
        ("/foo/bar/%62%61%7A", "/foo/bar/baz", True),
        ("/foo/bar/baz", "/foo/bar/%62%61%7A", True),
        # RFC 3986 §2.3 / §6.2.2.2: %7E is '~' (unreserved), both directions.
        ("/~joe", "/%7Ejoe", True),
        ("/%7ejoe", "/~joe", True),
        # RFC 3986 §6.2.2.1: hex digits are case-insensitive.
        ("/caf%c3%a9", "/caf%C3%A9", True),
        ("/caf%C3%A9", "/caf%c3%a9", True),
        ("/café", "/caf%c3%a9", True),
        # RFC 3986 §2.2: an encoded reserved character is not the character.
        ("/a%2Fb", "/a/b", False),
        ("/a/b", "/a%2Fb", False),
        ("/a%2fb", "/a%2Fb", True),
        ("/a%3Fb", "/a?b", False),
        # A '%' that starts no escape is a literal '%' (%25), both sides.
        ("/100%", "/100%25", True),
        ("/100%25", "/100%", True),
        ("/%zz", "/%25zz", True),
        # Space and controls are compared encoded (RFC 3986 §2.1).
        ("/a b", "/a%20b", True),
        ("/a%20b", "/a b", True),
    ],
)
def test_percent_encoding_is_normalised_on_both_sides(
    pattern: str, path: str, matches: bool
) -> None:
    robots = robots_with(f"Disallow: {pattern}")
    assert robots.allowed(TOKEN, path) is not matches


#: Rules with characters RFC 3986 does not allow raw in a path or query, and a
#: link that they are meant to match, as written in a page.
RAW_CHARACTER_RULES = [
    ("/a|b", "https://example.com/a|b/c"),
    ("/collections*?f=[0]=", "https://example.com/collections/shoes?f=[0]=red"),
    ("/a<b>", "https://example.com/a<b>"),
    ('/say"hi"', 'https://example.com/say"hi"'),
    ("/t/{id}", "https://example.com/t/{id}/x"),
    ("/a^b", "https://example.com/a^b"),
    ("/a`b", "https://example.com/a`b"),
    ("/a[1]", "https://example.com/a[1]"),
    ("/s?q=a\\b", "https://example.com/s?q=a\\b"),  # '\\' in a path becomes '/'
    ("/a b", "https://example.com/a b"),
    ("/café/ü", "https://example.com/café/ü"),
    ("/s?q=é x", "https://example.com/s?q=é x"),
]


@pytest.mark.parametrize(("pattern", "link"), RAW_CHARACTER_RULES)
def test_raw_characters_match_the_url_scrapy_sends(pattern: str, link: str) -> None:
    # RFC 3986 §2.1, §3.3-3.4: characters outside the allowed
    # set are percent-encoded in the request Scrapy sends (w3lib's
    # safe_url_string), so the pattern is compared in that form too.
    sent = Request(link).url
    assert sent == safe_url_string(link)
    assert sent != link  # Scrapy did encode something
    robots = robots_with(f"Disallow: {pattern}")
    assert not robots.allowed(TOKEN, sent), sent
    assert not robots.allowed(TOKEN, link)  # the raw spelling is the same URL
    assert robots.decide(TOKEN, sent).rule is not None


@pytest.mark.parametrize(
    ("pattern", "path"),
    [("/a%7cb", "/a|b"), ("/a%7Cb", "/a|b"), ("/a|b", "/a%7cb"), ("/%5B0%5D", "/[0]")],
)
def test_escaped_and_raw_disallowed_characters_are_one(pattern: str, path: str) -> None:
    # RFC 3986 §6.2.2.1-2: one canonical form, whatever the spelling on either side.
    assert not robots_with(f"Disallow: {pattern}").allowed(TOKEN, path)


@pytest.mark.parametrize("escaped", [False, True])
def test_a_raw_delete_character_is_its_escape(escaped: bool) -> None:
    # RFC 3986 §2.1: DEL (0x7F) is not allowed raw, so "/a\x7f" is "/a%7F", which
    # "/a" is a prefix of (with or without another rule that has an escape).
    robots = robots_with("Disallow: /a", *(["Allow: /b%20"] if escaped else []))
    for url in ("https://example.com/a\x7f", "https://example.com/a\x7fb", "/a\x7f"):
        assert not robots.allowed(TOKEN, url)
        assert not robots.decide(TOKEN, url).allowed


def test_weight_counts_the_encoded_form_of_raw_characters() -> None:
    # RFC 9309 §2.2.2 "most octets": "/a|" is compared as "/a%7C" (5 octets);
    # both spellings are one pattern, so allow wins the tie, and a 3-octet
    # "/a*" loses to it.
    robots = robots_with("Disallow: /a|", "Allow: /a%7c")
    assert robots.allowed(TOKEN, Request("https://example.com/a|").url)
    robots = robots_with("Disallow: /a|", "Allow: /a*")  # 5 octets beat 3
    assert not robots.allowed(TOKEN, "https://example.com/a%7C")


def test_reserved_characters_in_the_query_are_compared_as_written() -> None:
    # Deliberate reading of RFC 9309 §2.2.2 (RFC 3986 §2.2): reserved characters
    # keep their meaning, so "://" and "%3A%2F%2F" are different. (The RFC's own
    # table shows the query value encoded; Google robots.cc does not match
    # them either -- checked with jwm.robotstxt.)
    robots = robots_with("Disallow: /foo/bar?baz=https://foo.bar")
    assert not robots.allowed(TOKEN, "/foo/bar?baz=https://foo.bar")
    assert robots.allowed(TOKEN, "/foo/bar?baz=https%3A%2F%2Ffoo.bar")


# --- case, query, fragment, empty path ------------------------------------------------


def test_paths_are_case_sensitive() -> None:
    # RFC 9309 §2.2.2: "The matching of paths ... is case-sensitive" (RFC 3986 §6.2.2.1).
    robots = robots_with("Disallow: /Private")
    assert not robots.allowed(TOKEN, "/Private")
    assert robots.allowed(TOKEN, "/private")
    assert robots.allowed(TOKEN, "/PRIVATE")


def test_query_takes_part_in_matching() -> None:
    # RFC 9309 §2.2.2: rules match the path including the query
    # ("/foo/bar?baz=quz" row of the table); Google robots.cc too.
    robots = robots_with("Disallow: /search?q=", "Disallow: /*?")
    assert not robots.allowed(TOKEN, "/search?q=x")
    assert not robots.allowed(TOKEN, "/page?x")
    assert robots.allowed(TOKEN, "/page")
    assert robots.allowed(TOKEN, "https://example.com/search")


def test_fragment_takes_no_part() -> None:
    # RFC 3986 §3.5: the fragment is not sent to the server; Google
    # robots.cc GetPathParamsQuery drops it.
    # ('#' would start a comment in robots.txt; %23 is a literal '#'.)
    robots = robots_with("Disallow: /a$", "Disallow: /*%23")
    assert not robots.allowed(TOKEN, "https://example.com/a#section")
    assert robots.allowed(TOKEN, "https://example.com/b#section")
    assert not robots.allowed(TOKEN, "https://example.com/b%23section")


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://example.com", True),
        ("https://example.com/", True),
        ("https://example.com#top", True),
        ("https://example.com?q=1", False),
        ("https://example.com/x", False),
        ("", True),
    ],
)
def test_empty_path_is_slash(url: str, allowed: bool) -> None:
    # RFC 3986 §6.2.3: an empty path is equivalent to "/"; Google robots.cc
    # GetPathParamsQuery returns "/" (checked with jwm.robotstxt).
    robots = robots_with("Allow: /$", "Disallow: /")
    assert robots.allowed(TOKEN, url) is allowed


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/private/x",
        "http://user:pw@example.com:8080/private/x",
        "HTTPS://EXAMPLE.COM/private/x",
        "/private/x",
        "https://example.com/private/x?y#z",
    ],
)
def test_url_forms(url: str) -> None:
    # RFC 9309 §2.2.2: the rule applies to the path of the URI (RFC 3986 §3.3).
    assert not robots_with("Disallow: /private").allowed(TOKEN, url)


def test_host_is_not_part_of_the_path() -> None:
    # RFC 3986 §3.2: the authority ends at the first '/', '?' or '#'.
    robots = robots_with("Disallow: /example")
    assert robots.allowed(TOKEN, "https://example.com/")
    assert robots.allowed(TOKEN, "https://example.com?x")


# --- Verdict --------------------------------------------------------------------------


def test_verdict_names_rule_line_reason_and_groups() -> None:
    # scrapy_rep API: every answer points at its rule (RFC 9309 §2.2.2 decides).
    robots = parse("User-agent: *\nDisallow: /private\nAllow: /private/ok\n")
    verdict = robots.decide(TOKEN, "https://example.com/private/x")
    assert not verdict.allowed
    assert verdict.reason == "disallow-rule"
    assert verdict.rule is not None
    assert (verdict.rule.allow, verdict.rule.pattern, verdict.rule.line) == (False, "/private", 2)
    assert verdict.groups == robots.groups
    assert str(verdict) == (
        "disallowed by Disallow: /private (line 2) in group user-agent: * (line 1)"
    )

    verdict = robots.decide(TOKEN, "/private/ok")
    assert verdict.allowed and verdict.reason == "allow-rule"
    assert verdict.rule is not None and verdict.rule.line == 3
    assert str(verdict) == "allowed by Allow: /private/ok (line 3) in group user-agent: * (line 1)"


def test_verdict_shows_the_rule_as_written_after_a_rule_that_matches_nothing() -> None:
    # scrapy_rep API: a rule that can match nothing (no leading '/') takes no
    # number in the compiled set, so its text is not shown for the rule after it.
    robots = parse("User-agent: *\nDisallow: x%7ey\nDisallow: /a\nAllow: /%7euser/ok$\n")
    verdict = robots.decide(TOKEN, "/a/b")
    assert verdict.rule is not None
    assert (verdict.rule.pattern, verdict.rule.line) == ("/a", 3)
    verdict = robots.decide(TOKEN, "/~user/ok")
    assert verdict.rule is not None
    assert (verdict.allowed, verdict.rule.pattern, verdict.rule.line) == (True, "/%7euser/ok$", 4)


def test_verdict_strings_without_a_rule() -> None:
    # scrapy_rep API: the reason words and their explanations.
    robots = parse("User-agent: other\nDisallow: /\nUser-agent: mybot\nDisallow: /x\n")
    assert str(robots.decide(TOKEN, "/y")) == "allowed: no rule matches"
    assert str(robots.decide("nobody", "/y")) == "allowed: no group applies"
    assert str(robots.decide(TOKEN, "/robots.txt")) == "allowed: /robots.txt is always allowed"


def test_verdict_lists_all_merged_groups() -> None:
    # RFC 9309 §2.2.1 merging, shown in the explanation.
    robots = parse("User-agent: mybot\nDisallow: /a\nUser-agent: x\nAllow: /\nUser-agent: mybot\n")
    verdict = robots.decide(TOKEN, "/a")
    assert [g.line for g in verdict.groups] == [1, 5]
    assert verdict.group_label == "user-agent: mybot (line 1); user-agent: mybot (line 5)"
    assert str(verdict).endswith("in group user-agent: mybot (line 1); user-agent: mybot (line 5)")


@pytest.mark.parametrize(
    "url",
    ["/", "/a", "/a/b", "/a/b/c", "/a?x", "/b", "/robots.txt", "/%7E", "/~", "https://h/a/b#f"],
)
def test_allowed_agrees_with_decide(url: str) -> None:
    # scrapy_rep API: allowed() is the fast path of decide().
    robots = parse("User-agent: *\nDisallow: /a\nAllow: /a/b\nDisallow: /*?\nDisallow: /~\n")
    assert robots.allowed(TOKEN, url) == robots.decide(TOKEN, url).allowed


def test_answers_are_per_token_and_cached_consistently() -> None:
    # RFC 9309 §2.2.1: each product token gets its own groups.
    robots = parse("User-agent: a\nDisallow: /x\nUser-agent: b\nAllow: /\n")
    for _ in range(2):
        assert not robots.allowed("a", "/x")
        assert robots.allowed("b", "/x")
        assert not robots.allowed("A", "/x")


def test_lone_surrogates_never_raise() -> None:
    # scrapy_rep API: parse() and decide() never raise on any input text.
    robots = parse("User-agent: *\nDisallow: /\ud800\n")
    assert robots.allowed(TOKEN, "/x")
    assert isinstance(robots.allowed(TOKEN, "/\ud800"), bool)
    assert robots.decide(TOKEN, "/a\udcff").allowed


@pytest.mark.parametrize("length", [10, 481, 482, 483, 5000])  # 512 characters at 482
def test_long_urls_are_read_like_short_ones(length: int) -> None:
    # scrapy_rep API: short and long URLs take different code paths (one regex
    # vs str.find); the answer must not depend on it.
    robots = robots_with("Disallow: /a/*x$", "Allow: /a/b*?q")
    url = "https://example.com/a/" + "b" * length + "x#frag?q"
    assert not robots.allowed(TOKEN, url)
    assert robots.decide(TOKEN, url).rule is not None
    assert robots.allowed(TOKEN, url.replace("x#", "y#"))
    assert robots.allowed(TOKEN, url.replace("x#", "x?q#"))
    assert robots.allowed(TOKEN, "/a/" + "b" * length + "y")

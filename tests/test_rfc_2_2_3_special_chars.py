"""RFC 9309 §2.2.3: the special characters '*' and '$' (and '#')."""

from __future__ import annotations

import pytest

from scrapy_rep.robotstxt import parse
from scrapy_rep.robotstxt.matcher import RuleSet
from scrapy_rep.robotstxt.parser import Rule

TOKEN = "mybot"


def matches(pattern: str, path: str) -> bool:
    """Whether a lone Disallow rule with ``pattern`` blocks ``path``."""
    return not parse(f"User-agent: *\nDisallow: {pattern}\n").allowed(TOKEN, path)


# --- '*' ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        # RFC 9309 §2.2.3: '*' "Designates 0 or more instances of any character."
        ("/a*b", "/ab", True),
        ("/a*b", "/axxb", True),
        ("/a*b", "/a/x/y/b/z", True),
        ("/a*b", "/a?q=b", True),
        ("/a*b", "/ba", False),
        ("/a*b", "/a", False),
        ("/*.php", "/index.php", True),
        ("/*.php", "/dir/x.php?y=1", True),
        ("/*.php", "/x.ph", False),
        # A pattern may start with '*' (RFC 9309 §2.2.3 example "*.gif$" style).
        ("*.gif", "/images/a.gif", True),
        ("*", "/", True),
        ("*", "/anything?at=all", True),
        # Multiple stars.
        ("/*a*b*c", "/xaybzc", True),
        ("/*a*b*c", "/a/b/c", True),
        ("/*a*b*c", "/cba", False),
        ("/*a*b*c", "/abab", False),
        ("/**", "/", True),
        ("/a**b", "/ab", True),
    ],
)
def test_star_matches_any_sequence(pattern: str, path: str, expected: bool) -> None:
    assert matches(pattern, path) is expected


@pytest.mark.parametrize("path", ["/a", "/ab", "/a/b", "/a?x", "/b", "/"])
def test_trailing_star_is_the_same_as_none(path: str) -> None:
    # RFC 9309 §2.2.3 / Google robots.cc: rules are prefix matches, so a
    # trailing '*' adds nothing to what matches.
    assert matches("/a*", path) == matches("/a", path)


def test_trailing_star_still_counts_for_weight() -> None:
    # Google robots.cc: priority = pattern length, '*' included (checked with
    # jwm.robotstxt); so "Allow: /a*" (3) beats "Disallow: /a" (2).
    robots = parse("User-agent: *\nDisallow: /a\nAllow: /a*\n")
    assert robots.allowed(TOKEN, "/a/x")


@pytest.mark.parametrize(
    ("pattern", "url", "expected"),
    [
        # RFC 9309 §2.2.3 Figure 6: "If crawlers match special characters
        # verbatim in the URI, crawlers SHOULD use "%" encoding."
        ("/path/file-with-a-%2A.html", "https://www.example.com/path/file-with-a-*.html", True),
        ("/path/foo-%24", "https://www.example.com/path/foo-$", True),
        # Hex digits in any case (RFC 3986 §6.2.2.1), either spelling in the URL.
        ("/path/file-with-a-%2a.html", "https://www.example.com/path/file-with-a-*.html", True),
        ("/a%2Ab", "/a%2Ab", True),
        ("/a%2Ab", "/a%2ab", True),
        ("/a%24", "/a%24x", True),
        # A literal: neither a wildcard nor an anchor.
        ("/a%2Ab", "/axb", False),
        ("/a%2Ab", "/ab", False),
        ("/foo-%24", "/foo-", False),
        ("/foo-%24", "/foo-$x", True),
        # Next to the special characters themselves.
        ("/*%2A$", "/x/y*", True),
        ("/*%2A$", "/x/y*z", False),
        ("/*%2A$", "/x/y", False),
        ("/a%2A*b", "/a*xb", True),
        ("/a%2A*b", "/axxb", False),
        ("/a%24$", "/a$", True),
        ("/a%24$", "/a$b", False),
        ("/a%24%24$", "/a$$", True),
        # A raw '$' inside a pattern is a literal too (Google); '%24' matches it.
        ("/a$b", "/a%24b", True),
    ],
)
def test_encoded_star_and_dollar_match_the_literal_characters(
    pattern: str, url: str, expected: bool
) -> None:
    assert matches(pattern, url) is expected


def test_encoded_special_characters_weigh_as_written() -> None:
    # RFC 9309 §2.2.2 "most octets" of the pattern: "%2A" is three of them, so
    # "Disallow: /a%2A" (5) beats "Allow: /a*" (3) on "/a*".
    robots = parse("User-agent: *\nAllow: /a*\nDisallow: /a%2A\n")
    assert not robots.allowed(TOKEN, "/a*")
    assert robots.allowed(TOKEN, "/ab")
    verdict = robots.decide(TOKEN, "https://example.com/a*x")
    assert verdict.rule is not None and verdict.rule.line == 3


def test_literal_star_survives_the_index_html_rule() -> None:
    # Google's index.html rule applies to the directory as written, literal '*' kept.
    robots = parse("User-agent: *\nDisallow: /\nAllow: /a%2A/index.html\n")
    assert robots.allowed(TOKEN, "/a*/")
    assert not robots.allowed(TOKEN, "/ab/")


# --- '$' ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        # RFC 9309 §2.2.3: '$' "Designates the end of the match pattern."
        ("/a$", "/a", True),
        ("/a$", "/a/", False),
        ("/a$", "/ab", False),
        ("/a$", "/a?x", False),
        ("/*.php$", "/x.php", True),
        ("/*.php$", "/x.php?y", False),
        ("/*.php$", "/x.phpx", False),
        ("/*.php$", "/a.php/b.php", True),
        ("/$", "/", True),
        ("/$", "/a", False),
        ("/a*$", "/abc", True),
        ("*$", "/x", True),
        # '$' elsewhere is a literal character (Google robots.cc, checked with
        # jwm.robotstxt; the RFC only defines it at the end).
        ("/a$b", "/a$b", True),
        ("/a$b", "/a$bc", True),
        ("/a$b", "/ab", False),
        ("/$a", "/$a", True),
        ("/a$$", "/a$", True),
        ("/a$$", "/a$x", False),
        ("/a$$", "/a", False),
        ("/*$*$", "/x$y", True),
        # An encoded '$' is never an anchor (RFC 9309 §2.2.3 Figure 6).
        ("/a%24", "/a%24x", True),
        ("/a%24", "/a$", True),
        ("/a%24", "/a", False),
    ],
)
def test_dollar_anchors_only_at_the_end(pattern: str, path: str, expected: bool) -> None:
    assert matches(pattern, path) is expected


def test_lone_dollar_matches_nothing() -> None:
    # Google robots.cc: "$" alone would need an empty path, which never occurs
    # (the path always starts with '/'); the parser reports it.
    robots = parse("User-agent: *\nDisallow: $\n")
    assert robots.allowed(TOKEN, "/")
    assert [d.kind for d in robots.diagnostics] == ["pattern-without-slash"]


def test_dollar_weight_counts() -> None:
    # Google robots.cc: priority includes '$' -> "/a$" (3) beats "/a" (2).
    robots = parse("User-agent: *\nAllow: /a\nDisallow: /a$\n")
    assert not robots.allowed(TOKEN, "/a")
    assert robots.allowed(TOKEN, "/ab")


def test_hash_starts_a_comment_not_a_pattern_character() -> None:
    # RFC 9309 §2.2.3 table: '#' designates the start of a comment.
    robots = parse("User-agent: *\nDisallow: /a#b$\n")
    assert not robots.allowed(TOKEN, "/abc")


# --- hostile patterns -----------------------------------------------------------------


HOSTILE_PATH = "/" + "a" * 10_000


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("/" + "*" * 100 + "b", HOSTILE_PATH, False),
        ("/" + "*" * 100 + "b", HOSTILE_PATH + "b", True),
        ("/" + "*a" * 100 + "b", HOSTILE_PATH, False),
        ("/" + "*a" * 100 + "$", HOSTILE_PATH, True),
        ("/" + "a*" * 100 + "b$", HOSTILE_PATH + "b", True),
        ("/" + "a*" * 100 + "b$", HOSTILE_PATH + "bc", False),
        ("/" + "*aa" * 5000 + "a", HOSTILE_PATH, False),
        ("/" + "*a" * 5000 + "$", HOSTILE_PATH, True),
    ],
)
def test_many_stars_on_a_long_path_are_answered_correctly(
    pattern: str, path: str, expected: bool
) -> None:
    # RFC 9309 §3 (security): matching must not be exploitable; here only
    # correctness is asserted -- a backtracking matcher would not finish in
    # reasonable time on these, which the test run would show.
    assert matches(pattern, path) is expected
    rule = Rule(False, pattern, 1)
    assert (RuleSet([rule]).match(path) == rule) is expected


def test_many_hostile_rules_together() -> None:
    # RFC 9309 §3: a file full of wildcard rules still answers by longest match.
    rules = [f"Disallow: /{'*' * n}x" for n in range(1, 60)] + ["Allow: /aaa"]
    robots = parse("User-agent: *\n" + "\n".join(rules) + "\n")
    assert robots.allowed(TOKEN, "/" + "a" * 300)  # only the Allow matches
    verdict = robots.decide(TOKEN, "/" + "a" * 300 + "x")
    assert not verdict.allowed
    # the heaviest match: 59 stars, weight 61, on line 60
    assert verdict.rule is not None and verdict.rule.line == 60

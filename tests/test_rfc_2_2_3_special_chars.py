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


def test_encoded_star_is_no_wildcard() -> None:
    # RFC 9309 §2.2.3: to match a literal '*', write it percent-encoded. '*' is
    # reserved (RFC 3986 §2.2), so "%2A" is not decoded and only matches "%2A".
    assert matches("/a%2Ab", "/a%2Ab")
    assert matches("/a%2ab", "/a%2Ab")
    assert not matches("/a%2Ab", "/axb")
    assert not matches("/a%2Ab", "/a*b")


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
        # An encoded '$' is never an anchor.
        ("/a%24", "/a%24x", True),
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
    assert (RuleSet([rule]).match(path) is rule) is expected


def test_many_hostile_rules_together() -> None:
    # RFC 9309 §3: a file full of wildcard rules still answers by longest match.
    rules = [f"Disallow: /{'*' * n}x" for n in range(1, 60)] + ["Allow: /aaa"]
    robots = parse("User-agent: *\n" + "\n".join(rules) + "\n")
    assert robots.allowed(TOKEN, "/" + "a" * 300)  # only the Allow matches
    verdict = robots.decide(TOKEN, "/" + "a" * 300 + "x")
    assert not verdict.allowed
    # the heaviest match: 59 stars, weight 61, on line 60
    assert verdict.rule is not None and verdict.rule.line == 60

"""Adversarial shapes of robots.txt: a large chain of wildcard entries is walked (never
merged) and agrees with the reference, and past the matching budget the answer is only
ever stricter than the reference's.

No timing is asserted here (benchmarks/bench_engine.py measures the budget). What these
shapes keep in memory is traced in tests/integration/test_engine_memory.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from hypothesis import example, given, settings
from hypothesis import strategies as st

from scrapy_rep.robotstxt import RobotsTxt, intervals, matcher, parse
from scrapy_rep.robotstxt.matcher import RuleSet
from scrapy_rep.robotstxt.parser import Rule
from scrapy_rep.robotstxt.paths import normalise_path
from tests.support.examples import examples
from tests.support.matching import many_rules, reference

raw_paths = st.lists(st.text("abcd/.", max_size=12).map(lambda p: "/" + p), min_size=1, max_size=20)


@contextmanager
def limits(merge: int, budget: int | None = None, sieve: int | None = None) -> Iterator[None]:
    """Every chain walked (``merge`` 0), a matching budget, and every frame sieved
    (``sieve`` -1000), for the time of a test."""
    saved = intervals.MERGE_LIMIT, matcher.MATCH_BUDGET, matcher.SIEVE_MIN
    intervals.MERGE_LIMIT = merge
    if budget is not None:
        matcher.MATCH_BUDGET = budget
    if sieve is not None:
        matcher.SIEVE_MIN = sieve
    try:
        yield
    finally:
        intervals.MERGE_LIMIT, matcher.MATCH_BUDGET, matcher.SIEVE_MIN = saved


def assert_agrees(rule_list: list[Rule], paths: list[str]) -> None:
    """The compiled set's answers and deciding rules are the reference's (each path twice:
    the second time from what the first settled)."""
    rules = RuleSet(rule_list)
    for raw in paths * 2:
        path = normalise_path(raw)
        expected = reference(rule_list, path)
        chosen = rules.match(path)
        assert (None if chosen is None else reference([chosen], path)) == expected
        assert rules.allows(path) is (expected is None or expected[1])


#: the cases of the out-of-budget properties: rules, paths, and a budget that runs out early
over_budget = given(rule_list=many_rules, paths=raw_paths, budget=st.integers(-1, 400))


def each_path_over_budget(
    rule_list: list[Rule],
    paths: list[str],
    budget: int,
    check: Callable[[RobotsTxt, list[Rule], str, str], None],
) -> None:
    """``check(robots, parsed rules, url, normalised path)`` for each path, the rules written
    as one ``User-agent: *`` group and matched under ``budget``, every chain walked."""
    body = "User-agent: *\n" + "".join(
        f"{'Allow' if r.allow else 'Disallow'}: {r.pattern}\n" for r in rule_list
    )
    with limits(0, budget):
        robots = parse(body)
        parsed = [rule for group in robots.groups for rule in group.rules]
        for raw in paths:
            check(robots, parsed, "https://example.com" + raw, normalise_path(raw))


@settings(max_examples=examples(400), deadline=None)
@given(rule_list=many_rules, paths=raw_paths)
def test_a_walked_chain_agrees_with_the_reference(rule_list: list[Rule], paths: list[str]) -> None:
    # MERGE_LIMIT 0: every interval with entries walks its chain of frames, as a file
    # with thousands of wildcards does; the answers and rules are the reference's.
    with limits(0):
        assert_agrees(rule_list, paths)


@settings(max_examples=examples(400), deadline=None)
@given(rule_list=many_rules, paths=raw_paths)
@example(rule_list=[Rule(False, "/*aaaa", 1)], paths=["/aaaa"])  # found by a CI run
def test_a_sieved_chain_agrees_with_the_reference(rule_list: list[Rule], paths: list[str]) -> None:
    # SIEVE_MIN -1000: every frame walked tries only the entries its sieve names (those
    # whose rarest gram is in the path); the answers and rules are still the reference's.
    with limits(0, sieve=-1000):
        assert_agrees(rule_list, paths)


@settings(max_examples=examples(400), deadline=None)
@over_budget
def test_out_of_budget_the_answer_is_only_ever_stricter(
    rule_list: list[Rule], paths: list[str], budget: int
) -> None:
    # A budget that runs out after a few entries: untried Disallow entries are assumed
    # to match, untried Allow entries not. Never allowed where the reference disallows.
    def check(robots: RobotsTxt, parsed: list[Rule], url: str, path: str) -> None:
        expected = reference(parsed, path)
        if path != "/robots.txt" and expected is not None and not expected[1]:
            assert robots.allowed("mybot", url) is False
            assert robots.decide("mybot", url).allowed is False

    each_path_over_budget(rule_list, paths, budget, check)


def _no_gram_wildcards(count: int) -> list[str]:
    """``count`` root wildcards whose pieces are too short for the sieve (always tried),
    none matching a path of 'y's: /*ab*cx, /*ab*dx, ..."""
    letters = "abcdefghijklmnopq"
    pieces = (a + b + "*" + c for a in letters for b in letters for c in letters)
    return [f"Allow: /*{piece}x" for piece, _ in zip(pieces, range(count), strict=False)]


def test_budget_fallback_names_a_disallow_rule() -> None:
    # 3,000 root wildcards that do not match a long path, each to be tried, then an
    # Allow that matches it and a lighter Disallow that does too: past the budget the
    # untried Allow is assumed not to match and the Disallow decides (strict); with
    # room in the budget the exact answer.
    lines = ["User-agent: *", "Allow: /", *_no_gram_wildcards(3000)]
    lines += ["Allow: /*yyyyy", "Disallow: /*yyyy"]
    url = "https://example.com/" + "y" * 2000
    with limits(intervals.MERGE_LIMIT, 10**12):
        exact = parse("\n".join(lines) + "\n")
        assert exact.allowed("mybot", url) is True
    with limits(intervals.MERGE_LIMIT, 10_000):
        strict = parse("\n".join(lines) + "\n")
        assert strict.allowed("mybot", url) is False
        verdict = strict.decide("mybot", url)
        assert verdict.rule is not None and verdict.rule.pattern == "/*yyyy"
    robots = parse("\n".join(lines) + "\n")
    assert robots.allowed("mybot", url) in (True, False)


def test_budget_fallback_never_drops_what_no_rule_matches() -> None:
    # The same 3,000 wildcards and a Disallow the path cannot match: past the budget the
    # URL is still allowed (the fallback dropped it, naming /*zzzz, which cannot match).
    lines = ["User-agent: *", "Allow: /", *_no_gram_wildcards(3000), "Disallow: /*zzzz"]
    url = "https://example.com/" + "y" * 2000
    with limits(intervals.MERGE_LIMIT, 10_000):
        verdict = parse("\n".join(lines) + "\n").decide("mybot", url)
        assert verdict.allowed is True
        assert verdict.rule is not None and verdict.rule.pattern == "/"


def test_the_sieve_leaves_out_the_wildcards_a_path_cannot_match() -> None:
    # 3,000 root wildcards, each with a piece of its own the path lacks, then an Allow
    # that matches the path and a lighter Disallow that does too: the sieve names none
    # of the 3,000, so a budget far too small to try them one by one still gives the
    # exact answer (without the sieve: the strict fallback, the Disallow).
    lines = ["User-agent: *", "Allow: /", *(f"Allow: /*q{n}x" for n in range(3000))]
    lines += ["Allow: /*yyy", "Disallow: /*yy"]
    body = "\n".join(lines) + "\n"
    url = "https://example.com/" + "y" * 2000
    with limits(intervals.MERGE_LIMIT, 10_000):
        assert parse(body).allowed("mybot", url) is True
    with limits(intervals.MERGE_LIMIT, 10_000, sieve=10**9):
        assert parse(body).allowed("mybot", url) is False
    robots = parse(body)  # a path that holds one entry's pieces: that entry decides
    verdict = robots.decide("mybot", "https://example.com/" + "y" * 2000 + "q1234x")
    assert verdict.rule is not None and verdict.rule.pattern == "/*q1234x"


def test_a_wildcard_whose_piece_repeats_one_gram_is_still_tried() -> None:
    # 70 root wildcards whose pieces repeat one octet (/*aaaa, /*aaaaa, ...): each offered
    # the gram "aaa" several times and counted it each time, so every entry looked commoner
    # than the frame's size, was filed under no gram, and was never tried (before: /aaaa
    # allowed; with every frame sieved, one such rule alone was)
    body = "User-agent: *\n" + "".join(f"Disallow: /*{'a' * k}\n" for k in range(4, 74))
    robots = parse(body)
    verdict = robots.decide("mybot", "https://example.com/aaaa")
    assert verdict.allowed is False
    assert verdict.rule is not None and verdict.rule.pattern == "/*aaaa"
    assert robots.allowed("mybot", "https://example.com/" + "a" * 80) is False


def test_identical_hostile_lines_do_not_drop_allowed_pages() -> None:
    # A few rules and 16,000 identical `Disallow: /*a*a*a*a*a*a*a*a*b`: identical rules
    # are one rule, and no path without a 'b' can match it, so the budget never decides
    # (it answered Disallow for both URLs, the strict fallback).
    lines = ["User-agent: *", "Allow: /ok/", "Disallow: /private/"]
    lines += ["Disallow: /*a*a*a*a*a*a*a*a*b"] * 16_000
    robots = parse("\n".join(lines) + "\n")
    assert robots.allowed("mybot", "https://example.com/ok/" + "a" * (10_000 - 4)) is True
    assert robots.allowed("mybot", "https://example.com/ok/1") is True
    assert robots.allowed("mybot", "https://example.com/private/x") is False
    verdict = robots.decide("mybot", "https://example.com/ok/" + "a" * 50 + "b")
    assert verdict.allowed is False
    assert verdict.rule is not None and verdict.rule.pattern == "/*a*a*a*a*a*a*a*a*b"


def test_a_pattern_whose_last_piece_is_absent_costs_no_budget() -> None:
    # 1,225 distinct many-star wildcards whose last piece (two octets: no sieve) the path
    # lacks: each is decided by one scan for that piece, so a path that holds none of
    # them is answered exactly, not by the budget's fallback.
    octets = "bcdefghijklmnopqrstuvwxyz0123456789"
    lines = ["User-agent: *", "Allow: /"]
    lines += [f"Disallow: /*a*a*a*a*a*a*a*a*{x}{y}" for x in octets for y in octets]
    robots = parse("\n".join(lines) + "\n")
    assert robots.allowed("mybot", "https://example.com/" + "a" * 10_000) is True


@settings(max_examples=examples(400), deadline=None)
@over_budget
def test_out_of_budget_a_drop_names_a_disallow_rule_that_matches(
    rule_list: list[Rule], paths: list[str], budget: int
) -> None:
    # Past the budget only untried Allow rules are assumed (not to match): a URL is
    # dropped only by a Disallow rule of the file that matches it, the one named.
    def check(robots: RobotsTxt, parsed: list[Rule], url: str, path: str) -> None:
        verdict = robots.decide("mybot", url)
        if not verdict.allowed:
            assert verdict.rule is not None and not verdict.rule.allow
            assert reference([verdict.rule], path) is not None, (verdict.rule, path)
            assert any(not r.allow and reference([r], path) for r in parsed)

    each_path_over_budget(rule_list, paths, budget, check)

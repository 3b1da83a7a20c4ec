"""Property tests: robustness, normalisation, and the matcher against its reference.

The reference matcher (:mod:`scrapy_rep.robotstxt.reference`) is the RFC 9309
§2.2.2-2.2.3 definition written the slow, obvious way, plus Google's
index.html rule; it is checked here against one full regex per pattern. The
compiled :class:`RuleSet` must always pick a rule of the same weight and kind.
"""

from __future__ import annotations

import email.utils
import math
import re
from bisect import bisect_right

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scrapy_rep.core.policy import FetchResult, Policy, PolicyConfig, Status, next_policy
from scrapy_rep.robotstxt import normalise_path, parse
from scrapy_rep.robotstxt.matcher import RuleSet, first_of
from scrapy_rep.robotstxt.parser import Rule
from scrapy_rep.robotstxt.paths import normalise, path_of
from scrapy_rep.robotstxt.reference import _patterns, matches
from tests.support.examples import examples
from tests.support.matching import HEADS, many_rules, reference

TOKEN = "mybot"
FAST = settings(
    max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
FASTER = settings(
    max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

# --- strategies -----------------------------------------------------------------------

#: any code point, lone surrogates included (st.characters() leaves them out)
any_char = st.one_of(st.characters(), st.integers(0xD800, 0xDFFF).map(chr))
any_text = st.text(any_char, max_size=60)
any_bytes = st.binary(max_size=400)

#: robots.txt-ish lines, so that arbitrary input also reaches the matcher
LINE_PARTS = [
    "User-agent: *",
    "User-agent: mybot",
    "user-agent mybot/1.0",
    "Disallow: /",
    "Disallow: /a",
    "Allow: /a*b$",
    "Disallow: *%",
    "disalow /%7e",
    "Crawl-delay: 2",
    "Sitemap: http://x/s",
    "# c",
    "",
    "\xef\xbb\xbf",
    "\xff",
]
robotsish = st.lists(st.one_of(st.sampled_from(LINE_PARTS), any_text), max_size=12).map(
    lambda lines: "\n".join(lines)
)

PATTERN_PIECES = [
    "/",
    "a",
    "b",
    "*",
    "$",
    "%",
    "?",
    ".",
    "%7E",
    "~",
    "%2F",
    "%2f",
    "%2A",
    "%24",
    "%2a",
    "|",
    "[",
    "é",
    "index.htm",
]
PATH_PIECES = [
    "/",
    "a",
    "b",
    "$",
    "%",
    "?",
    ".",
    "~",
    "%7e",
    "%2F",
    "*",
    "%2A",
    "%24",
    "|",
    "%7C",
    "[",
    "é",
    "index.html",
    "ab",
]

SMALL_ALPHABET = "/ab*$%?."
TINY_ALPHABET = "/a*$"  # dense in overlaps such as "/a*a$" against "/a"
patterns = st.one_of(
    st.text(TINY_ALPHABET, max_size=6).map(lambda p: "/" + p),
    st.text(SMALL_ALPHABET, max_size=8).map(lambda p: "/" + p),
    st.text(SMALL_ALPHABET, max_size=8),
    st.lists(st.sampled_from(PATTERN_PIECES), max_size=7).map("".join),
    st.lists(st.sampled_from(PATTERN_PIECES), max_size=6).map(lambda p: "/" + "".join(p)),
)
rules = st.lists(
    st.builds(Rule, st.booleans(), patterns, st.integers(1, 1000)), min_size=0, max_size=6
)
paths = st.one_of(
    st.text("/a", max_size=6),
    st.text(SMALL_ALPHABET.replace("*", ""), max_size=10),
    st.lists(st.sampled_from(PATH_PIECES), max_size=10).map("".join),
).map(lambda p: "/" + p)


#: how a character of the path turns into pattern text: kept, dropped, starred, doubled
_EDITS = ["{c}", "{c}", "{c}", "", "*", "{c}*", "*{c}", "{c}*{c}", "{c}{c}"]


@st.composite
def path_and_rules(draw: st.DrawFn) -> tuple[str, list[Rule]]:
    """A path and rules, many of them edits of the path, so that they often
    (nearly) match: overlaps such as "/a*a$" against "/a" come up a lot."""
    path = draw(paths)
    rule_list = []
    for line in range(draw(st.integers(0, 6))):
        if draw(st.integers(0, 3)) == 0:
            pattern = draw(patterns)
        else:
            edits = draw(st.lists(st.sampled_from(_EDITS), min_size=len(path), max_size=len(path)))
            pattern = "".join(edit.format(c=char) for edit, char in zip(edits, path, strict=True))
            pattern = pattern[: draw(st.integers(0, len(pattern)))]
            if draw(st.booleans()):
                pattern += "$"
        rule_list.append(Rule(draw(st.booleans()), pattern, line + 1))
    return path, rule_list


# --- reference matcher ----------------------------------------------------------------


def _regex(pattern: str) -> re.Pattern[str]:
    """A normalised robots.txt pattern as a regex matched at the path's start."""
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    # RFC 9309 §2.2.3: a raw '*' is the wildcard; %2A and %24 are literal '*' and '$'.
    pieces = [piece.replace("%2A", "*").replace("%24", "$") for piece in body.split("*")]
    text = ".*".join(map(re.escape, pieces))
    return re.compile(text + (r"\Z" if anchored else ""), re.DOTALL)


# --- robustness -----------------------------------------------------------------------


@FAST
@given(body=any_bytes, url=any_text)
def test_arbitrary_bytes_never_raise(body: bytes, url: str) -> None:
    # scrapy_rep API / RFC 9309 §2.2: parse anything, answer anything.
    robots = parse(body)
    verdict = robots.decide(TOKEN, url)
    assert robots.allowed(TOKEN, url) is verdict.allowed
    assert isinstance(verdict.allowed, bool)
    assert robots.size == len(body)
    str(verdict)
    for diagnostic in robots.diagnostics:
        str(diagnostic).encode("utf-8")


@FAST
@given(body=robotsish, url=any_text, token=st.sampled_from(["mybot", "MyBot", "other", "x"]))
def test_arbitrary_text_never_raises(body: str, url: str, token: str) -> None:
    # scrapy_rep API: str bodies, lone surrogates included, never raise.
    robots = parse(body)
    verdict = robots.decide(token, url)
    assert robots.allowed(token, url) is verdict.allowed
    assert verdict.allowed is (verdict.rule is None or verdict.rule.allow)
    robots.crawl_delay(token)


# --- hostile numbers and headers: the parser and the status policy ---------------------

#: numbers as a hostile server writes them: thousands of digits, signs, exponents,
#: digits that are not ASCII (``"²".isdigit()`` is true, ``float("²")`` raises)
numberish = st.one_of(
    st.integers(0, 6000).map(lambda n: "9" * n),
    st.integers(0, 6000).map(lambda n: "0" * n),
    st.integers().map(str),
    st.floats().map(repr),
    st.text(st.sampled_from('0123456789.-+eE\u00b2\u00b3\u0663\uff15 /smhd:,"'), max_size=30),
    any_text,
)


@FASTER
@given(
    key=st.sampled_from(["Crawl-delay", "Request-rate", "request-rate", "crawl-delay"]),
    count=numberish,
    period=numberish,
    unit=st.sampled_from(["", "s", "m", "h", "d", "x", " 1820-1940"]),
)
def test_hostile_numbers_in_delay_lines_never_raise(
    key: str, count: str, period: str, unit: str
) -> None:
    robots = parse(f"User-agent: *\n{key}: {count}/{period}{unit}\n{key}: {count}\n")
    delay = robots.crawl_delay(TOKEN)
    assert delay is None or (math.isfinite(delay) and delay >= 0)


NOW = 1_700_000_000.0
URL = "https://example.com/robots.txt"
header_value = st.one_of(
    numberish,
    numberish.map(lambda n: f"max-age={n}"),
    numberish.map(lambda n: f'no-cache, s-maxage={n}, max-age="{n}"'),
    st.tuples(st.integers(-(10**6), 10**6), numberish).map(
        lambda d: f"Fri, 31 Dec {d[0]} 23:59:{d[1]} GMT"
    ),
    st.floats(-6e10, 2.5e11).map(lambda t: email.utils.formatdate(t, usegmt=True)),
)
hostile_headers = st.dictionaries(
    st.sampled_from(["retry-after", "cache-control", "expires", "x-other"]),
    header_value,
    max_size=3,
)
previous_policies = st.sampled_from(
    [
        None,
        next_policy(None, FetchResult(URL, URL, 200, b"Disallow: /x"), NOW - 10, PolicyConfig()),
        next_policy(None, FetchResult(URL, URL, 503), NOW - 10, PolicyConfig()),
        next_policy(None, FetchResult(URL, URL, error="TimeoutError"), NOW - 1e9, PolicyConfig()),
    ]
)


@FAST
@given(
    status=st.one_of(st.none(), st.integers(-(10**6), 10**6), st.sampled_from([200, 429, 503])),
    headers=hostile_headers,
    previous=previous_policies,
    redirects=st.integers(0, 10**6),
)
def test_hostile_headers_and_statuses_always_make_a_policy(
    status: int | None, headers: dict[str, str], previous: Policy | None, redirects: int
) -> None:
    error = None if status is not None else "TimeoutError"
    fetched = FetchResult(URL, URL, status, b"", headers, error, redirects=redirects)
    policy = next_policy(previous, fetched, NOW, PolicyConfig())
    # a refetch time on the clock, never before now, never infinite
    assert math.isfinite(policy.expires_at) and policy.expires_at >= NOW
    assert policy.status in Status


@FAST
@given(body=robotsish, url=paths)
def test_line_ending_style_does_not_change_answers(body: str, url: str) -> None:
    # RFC 9309 §2.2: NL = CR / LF / CRLF, all equivalent.
    lf = parse(body)
    for eol in ("\r\n", "\r"):
        other = parse(body.replace("\n", eol))
        assert other.allowed(TOKEN, url) == lf.allowed(TOKEN, url)


# --- normalisation --------------------------------------------------------------------


@FAST
@given(text=any_text)
def test_normalise_is_idempotent_and_ascii(text: str) -> None:
    # RFC 3986 §6.2.2: normalising twice changes nothing.
    once = normalise(text)
    assert normalise(once) == once
    assert all("!" <= char <= "~" for char in once)


@FAST
@given(text=st.text(st.sampled_from("/abc%7eE2Fé ~?*$"), max_size=20))
def test_normalise_is_idempotent_on_escape_heavy_text(text: str) -> None:
    # Dense '%', hex digits and '~': the cases where normalisation does work.
    once = normalise(text)
    assert normalise(once) == once
    assert "%7E" not in once and "%7e" not in once  # '~' is unreserved: decoded


@FAST
@given(text=any_text)
def test_normalise_path_is_idempotent_and_normalised(text: str) -> None:
    # The URL side: normalise, then %2A/%24 read as '*'/'$' (RFC 9309 §2.2.3).
    once = normalise_path(text)
    assert normalise_path(once) == once
    assert normalise(once) == once
    assert "%2A" not in once and "%24" not in once


@FAST
@given(url=any_text)
def test_path_of_is_never_empty_and_has_no_fragment(url: str) -> None:
    # RFC 3986 §3.3/§3.5 + §6.2.3: the path starts with '/', the fragment is gone.
    path = path_of(url)
    assert path.startswith("/")
    assert "#" not in path


# --- the matcher against the reference ------------------------------------------------


#: raw octets that normalising escapes (' ' is %20, '|' is %7C), pieces of rules that
#: look like the hex of those escapes, and escapes: as Scrapy writes them (upper-case,
#: of octets that stay escaped) and as normalising changes them (lower-case hex, an
#: unreserved octet, '*' and '$', a '%' that starts none)
_RAW_PIECES = ["a", "20", "7C", " ", "|", "^", "%20", "%C3%A9", "%7c", "%41", "%2A", "%24", "%"]
_LOOKALIKE = {" ": "20", "|": "7C", "20": " ", "7C": "|", "%20": " ", "%7c": "|", "%41": "A"}


@st.composite
def raw_path_and_rules(draw: st.DrawFn) -> tuple[str, list[Rule]]:
    """A path with raw octets and rules made from its pieces: cut, a piece swapped for
    its look-alike, a '*' put in, a '$' at the end."""
    pieces = draw(st.lists(st.sampled_from(_RAW_PIECES), min_size=1, max_size=6))
    rule_list = []
    for line in range(1, draw(st.integers(1, 5)) + 1):
        taken = pieces[: draw(st.integers(0, len(pieces)))]
        taken = [_LOOKALIKE.get(piece, piece) if draw(st.booleans()) else piece for piece in taken]
        if taken and draw(st.booleans()):
            taken.insert(draw(st.integers(0, len(taken))), "*")
        pattern = "/" + "".join(taken) + ("$" if draw(st.booleans()) else "")
        rule_list.append(Rule(draw(st.booleans()), pattern, line))
    return "/" + "".join(pieces), rule_list


@settings(max_examples=examples(500), deadline=None)
@given(case=raw_path_and_rules())
def test_allowed_reads_raw_octets_as_their_escapes(case: tuple[str, list[Rule]]) -> None:
    # allowed() finds the interval of a path with a raw ' ' or '|' without escaping
    # it first when no rule has an escape, and of a path whose escapes normalising
    # leaves as they are: the answer must be that of the normalised path.
    raw_path, rule_list = case
    body = "User-agent: *\n" + "".join(
        f"{'Allow' if rule.allow else 'Disallow'}: {rule.pattern}\n" for rule in rule_list
    )
    robots = parse(body)
    parsed = [rule for group in robots.groups for rule in group.rules]
    expected = reference(parsed, normalise_path(raw_path))
    assert robots.allowed(TOKEN, "https://example.com" + raw_path) is (
        expected is None or expected[1]
    )
    # decide() too: the rule of the weight and kind the reference chooses
    rule = robots.decide(TOKEN, "https://example.com" + raw_path).rule
    assert (None if rule is None else reference([rule], normalise_path(raw_path))) == expected


@settings(max_examples=examples(1000), deadline=None)
@given(case=path_and_rules())
def test_the_reference_glob_is_the_regex_definition(case: tuple[str, list[Rule]]) -> None:
    # The specification itself, against '*' as '.*' and '$' as '\Z' (fine at this size).
    raw_path, rule_list = case
    path = normalise_path(raw_path)
    for rule in rule_list:
        for pattern in _patterns(rule):
            assert matches(pattern, path) is bool(_regex(pattern).match(path)), pattern


@settings(max_examples=examples(500), deadline=None)
@given(rule_list=many_rules, raw_path=st.text("abcd/.", max_size=12).map(lambda p: "/" + p))
def test_ruleset_agrees_with_the_reference_on_many_rules(
    rule_list: list[Rule], raw_path: str
) -> None:
    path = normalise_path(raw_path)
    chosen = RuleSet(rule_list).match(path)
    expected = reference(rule_list, path)
    assert (None if chosen is None else reference([chosen], path)) == expected


@settings(max_examples=examples(300), deadline=None)
@given(
    rule_list=many_rules,
    raw_paths=st.lists(
        st.text("abcd/.", max_size=12).map(lambda p: "/" + p), min_size=2, max_size=40
    ),
)
def test_a_rule_set_asked_many_times_agrees_with_the_reference(
    rule_list: list[Rule], raw_paths: list[str]
) -> None:
    # One compiled set answers every path the same as the reference, and in any order;
    # so does what allowed() reads: the path's interval's answer, or its entries.
    rules = RuleSet(rule_list)
    for raw_path in raw_paths * 2:
        path = normalise_path(raw_path)
        chosen = rules.match(path)
        expected = reference(rule_list, path)
        assert (None if chosen is None else reference([chosen], path)) == expected
        allowed = expected is None or expected[1]
        assert rules.allows(path) is allowed
        answer = rules.answers[bisect_right(rules.bounds, path)]
        if not isinstance(answer, bool):  # the entries allowed() tries, or the plain answer
            entry = first_of(path, answer[1])
            answer = answer[0] if entry is None else entry[1]
        assert answer is allowed


#: origins that share one parsed file (the cache keeps one parse per body), and none
_ORIGINS = ["https://example.com", "http://example.com:8080", "https://b.example", ""]
_ROBOTS_HEADS = ["/robots", "/robots.txt", "/robots.txt$", "/*.txt$", "/r*t"]
_ROBOTS_PATHS = ["/robots.txt", "/robots.txtx", "/robots.tx", "/robots.txt/", "/robots.txt?a"]


@settings(max_examples=examples(300), deadline=None)
@given(
    rule_list=st.lists(
        st.builds(
            Rule,
            st.booleans(),
            st.tuples(st.sampled_from(HEADS + _ROBOTS_HEADS), st.text("abcd/*$.", max_size=6)).map(
                "".join
            ),
            st.integers(1, 1000),
        ),
        max_size=40,
    ),
    asked=st.lists(
        st.tuples(
            st.sampled_from(_ORIGINS),
            st.one_of(
                st.text("abcd/.", max_size=12).map(lambda p: "/" + p),
                st.sampled_from(_ROBOTS_PATHS),
            ),
        ),
        min_size=1,
        max_size=40,
    ),
)
def test_one_file_asked_for_origins_in_turn_agrees_with_the_reference(
    rule_list: list[Rule], asked: list[tuple[str, str]]
) -> None:
    # allowed() bisects whole the URLs of the origin its rule set's bounds start with,
    # and rebases them on another origin whose URLs keep coming: in any order, from
    # any origin, the answer is the reference's (and /robots.txt is always allowed).
    body = "User-agent: *\n" + "".join(
        f"{'Allow' if rule.allow else 'Disallow'}: {rule.pattern}\n" for rule in rule_list
    )
    robots = parse(body)
    parsed = [rule for group in robots.groups for rule in group.rules]
    for origin, path in asked * 2:
        expected = reference(parsed, path)
        allowed = path == "/robots.txt" or expected is None or expected[1]
        assert robots.allowed(TOKEN, origin + path) is allowed, origin + path
        verdict = robots.decide(TOKEN, origin + path)
        assert verdict.allowed is allowed
        if path == "/robots.txt":
            assert verdict.reason == "robots-txt"
        elif expected is None:
            assert verdict.rule is None
        else:  # a rule of the weight and kind the reference chooses
            assert verdict.rule is not None and reference([verdict.rule], path) == expected


@settings(max_examples=examples(1000), deadline=None)
@given(case=path_and_rules())
def test_ruleset_agrees_with_brute_force_reference(case: tuple[str, list[Rule]]) -> None:
    # RFC 9309 §2.2.2 (longest match, allow wins ties) and §2.2.3 ('*', '$').
    raw_path, rule_list = case
    path = normalise_path(raw_path)
    chosen = RuleSet(rule_list).match(path)
    expected = reference(rule_list, path)
    if expected is None:
        assert chosen is None
    else:
        assert chosen is not None
        assert reference([chosen], path) == expected


@FASTER
@given(rule_list=rules, raw_path=paths)
def test_parsed_file_agrees_with_reference(rule_list: list[Rule], raw_path: str) -> None:
    # The same through the public API: a file made of the rules, one group.
    body = "User-agent: *\n" + "".join(
        f"{'Allow' if rule.allow else 'Disallow'}: {rule.pattern}\n" for rule in rule_list
    )
    robots = parse(body)
    parsed = [rule for group in robots.groups for rule in group.rules]
    expected = reference(parsed, normalise_path(raw_path))
    assert robots.allowed(TOKEN, raw_path) is (expected is None or expected[1])

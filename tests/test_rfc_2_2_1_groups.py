"""RFC 9309 §2.2.1: groups, the user-agent line, and which group applies."""

from __future__ import annotations

import pytest

from scrapy_rep.robotstxt import (
    InvalidProductToken,
    parse,
    product_token,
    validate_token,
)

TOKEN = "mybot"


def kinds(robots) -> list[tuple[int, str]]:
    return [(d.line, d.kind) for d in robots.diagnostics]


# --- forming groups -------------------------------------------------------------------


def test_consecutive_user_agent_lines_form_one_group() -> None:
    # RFC 9309 §2.2 grammar: group = startgroupline *(startgroupline / emptyline) *(rule ...)
    robots = parse("User-agent: a\nUser-agent: mybot\nUser-agent: b\nDisallow: /x\n")
    assert len(robots.groups) == 1
    assert robots.groups[0].agents == ["a", "mybot", "b"]
    for token in ("a", "mybot", "b"):
        assert not robots.allowed(token, "/x")
    assert robots.allowed("c", "/x")


def test_a_user_agent_line_after_a_rule_starts_a_new_group() -> None:
    # RFC 9309 §2.2 grammar: rules close the run of startgrouplines.
    robots = parse("User-agent: mybot\nDisallow: /a\nUser-agent: other\nDisallow: /b\n")
    assert [g.agents for g in robots.groups] == [["mybot"], ["other"]]
    assert not robots.allowed(TOKEN, "/a")
    assert robots.allowed(TOKEN, "/b")
    assert not robots.allowed("other", "/b")
    assert robots.allowed("other", "/a")


@pytest.mark.parametrize(
    "between",
    [
        pytest.param("Sitemap: https://example.com/s.xml", id="sitemap"),
        pytest.param("Crawl-delay: 3", id="crawl-delay"),
        pytest.param("Request-rate: 1/5", id="request-rate"),
        pytest.param("Unknown-thing: value", id="unknown"),
        pytest.param("", id="empty-line"),
        pytest.param("# a comment", id="comment"),
    ],
)
def test_non_rule_lines_do_not_end_a_group(between: str) -> None:
    # RFC 9309 §2.2.4: other records must not change the groups; Google
    # robots.cc only lets allow/disallow end a run of user-agent lines
    # (checked with jwm.robotstxt).
    robots = parse(f"User-agent: mybot\n{between}\nUser-agent: other\nDisallow: /x\n")
    assert len(robots.groups) == 1
    assert not robots.allowed(TOKEN, "/x")
    assert not robots.allowed("other", "/x")


def test_group_records_its_first_line() -> None:
    # scrapy_rep explanations cite the group's line; RFC 9309 §2.2.1.
    robots = parse("# c\nUser-agent: a\nUser-agent: b\nDisallow: /\n\nUser-agent: c\nAllow: /\n")
    assert [g.line for g in robots.groups] == [2, 6]
    assert str(robots.groups[0]) == "user-agent: a, b (line 2)"


# --- merging and the '*' fallback -----------------------------------------------------


def test_all_groups_naming_the_token_are_merged() -> None:
    # RFC 9309 §2.2.1: "If there are multiple groups that match the user-agent,
    # the matching groups' rules MUST be combined into one group".
    body = (
        "User-agent: mybot\nDisallow: /a\n"
        "User-agent: other\nDisallow: /b\n"
        "User-agent: MyBot\nAllow: /a/ok\n"
    )
    robots = parse(body)
    groups = robots.groups_for(TOKEN)
    assert [g.line for g in groups] == [1, 5]
    assert not robots.allowed(TOKEN, "/a/x")
    assert robots.allowed(TOKEN, "/a/ok")  # longest match across merged groups
    assert robots.allowed(TOKEN, "/b")
    verdict = robots.decide(TOKEN, "/a/ok")
    assert verdict.groups == groups
    assert verdict.rule is not None and verdict.rule.line == 6


def test_star_groups_are_merged_too() -> None:
    # RFC 9309 §2.2.1: combining applies to the "*" group as well.
    robots = parse(
        "User-agent: *\nDisallow: /a\nUser-agent: x\nAllow: /\nUser-agent: *\nDisallow: /b\n"
    )
    assert [g.line for g in robots.groups_for(TOKEN)] == [1, 5]
    assert not robots.allowed(TOKEN, "/a")
    assert not robots.allowed(TOKEN, "/b")


def test_star_group_only_when_no_group_names_the_token() -> None:
    # RFC 9309 §2.2.1: "If no matching group exists, crawlers MUST obey the
    # group with a user-agent line with the "*" value, if present."
    robots = parse("User-agent: *\nDisallow: /\n\nUser-agent: mybot\nDisallow: /private\n")
    assert robots.allowed(TOKEN, "/public")
    assert not robots.allowed(TOKEN, "/private")
    assert not robots.allowed("otherbot", "/public")
    assert [g.agents for g in robots.groups_for(TOKEN)] == [["mybot"]]
    assert [g.agents for g in robots.groups_for("otherbot")] == [["*"]]


def test_named_group_without_rules_still_beats_star() -> None:
    # RFC 9309 §2.2.1: the named group matches, so "*" is not used, even if
    # the named group has no rules (Google robots.cc agrees, jwm.robotstxt).
    robots = parse("User-agent: *\nDisallow: /\nUser-agent: mybot\n")
    verdict = robots.decide(TOKEN, "/x")
    assert verdict.allowed
    assert verdict.reason == "no-matching-rule"
    assert [g.agents for g in verdict.groups] == [["mybot"]]
    assert not robots.allowed("other", "/x")


def test_group_naming_both_token_and_star() -> None:
    # RFC 9309 §2.2.1: a group may list several user-agents, "*" included.
    robots = parse("User-agent: mybot\nUser-agent: *\nDisallow: /x\n")
    assert not robots.allowed(TOKEN, "/x")
    assert not robots.allowed("other", "/x")


def test_no_group_applies_means_allowed() -> None:
    # RFC 9309 §2.2.1: "If no group matches the product token and there is no
    # group with a user-agent line with the "*" value ... crawlers MUST obey
    # ... no rules" (everything allowed).
    robots = parse("User-agent: other\nDisallow: /\n")
    verdict = robots.decide(TOKEN, "/x")
    assert verdict.allowed
    assert verdict.reason == "no-group"
    assert verdict.groups == ()
    assert robots.groups_for(TOKEN) == ()


# --- product-token matching -----------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "agents"),
    [
        ("mybot", ["mybot"]),
        ("MyBot", ["mybot"]),
        ("MYBOT", ["mybot"]),
        ("MyBot/1.2", ["mybot"]),
        ("mybot (+https://example.com/bot)", ["mybot"]),
        ("mybot extra words", ["mybot"]),
        ("mybot2", ["mybot"]),
        ("my-bot_x", ["my-bot_x"]),
        ("*", ["*"]),
    ],
)
def test_user_agent_value_is_reduced_to_its_product_token(value: str, agents: list[str]) -> None:
    # RFC 9309 §2.2.1: product-token = identifier / "*", identifier =
    # 1*(%x2D / %x41-5A / %x5F / %x61-7A); Google robots.cc ExtractUserAgent
    # keeps the leading [a-zA-Z_-]* (checked with jwm.robotstxt: "mybot2" and
    # "MyBot/1.2" both apply to mybot).
    robots = parse(f"User-agent: {value}\nDisallow: /x\n")
    assert robots.groups[0].agents == agents


@pytest.mark.parametrize("value", ["MyBot/1.2", "MYBOT", "mybot (compatible)", "Mybot2"])
def test_reduced_or_differently_cased_names_match_the_token(value: str) -> None:
    # RFC 9309 §2.2.1: "Crawlers MUST use case-insensitive matching".
    robots = parse(f"User-agent: {value}\nDisallow: /x\n")
    assert not robots.allowed(TOKEN, "/x")
    assert not robots.allowed("MyBot", "/x")


@pytest.mark.parametrize("value", ["mybo", "mybotx", "my bot", "xmybot", "my-bot"])
def test_names_are_not_prefix_or_substring_matched(value: str) -> None:
    # RFC 9309 §2.2.1: the group names the product token, not a part of it.
    robots = parse(f"User-agent: {value}\nDisallow: /x\n")
    assert robots.allowed(TOKEN, "/x")
    assert robots.decide(TOKEN, "/x").reason == "no-group"


@pytest.mark.parametrize(
    ("value", "is_global"),
    [("*", True), ("* anything", True), ("*\tfoo", True), ("*foo", False), ("**", False)],
)
def test_star_followed_by_space_is_still_global(value: str, is_global: bool) -> None:
    # Google robots.cc: "*" followed by whitespace is the global group
    # (checked with jwm.robotstxt); "*foo" names nobody.
    robots = parse(f"User-agent: {value}\nDisallow: /x\n")
    assert robots.allowed(TOKEN, "/x") is not is_global
    assert ("*" in robots.groups[0].agents) is is_global


@pytest.mark.parametrize("value", ["", "/1.0", "*foo", "123"])
def test_user_agent_without_token_is_reported(value: str) -> None:
    # RFC 9309 §2.2.1: the value must be an identifier or "*".
    robots = parse(f"User-agent: {value}\nDisallow: /x\n")
    assert kinds(robots) == [(1, "invalid-user-agent")]
    assert robots.groups[0].agents == []
    assert robots.allowed(TOKEN, "/x")


# --- rules outside any group ----------------------------------------------------------


def test_rules_before_any_user_agent_are_ignored_and_reported() -> None:
    # RFC 9309 §2.2 grammar: rules only exist inside a group; Google
    # robots.cc ignores them (checked with jwm.robotstxt).
    robots = parse("Disallow: /\nAllow: /x\n\nUser-agent: *\nDisallow: /private\n")
    assert robots.allowed(TOKEN, "/public")
    assert not robots.allowed(TOKEN, "/private")
    assert kinds(robots) == [(1, "outside-group"), (2, "outside-group")]


def test_rules_before_any_user_agent_with_no_groups_at_all() -> None:
    # RFC 9309 §2.2.1: no group -> nothing applies.
    robots = parse("Disallow: /\n")
    assert robots.groups == ()
    assert robots.allowed(TOKEN, "/")


# --- the crawler's own product token --------------------------------------------------


@pytest.mark.parametrize("token", ["mybot", "MyBot", "my-bot", "my_bot", "A", "-_-"])
def test_valid_tokens(token: str) -> None:
    # RFC 9309 §2.2.1: identifier = 1*(%x2D / %x41-5A / %x5F / %x61-7A)
    assert validate_token(token) == token
    robots = parse(f"User-agent: {token}\nDisallow: /x\n")
    assert not robots.allowed(token, "/x")


BAD_TOKENS = ["", "MyBot/1.0", "my bot", "bot2", "*", "mybot ", "bøt", "my.bot"]


@pytest.mark.parametrize("token", BAD_TOKENS)
def test_invalid_tokens_raise_everywhere(token: str) -> None:
    # RFC 9309 §2.2.1: "The product token MUST contain only uppercase and
    # lowercase letters ("a-z" and "A-Z"), underscores ("_"), and hyphens ("-")."
    robots = parse("User-agent: *\nDisallow: /\n")
    with pytest.raises(InvalidProductToken):
        validate_token(token)
    with pytest.raises(InvalidProductToken):
        robots.decide(token, "/x")
    with pytest.raises(InvalidProductToken):
        robots.allowed(token, "/x")
    with pytest.raises(InvalidProductToken):
        robots.groups_for(token)
    with pytest.raises(InvalidProductToken):
        robots.crawl_delay(token)


def test_invalid_token_raises_even_for_robots_txt() -> None:
    # scrapy_rep API: allowed() and decide() validate the token the same way,
    # even on the /robots.txt shortcut (RFC 9309 §2.2.2).
    robots = parse("")
    with pytest.raises(InvalidProductToken):
        robots.allowed("My Bot", "/robots.txt")
    with pytest.raises(InvalidProductToken):
        robots.decide("My Bot", "/robots.txt")


def test_invalid_token_is_a_value_error_with_a_helpful_message() -> None:
    # scrapy_rep API: InvalidProductToken subclasses ValueError.
    with pytest.raises(ValueError, match=r"'MyBot/1\.0'.*letters"):
        validate_token("MyBot/1.0")
    with pytest.raises(InvalidProductToken):
        validate_token(None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("header", "token"),
    [
        ("MyBot/1.0 (+https://example.com)", "MyBot"),
        ("  my-bot_x/2", "my-bot_x"),
        ("Mozilla/5.0 (compatible; MyBot/1.0)", "Mozilla"),
        ("/1.0", None),
        ("", None),
    ],
)
def test_product_token_from_user_agent_header(header: str, token: str | None) -> None:
    # RFC 9309 §2.2.1 / RFC 9110 §10.1.5: the User-Agent header starts with
    # product = token ["/" product-version].
    assert product_token(header) == token


def test_groups_and_crawl_delay_compile_no_rules() -> None:
    # scrapy_rep API: a per-origin cache can ask for the delay and the groups
    # cheaply; rules are compiled on the first URL judged, once per selection.
    robots = parse("User-agent: *\nCrawl-delay: 3\nDisallow: /a\nUser-agent: b\nDisallow: /\n")
    assert robots.crawl_delay("mybot") == 3.0
    assert robots.groups_for("other") == robots.groups_for("mybot")
    select = robots._selections_made().select
    assert select("mybot").rules is None
    assert not robots.allowed("mybot", "/a")
    assert select("mybot").rules is not None
    assert select("other") is select("mybot")  # shared: same groups
    assert robots.allowed("other", "/b")

"""RFC 9309 §2.1-2.2: how a robots.txt body becomes lines and records.

Covers line endings, the byte order mark, invalid UTF-8, comments, whitespace
and case-insensitive record names. Every expectation names its source.
"""

from __future__ import annotations

import pytest

from scrapy_rep.robotstxt import Rule, parse

TOKEN = "mybot"


def kinds(robots) -> list[tuple[int, str]]:
    return [(d.line, d.kind) for d in robots.diagnostics]


# --- line endings ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "eol",
    [
        pytest.param("\n", id="LF"),
        pytest.param("\r", id="CR"),
        pytest.param("\r\n", id="CRLF"),
    ],
)
def test_each_rfc_line_ending_separates_records(eol: str) -> None:
    # RFC 9309 §2.2 grammar: NL = %x0D / %x0A / %x0D.0A
    body = eol.join(["User-agent: *", "Disallow: /private", "Allow: /private/ok", ""])
    robots = parse(body.encode())
    assert not robots.allowed(TOKEN, "/private/x")
    assert robots.allowed(TOKEN, "/private/ok")
    verdict = robots.decide(TOKEN, "/private/ok")
    assert verdict.rule is not None and verdict.rule.line == 3
    assert robots.diagnostics == ()


def test_mixed_line_endings_and_crlf_counts_as_one_line() -> None:
    # RFC 9309 §2.2: CRLF is a single EOL, so it must not add an empty line
    # (line numbers stay right); Google robots.cc treats "\r\n" the same way.
    body = b"User-agent: *\r\nDisallow: /a\rDisallow: /b\nDisallow: /c\r\n\r\nDisallow: /d"
    robots = parse(body)
    rules = [robots.decide(TOKEN, path).rule for path in ("/a", "/b", "/c", "/d")]
    assert [rule.line if rule else None for rule in rules] == [2, 3, 4, 6]


@pytest.mark.parametrize(
    "separator",
    [
        pytest.param("\x0b", id="VT"),
        pytest.param("\x0c", id="FF"),
        pytest.param("\x1c", id="FS"),
        pytest.param("\x1e", id="RS"),
        pytest.param("\x85", id="NEL"),
        pytest.param("\u2028", id="LINE-SEPARATOR"),
        pytest.param("\u2029", id="PARAGRAPH-SEPARATOR"),
    ],
)
def test_only_cr_and_lf_end_lines(separator: str) -> None:
    # RFC 9309 §2.2: only CR, LF and CRLF are NL (Python's str.splitlines()
    # would also split at these); Google robots.cc splits only at 0x0A/0x0D.
    robots = parse(f"User-agent: *{separator}Disallow: /a\n".encode())
    # The whole thing is one user-agent line naming no valid token.
    assert robots.allowed(TOKEN, "/a")
    assert all(not group.rules for group in robots.groups)


def test_no_final_newline_still_reads_last_line() -> None:
    # RFC 9309 §2.2 asks crawlers to parse what they can; a missing final NL is common;
    # Google robots.cc emits the final line at end of input.
    robots = parse(b"User-agent: *\nDisallow: /last")
    assert not robots.allowed(TOKEN, "/last")


# --- byte order mark ------------------------------------------------------------------


@pytest.mark.parametrize(
    "bom",
    [
        pytest.param(b"\xef\xbb\xbf", id="full"),
        pytest.param(b"\xef\xbb", id="two-octets"),
        pytest.param(b"\xef", id="one-octet"),
    ],
)
def test_leading_bom_even_partial_is_skipped(bom: bytes) -> None:
    # Google robots.cc skips a (possibly partial) UTF-8 BOM at the start
    # (checked with jwm.robotstxt); RFC 9309 §2.2 allows UTF-8 content.
    robots = parse(bom + b"User-agent: *\nDisallow: /a\n")
    assert not robots.allowed(TOKEN, "/a")
    assert robots.diagnostics == ()
    assert robots.groups[0].agents == ["*"]


def test_bom_not_at_start_is_not_skipped() -> None:
    # Google robots.cc: only the first octets of the body are checked for a BOM.
    robots = parse(b"User-agent: *\n\xef\xbb\xbfDisallow: /a\n")
    assert robots.allowed(TOKEN, "/a")
    assert (2, "unknown-directive") in kinds(robots)


# --- invalid UTF-8 --------------------------------------------------------------------


def test_invalid_utf8_does_not_lose_the_rest_of_the_file() -> None:
    # RFC 9309 §2.2: files are UTF-8; a bad octet must not make a crawler drop
    # the other rules (Google robots.cc works on octets, checked with jwm.robotstxt).
    robots = parse(b"User-agent: *\nDisallow: /\xff\xfe\nDisallow: /after\n")
    assert not robots.allowed(TOKEN, "/after")
    assert (2, "invalid-utf8") in kinds(robots)


def test_invalid_utf8_octets_match_their_percent_encoding() -> None:
    # RFC 9309 §2.2.2: octets outside ASCII are compared percent-encoded.
    robots = parse(b"User-agent: *\nDisallow: /\xff\nDisallow: /caf\xc3\n")
    assert not robots.allowed(TOKEN, "/%FF")
    assert not robots.allowed(TOKEN, "/%ff")
    assert robots.allowed(TOKEN, "/%FE")
    assert not robots.allowed(TOKEN, "/caf%C3")


def test_invalid_utf8_in_a_comment_is_harmless_for_rules() -> None:
    # RFC 9309 §2.2: everything after '#' is a comment.
    robots = parse(b"User-agent: * # \xff\xff\nDisallow: /a # \xc3\n")
    assert not robots.allowed(TOKEN, "/a")
    assert robots.allowed(TOKEN, "/b")


def test_str_and_bytes_bodies_agree() -> None:
    # scrapy_rep API: parse() accepts decoded text as well as raw octets.
    text = "User-agent: *\nDisallow: /café\n"
    from_str, from_bytes = parse(text), parse(text.encode())
    for url in ("/café", "/caf%C3%A9", "/cafe"):
        assert from_str.allowed(TOKEN, url) == from_bytes.allowed(TOKEN, url)
    assert not from_str.allowed(TOKEN, "/caf%C3%A9")


# --- comments -------------------------------------------------------------------------


def test_comment_lines_and_trailing_comments() -> None:
    # RFC 9309 §2.2 grammar: comment = "#" *(UTF8-char-noctl / WS / "#")
    body = "# leading comment\nUser-agent: mybot # who\n  # indented comment\nDisallow: /a # why\n"
    robots = parse(body)
    assert robots.groups[0].agents == ["mybot"]
    rule = robots.decide(TOKEN, "/a").rule
    assert rule is not None and rule.pattern == "/a" and rule.line == 4
    assert robots.diagnostics == ()


def test_hash_inside_a_value_starts_a_comment() -> None:
    # RFC 9309 §2.2: '#' starts a comment wherever it is; Google robots.cc too.
    robots = parse("User-agent: *\nDisallow: /a#b\n")
    rule = robots.decide(TOKEN, "/a").rule
    assert rule is not None and rule.pattern == "/a"


def test_comment_between_user_agent_lines_keeps_one_group() -> None:
    # RFC 9309 §2.2 grammar: emptyline (which includes a comment line) may
    # appear between startgroupline records of one group.
    robots = parse("User-agent: a\n# note\n\nUser-agent: mybot\nDisallow: /x\n")
    assert len(robots.groups) == 1
    assert robots.groups[0].agents == ["a", "mybot"]
    assert not robots.allowed(TOKEN, "/x")


# --- whitespace -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "Disallow:/a",
        "Disallow: /a",
        "Disallow : /a",
        "  Disallow:/a  ",
        "\tDisallow\t:\t/a\t",
        "Disallow:    /a    # comment",
    ],
)
def test_whitespace_around_names_and_values_is_ignored(line: str) -> None:
    # RFC 9309 §2.2 grammar: rule = *WS ("allow" / "disallow") *WS ":" *WS path EOL
    robots = parse(f"User-agent: *\n{line}\n")
    rule = robots.decide(TOKEN, "/a").rule
    assert rule is not None and rule.pattern == "/a" and not rule.allow
    assert robots.diagnostics == ()


@pytest.mark.parametrize(
    ("char", "encoded"),
    [
        pytest.param("\u00a0", "%C2%A0", id="NBSP"),
        pytest.param("\u0085", "%C2%85", id="NEL"),
        pytest.param("\x1f", "%1F", id="US"),
    ],
)
def test_non_ascii_or_control_whitespace_is_part_of_the_value(char: str, encoded: str) -> None:
    # RFC 9309 §2.2: WS = SP / HTAB only; Google robots.cc strips only ASCII
    # whitespace (checked with jwm.robotstxt). So "/a<NBSP>" is not "/a".
    robots = parse(f"User-agent: *\nDisallow: /a{char}\n")
    assert robots.allowed(TOKEN, "/a")
    assert not robots.allowed(TOKEN, f"/a{encoded}")


def test_space_inside_a_value_is_kept() -> None:
    # RFC 9309 §2.2 grammar: only leading/trailing WS surround the value;
    # Google robots.cc keeps "/a b" whole when a colon is present.
    robots = parse("User-agent: *\nDisallow: /a b\n")
    assert not robots.allowed(TOKEN, "/a%20b")
    assert robots.allowed(TOKEN, "/a")


# --- case-insensitive names -----------------------------------------------------------


@pytest.mark.parametrize(
    ("agent_key", "rule_key"),
    [
        ("user-agent", "disallow"),
        ("USER-AGENT", "DISALLOW"),
        ("User-Agent", "Disallow"),
        ("uSeR-aGeNt", "dIsAlLoW"),
    ],
)
def test_record_names_are_case_insensitive(agent_key: str, rule_key: str) -> None:
    # RFC 9309 §2.2.1-2.2.2: "user-agent", "allow", "disallow" are
    # case-insensitive (ABNF strings are case-insensitive, RFC 5234 §2.3).
    robots = parse(f"{agent_key}: mybot\n{rule_key}: /a\nALLOW: /a/ok\n")
    assert not robots.allowed(TOKEN, "/a/x")
    assert robots.allowed(TOKEN, "/a/ok")
    assert robots.diagnostics == ()


def test_a_parsed_rule_is_the_rule_it_says() -> None:
    # scrapy_rep API: a rule read from a file is a Rule like any other (equal,
    # hashable, frozen), however the parser builds it.
    (rule,) = parse("User-agent: *\nAllow: /a\n").groups[0].rules
    assert rule == Rule(True, "/a", 2) and hash(rule) == hash(Rule(True, "/a", 2))
    assert repr(rule) == repr(Rule(True, "/a", 2))
    with pytest.raises(AttributeError):
        rule.pattern = "/b"  # type: ignore[misc]


def test_sitemap_name_is_case_insensitive() -> None:
    # RFC 9309 §2.2.4 (other records, e.g. sitemaps); names are matched
    # case-insensitively like the protocol's own (Google robots.cc too).
    robots = parse("SITEMAP: https://example.com/a.xml\nsitemap: https://example.com/b.xml\n")
    assert robots.sitemaps == ("https://example.com/a.xml", "https://example.com/b.xml")


def test_lines_that_are_no_record_are_reported_and_skipped() -> None:
    # RFC 9309 §2.2: unparseable lines are ignored; the group continues.
    robots = parse("User-agent: *\nthis is not a record\nDisallow: /a\n")
    assert not robots.allowed(TOKEN, "/a")
    assert kinds(robots) == [(2, "not-a-record")]


def test_empty_body_allows_everything() -> None:
    # RFC 9309 §2.2.1: no matching group (here: none at all) -> no restriction.
    robots = parse(b"")
    assert robots.groups == ()
    assert robots.allowed(TOKEN, "/anything")
    assert robots.decide(TOKEN, "/anything").reason == "no-group"

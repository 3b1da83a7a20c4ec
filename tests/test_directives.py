"""Page-level directives, pure: META robots, X-Robots-Tag, unavailable_after, rel=nofollow."""

from __future__ import annotations

import calendar
import doctest

import pytest
from parsel import Selector
from w3lib.html import get_base_url

import scrapy_rep.core.directives
from scrapy_rep.core.directives import (
    HEAD_LIMIT,
    NO_DIRECTIVES,
    PageDirectives,
    directive_list,
    head_of,
    link_key,
    meta_robots,
    nofollow_only,
    page_directives,
    parse_date,
)

TOKEN = "testbot"
NOW = float(calendar.timegm((2026, 6, 1, 12, 0, 0)))  # the injected clock


def html(head: str, body: str = "") -> bytes:
    return f"<!doctype html><html><head>{head}</head><body>{body}</body></html>".encode()


def from_meta(head: str, token: str = TOKEN) -> PageDirectives:
    return page_directives(token, NOW, body=html(head))


def from_headers(*values: str, token: str = TOKEN) -> PageDirectives:
    return page_directives(token, NOW, headers=values)


# -- <meta> ------------------------------------------------------------------------------------


def test_meta_robots_noindex_nofollow() -> None:
    page = from_meta('<meta name="robots" content="noindex, nofollow">')
    assert page.noindex and page.nofollow
    assert page.source("nofollow") == '<meta name="robots">: nofollow'


def test_meta_with_the_token_name_applies_and_another_name_does_not() -> None:
    assert from_meta('<meta name="TestBot" content="nofollow">').nofollow
    other = from_meta('<meta name="otherbot" content="noindex, nofollow">')
    assert other == NO_DIRECTIVES


def test_meta_names_and_values_compare_case_insensitively() -> None:
    page = from_meta("<META NAME=ROBOTS CONTENT='NoIndex,NOFOLLOW'>")
    assert page.noindex and page.nofollow


def test_meta_index_follow_restricts_nothing() -> None:
    assert from_meta('<meta name="robots" content="index, follow, all">') == NO_DIRECTIVES


def test_several_meta_tags_combine_and_the_most_restrictive_wins() -> None:
    page = from_meta(
        '<meta name="robots" content="index, follow"><meta name="testbot" content="noindex">'
    )
    assert page.noindex and not page.nofollow
    assert page.source("noindex") == '<meta name="testbot">: noindex'


def test_meta_in_a_comment_or_script_is_not_a_tag() -> None:
    head = (
        '<!-- <meta name="robots" content="noindex"> -->'
        '<script>var s = \'<meta name="robots" content="nofollow">\';</script>'
    )
    assert from_meta(head) == NO_DIRECTIVES
    assert from_meta("<title><meta name=robots content=noindex></title>") == NO_DIRECTIVES
    # no scripts run here, so a <noscript> in the head holds tags
    assert from_meta('<noscript><meta name="robots" content="noindex"></noscript>').noindex


def test_meta_attributes_as_html_writes_them() -> None:
    page = from_meta("<meta content='noarchive,&#32;nosnippet' NAME = robots>")
    assert page.noarchive and page.nosnippet
    assert from_meta('<meta name="robots" name="x" content="noindex">').noindex
    assert from_meta('<meta data-x=">" name="robots" content="noindex">').noindex


def test_only_the_head_is_read() -> None:
    body = html("<title>t</title>", '<meta name="robots" content="noindex">')
    assert page_directives(TOKEN, NOW, body=body) == NO_DIRECTIVES


def test_head_is_bounded() -> None:
    filler = "<!--" + "x" * HEAD_LIMIT + "-->"
    late = html(filler + '<meta name="robots" content="noindex">')
    assert page_directives(TOKEN, NOW, body=late) == NO_DIRECTIVES
    early = html('<meta name="robots" content="noindex">' + filler)
    assert page_directives(TOKEN, NOW, body=early).noindex
    assert len(head_of(b"<head>" + b"a" * (3 * HEAD_LIMIT))) == HEAD_LIMIT


def test_head_without_a_hint_is_not_parsed_into_anything() -> None:
    assert meta_robots(html("<title>robot</title><meta name=x content=noindex>"), TOKEN) == []
    assert meta_robots(html('<meta name="testbot" content="none">'), TOKEN) == [("testbot", "none")]


def test_utf16_page() -> None:
    body = '<html><head><meta name="robots" content="nofollow"></head></html>'
    assert page_directives(TOKEN, NOW, body=body.encode("utf-16")).nofollow


# -- X-Robots-Tag --------------------------------------------------------------------------------


def test_header_without_prefix() -> None:
    page = from_headers("noindex")
    assert page.noindex and not page.nofollow
    assert page.source("noindex") == "X-Robots-Tag: noindex"


def test_header_with_our_prefix() -> None:
    page = from_headers("TESTBOT: nofollow")
    assert page.nofollow and not page.noindex
    assert page.source("nofollow") == "X-Robots-Tag (testbot:): nofollow"


def test_header_with_another_crawlers_prefix_does_not_apply() -> None:
    assert from_headers("otherbot: noindex, nofollow") == NO_DIRECTIVES


def test_a_prefix_holds_until_the_next_one_and_headers_combine() -> None:
    page = from_headers("otherbot: noindex, testbot: nofollow", "noarchive")
    assert page.nofollow and page.noarchive and not page.noindex
    assert list(directive_list("otherbot: none, testbot: nosnippet, noindex", TOKEN)) == [
        ("testbot", "nosnippet", ""),
        ("testbot", "noindex", ""),
    ]


def test_valued_directives_are_not_prefixes() -> None:
    page = from_headers("max-snippet: 20, max-image-preview: large, noindex")
    assert page.noindex
    assert list(directive_list("max-snippet: 20, noindex", TOKEN)) == [
        (None, "max-snippet", "20"),
        (None, "noindex", ""),
    ]


def test_none_is_noindex_and_nofollow() -> None:
    page = from_headers("none")
    assert page.noindex and page.nofollow
    assert page.source("noindex") == page.source("nofollow") == "X-Robots-Tag: none"


def test_noarchive_nosnippet_are_exposed() -> None:
    page = from_headers("noarchive, nosnippet")
    assert page.noarchive and page.nosnippet and not (page.noindex or page.nofollow)
    assert from_headers("nocache").noarchive  # Bing's spelling


def test_bytes_header_values_and_spaces_instead_of_commas() -> None:
    page = page_directives(TOKEN, NOW, headers=[b"noindex nofollow"])
    assert page.noindex and page.nofollow


def test_header_and_meta_combine() -> None:
    page = page_directives(
        TOKEN, NOW, headers=["nofollow"], body=html('<meta name="robots" content="noindex">')
    )
    assert page.noindex and page.nofollow
    assert page.source("noindex").startswith("<meta")
    assert page.source("nofollow").startswith("X-Robots-Tag")


# -- unavailable_after ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "date",
    [
        "2025-06-25",
        "2025-06-25T15:00:00Z",
        "2025-06-25T15:00:00+02:00",
        "25 Jun 2025 15:00:00 PST",  # RFC 822
        "Wed, 25 Jun 2025 15:00:00 GMT",  # RFC 1123: a comma inside
        "Wednesday, 25-Jun-25 15:00:00 GMT",  # RFC 850: a comma inside
    ],
)
def test_unavailable_after_in_the_past_is_noindex(date: str) -> None:
    page = from_headers(f"unavailable_after: {date}, nofollow")
    assert page.noindex and page.nofollow, page
    assert page.invalid_dates == ()
    assert page.unavailable_after is not None and page.unavailable_after < NOW


def test_unavailable_after_in_the_future_changes_nothing() -> None:
    page = from_headers("unavailable_after: Fri, 25 Jun 2027 15:00:00 GMT")
    assert not page.noindex
    assert page.unavailable_after == calendar.timegm((2027, 6, 25, 15, 0, 0))


def test_unavailable_after_is_read_in_meta_and_with_a_prefix() -> None:
    assert from_meta('<meta name="robots" content="unavailable_after: 2020-01-01">').noindex
    assert from_headers("testbot: unavailable_after: 1 Jan 2020 00:00:00 GMT").noindex
    assert not from_headers("otherbot: unavailable_after: 1 Jan 2020 00:00:00 GMT").noindex


def test_the_clock_decides() -> None:
    header = ["unavailable_after: 2026-06-01T12:00:01Z"]
    assert not page_directives(TOKEN, NOW, headers=header).noindex
    assert page_directives(TOKEN, NOW + 1, headers=header).noindex


def test_invalid_date_is_ignored_and_reported() -> None:
    page = from_headers("unavailable_after: next tuesday, maybe, nofollow")
    assert not page.noindex
    assert page.nofollow  # the list goes on after the unreadable date
    assert page.invalid_dates == ("next tuesday, maybe",)
    assert from_headers("unavailable_after: 2025-02-30").invalid_dates == ("2025-02-30",)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2010-06-25", (2010, 6, 25, 0, 0, 0)),
        ("2010-06-25T15:00:00-01:30", (2010, 6, 25, 16, 30, 0)),
        ("25 Jun 2010", (2010, 6, 25, 0, 0, 0)),
        ("Fri, 25 Jun 2010 15:00:00 +0100", (2010, 6, 25, 14, 0, 0)),
        ("Friday, 25-Jun-10 15:00:00 GMT", (2010, 6, 25, 15, 0, 0)),
        ("Fri Jun 25 15:00:00 2010", (2010, 6, 25, 15, 0, 0)),
    ],
)
def test_parse_date(text: str, expected: tuple[int, ...]) -> None:
    assert parse_date(text) == calendar.timegm((*expected, 0, 0, 0))


@pytest.mark.parametrize(
    "text", ["", "soon", "31 Feb 2010 10:00:00", "2010-13-01", "2010-06-25T25:00"]
)
def test_parse_date_refuses(text: str) -> None:
    assert parse_date(text) is None


def test_record_is_serialisable() -> None:
    page = from_headers("none, unavailable_after: bad")
    assert page.to_dict() == {
        "noindex": True,
        "nofollow": True,
        "noarchive": False,
        "nosnippet": False,
        "unavailable_after": None,
        "sources": [["noindex", "X-Robots-Tag: none"], ["nofollow", "X-Robots-Tag: none"]],
        "invalid_dates": ["bad"],
    }


def test_module_examples_run() -> None:
    failures, tried = doctest.testmod(scrapy_rep.core.directives)
    assert tried > 0 and failures == 0


# -- rel=nofollow --------------------------------------------------------------------------------


def only_nofollow(body: str, url: str = "http://example.com/dir/page") -> frozenset[str]:
    root = Selector(text=body).root
    return nofollow_only(root, get_base_url(body, url), "utf-8")


def test_rel_nofollow_links_resolved_and_compared_without_fragment() -> None:
    found = only_nofollow(
        '<a href="a#top" rel="nofollow">a</a>'
        '<a href=" /b " rel="NoFollow noopener">b</a>'
        '<area href="c" rel="external,nofollow">'
        '<a href="d" rel="ugc">d</a><a href="e" rel="sponsored">e</a>'
        '<a href="f" rel="nofollow">f</a><a href="f#again">f again, followed</a>'
        '<a href="/ü?q=ü" rel="nofollow">unicode</a>'
    )
    assert found == {
        "http://example.com/dir/a",
        "http://example.com/b",
        "http://example.com/dir/c",
        "http://example.com/%C3%BC?q=%C3%BC",
    }


def test_rel_nofollow_links_use_base_href() -> None:
    found = only_nofollow(
        '<html><head><base href="http://cdn.example.org/x/"></head>'
        '<body><a href="y" rel="nofollow">y</a></body></html>'
    )
    assert found == {"http://cdn.example.org/x/y"}


def test_link_key_drops_the_fragment() -> None:
    assert link_key("http://h/p?q=1#f") == "http://h/p?q=1"


# -- Robots-Tag (draft-illyes-repext) ---------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "noindex", "nofollow", "said"),
    [
        # the draft's own example: rules for everyone, none for ExampleBot
        ([b"*;noindex;nosnippet, ExampleBot"], True, False, "Robots-Tag (*): noindex"),
        ([b"testbot;nofollow"], False, True, "Robots-Tag (testbot): nofollow"),
        ([b"TestBot;nofollow"], False, True, "Robots-Tag (TestBot): nofollow"),
        ([b"otherbot;noindex;nofollow"], False, False, ""),
        ([b"otherbot;noindex, testbot;nofollow"], False, True, "Robots-Tag (testbot): nofollow"),
        # * and the token add up; one member's rules across two lines add up
        ([b"*;noindex", b"testbot;nofollow"], True, True, "Robots-Tag (*): noindex"),
        ([b"testbot;noindex, testbot;nofollow"], True, True, "Robots-Tag (testbot): noindex"),
        ([b"*;none"], True, True, "Robots-Tag (*): none"),
        ([b"testbot;noindex=?0;nofollow"], False, True, "Robots-Tag (testbot): nofollow"),
        # legacy forms: a bare directive is for everyone; a line that is no List is X-Robots-Tag's
        ([b"noindex, nofollow"], True, True, "Robots-Tag: noindex"),
        ([b"testbot: nofollow"], False, True, "Robots-Tag (testbot:): nofollow"),
        ([b"otherbot: noindex"], False, False, ""),
        ([b"unavailable_after: 25 Jun 2010 15:00:00 GMT"], True, False, "Robots-Tag: unavail"),
        ([b'testbot;unavailable_after="2010-06-25"'], True, False, "Robots-Tag (testbot): unav"),
        # a broken line does not silence the good one
        ([b"*;noindex,,", b"testbot;nofollow"], False, True, "Robots-Tag (testbot): nofollow"),
    ],
)
def test_robots_tag_members_for_the_token_and_star_add_up(
    values: list[bytes], noindex: bool, nofollow: bool, said: str
) -> None:
    page = page_directives(TOKEN, NOW, robots_tag=values)
    assert (page.noindex, page.nofollow) == (noindex, nofollow)
    first = page.source("noindex" if noindex else "nofollow")
    assert first.startswith(said)


def test_robots_tag_and_x_robots_tag_add_up() -> None:
    page = page_directives(TOKEN, NOW, headers=[b"noindex"], robots_tag=[b"testbot;nofollow"])
    assert page.noindex and page.nofollow
    assert page.source("noindex") == "X-Robots-Tag: noindex"
    assert page.source("nofollow") == "Robots-Tag (testbot): nofollow"


def test_robots_tag_is_read_up_to_its_limit() -> None:
    from scrapy_rep.core.fields import FIELD_OCTETS

    filler = b"otherbot;noindex, " * (FIELD_OCTETS // 18)
    page = page_directives(TOKEN, NOW, robots_tag=[filler + b"x;a", b"testbot;nofollow"])
    assert not page.nofollow  # past the first 8 KiB: not read
    assert page_directives(TOKEN, NOW, robots_tag=[b"testbot;nofollow"]).nofollow

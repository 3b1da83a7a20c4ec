"""RFC 9309 §2.5 limits (500 KiB, long lines) and the parser's diagnostics."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scrapy_rep.robotstxt import parse
from scrapy_rep.robotstxt import parser as parser_module

TOKEN = "mybot"
#: RFC 9309 §2.5: "a maximum file size ... MUST be at least 500 kibibytes (KiB)".
#: Written out here (not imported) so that a change of the engine's cap fails.
CAP = 500 * 1024  # 512,000 octets
LINE_CAP = 16_663  # Google robots.cc kMaxLineLen - 1 (2083 * 8 - 1)


def kinds(robots) -> list[tuple[int, str]]:
    return [(d.line, d.kind) for d in robots.diagnostics]


def padded(head: bytes, tail: bytes, total: int, eol: bytes = b"\n") -> bytes:
    """``head`` + comment lines + ``tail``, exactly ``total`` octets long."""
    filler = total - len(head) - len(tail)
    assert filler > 10
    lines = []
    while filler > 0:
        chunk = min(filler, 1000)
        # a comment line of `chunk` octets, eol included
        lines.append(b"#" * (chunk - len(eol)) + eol if chunk > len(eol) else b" " * chunk)
        filler -= chunk
    body = head + b"".join(lines) + tail
    assert len(body) == total
    return body


# --- the 500 KiB cap ------------------------------------------------------------------


def test_a_file_of_exactly_the_cap_is_read_whole() -> None:
    # RFC 9309 §2.5: the first 500 KiB (here 512,000 octets) are parsed.
    body = padded(b"User-agent: *\n", b"Disallow: /last\n", CAP)
    robots = parse(body)
    assert not robots.truncated
    assert robots.size == CAP
    assert not robots.allowed(TOKEN, "/last")
    assert robots.diagnostics == ()


def test_content_after_the_cap_is_ignored() -> None:
    # RFC 9309 §2.5: crawlers MAY stop after the limit; a rule that ends right
    # at octet 512,000 applies, one after it does not.
    body = padded(b"User-agent: *\n", b"Disallow: /before\n", CAP) + b"Disallow: /after\n"
    robots = parse(body)
    assert robots.truncated
    assert robots.size == CAP + len(b"Disallow: /after\n")
    assert not robots.allowed(TOKEN, "/before")
    assert robots.allowed(TOKEN, "/after")
    truncated = [d for d in robots.diagnostics if d.kind == "truncated"]
    assert len(truncated) == 1
    assert str(robots.size) in truncated[0].text


@pytest.mark.parametrize(
    "eol",
    [pytest.param(b"\n", id="LF"), pytest.param(b"\r\n", id="CRLF"), pytest.param(b"\r", id="CR")],
)
def test_a_line_cut_by_the_cap_is_dropped(eol: bytes) -> None:
    # RFC 9309 §2.5 + safety: a partial "Disallow: /private" must not become
    # "Disallow: /" (which would block the whole site). Holds for every NL
    # of RFC 9309 §2.2, CR alone included.
    head = b"User-agent: *" + eol
    keep = b"Disallow: /kept" + eol
    cut_line = b"Disallow: /private"
    # The cap falls right after "Disallow: /" of the last line.
    split = len(b"Disallow: /")
    body = padded(head, keep + cut_line[:split], CAP, eol) + cut_line[split:] + eol
    robots = parse(body)
    assert robots.truncated
    assert not robots.allowed(TOKEN, "/kept")
    assert robots.allowed(TOKEN, "/public")
    assert robots.allowed(TOKEN, "/private")
    patterns = [rule.pattern for group in robots.groups for rule in group.rules]
    assert patterns == ["/kept"]
    # The truncation is reported on the first line that was not read.
    kept_lines = body[:CAP].count(b"\n") if eol != b"\r" else body[:CAP].count(b"\r")
    (truncated,) = [d for d in robots.diagnostics if d.kind == "truncated"]
    assert truncated.line == kept_lines + 1


def test_one_octet_over_the_cap_is_truncated() -> None:
    # RFC 9309 §2.5: the limit is exact.
    body = padded(b"User-agent: *\n", b"Disallow: /a\n", CAP + 1)
    robots = parse(body)
    assert robots.truncated
    assert robots.size == CAP + 1


def test_no_line_break_before_the_cap_does_not_raise() -> None:
    # RFC 9309 §2.5 + Google robots.cc line cap: one enormous line.
    robots = parse(b"User-agent: *\nDisallow: /" + b"a" * (CAP + 100))
    assert robots.truncated
    assert isinstance(robots.allowed(TOKEN, "/a"), bool)


# --- long lines -----------------------------------------------------------------------


def test_long_lines_are_cut_and_reported() -> None:
    # Google robots.cc: lines are cut at 2083 * 8 - 1 characters (checked with
    # jwm.robotstxt on ASCII lines: same answers on both sides of the cut).
    long_line = "Disallow: /" + "a" * 20_000
    robots = parse(f"User-agent: *\n{long_line}\nDisallow: /next\n")
    (rule, next_rule) = robots.groups[0].rules
    assert len("Disallow: ") + len(rule.pattern) == LINE_CAP
    assert kinds(robots) == [(2, "line-too-long")]
    assert str(len(long_line)) in robots.diagnostics[0].text
    # The cut pattern is a prefix: longer paths still match, shorter do not.
    assert not robots.allowed(TOKEN, "/" + "a" * 20_000)
    assert not robots.allowed(TOKEN, "/" + "a" * (LINE_CAP - 11))
    assert robots.allowed(TOKEN, "/" + "a" * (LINE_CAP - 12))
    # The next line is read normally.
    assert next_rule.line == 3 and not robots.allowed(TOKEN, "/next")


def test_a_line_of_exactly_the_cap_is_not_cut() -> None:
    # Google robots.cc kMaxLineLen: a line of 16,663 characters is whole.
    line = "Disallow: /" + "b" * (LINE_CAP - len("Disallow: /"))
    robots = parse(f"User-agent: *\n{line}\n")
    assert robots.diagnostics == ()
    assert len(robots.groups[0].rules[0].pattern) == LINE_CAP - len("Disallow: ")


# --- diagnostics ----------------------------------------------------------------------


DIAGNOSTIC_CASES = [
    # (kind, body, line, source of the expectation)
    ("line-too-long", "User-agent: *\n#" + "x" * 17_000 + "\n", 2, "Google robots.cc kMaxLineLen"),
    ("invalid-utf8", b"User-agent: *\n\nDisallow: /\xff\n", 3, "RFC 9309 §2.2 (UTF-8)"),
    ("not-a-record", "User-agent: *\nDisallow /a /b\n", 2, "RFC 9309 §2.2 grammar"),
    ("unknown-directive", "User-agent: *\nNoindex: /a\n", 2, "RFC 9309 §2.2.4"),
    ("typo", "User-agent: *\n\n\nDisalow: /a\n", 4, "Google robots.cc kAllowFrequentTypos"),
    ("missing-colon", "User-agent: *\nDisallow /a\n", 2, "Google robots.cc GetKeyAndValueFrom"),
    ("invalid-user-agent", "User-agent: */1\nDisallow: /a\n", 1, "RFC 9309 §2.2.1"),
    ("invalid-sitemap", "User-agent: *\nSitemap: /sitemap.xml\n", 2, "sitemaps.org: absolute URL"),
    ("outside-group", "Disallow: /a\nUser-agent: *\n", 1, "RFC 9309 §2.2 grammar"),
    ("pattern-without-slash", "User-agent: *\nDisallow: a\n", 2, "RFC 9309 §2.2 path-pattern"),
    ("invalid-crawl-delay", "User-agent: *\nCrawl-delay: soon\n", 2, "de-facto Crawl-delay"),
    ("invalid-request-rate", "User-agent: *\nRequest-rate: fast\n", 2, "de-facto Request-rate"),
    ("truncated", b"User-agent: *\n" + b"#" * (CAP + 10) + b"\n", 2, "RFC 9309 §2.5"),
    ("nul-octet", "User-agent: *\nDisallow: /a\0b\n", 2, "Google robots.cc: C strings"),
    ("utf-16", "User-agent: *\nDisallow: /\n".encode("utf-16"), 1, "RFC 9309 §2.2 (UTF-8)"),
    ("diagnostics-dropped", "x\n" * 60, 61, "scrapy_rep API: bounded"),
    ("invalid-license", "License: license.xml\n", 1, "RSL: an absolute URL"),
    ("content-signal-outside-group", "Content-Signal: ai-train=no\n", 1, "docs/deviations.md"),
    (
        "content-usage-without-preference",
        "User-agent: *\nContent-Usage: /a/\n",
        2,
        "aipref attach: usage-pref is required",
    ),
]


@pytest.mark.parametrize(
    ("kind", "body", "line"),
    [pytest.param(kind, body, line, id=kind) for kind, body, line, _ in DIAGNOSTIC_CASES],
)
def test_each_diagnostic_kind_with_its_line_number(kind: str, body: str | bytes, line: int) -> None:
    robots = parse(body)
    assert (line, kind) in kinds(robots)
    diagnostic = next(d for d in robots.diagnostics if d.kind == kind)
    assert str(diagnostic).startswith(f"line {line}: {kind}: ")


def test_every_kind_the_parser_can_report_is_covered() -> None:
    # Keeps DIAGNOSTIC_CASES complete when the parser learns a new kind.
    source = Path(parser_module.__file__).read_text(encoding="utf-8")
    produced = set(re.findall(r'(?:note|Diagnostic)\([^,]+, "([a-z0-9-]+)"', source))
    assert produced == {case[0] for case in DIAGNOSTIC_CASES}


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_file_is_reported_once_and_read_as_empty(encoding: str) -> None:
    # RFC 9309 §2.2: robots.txt is UTF-8. A UTF-16 file (with its BOM) is not
    # read, as Google's parser reads nothing of it either; one diagnostic says
    # why, so that it can be logged once per origin.
    body = "\ufeffUser-agent: *\nDisallow: /\n".encode(encoding)
    robots = parse(body)
    assert robots.allowed(TOKEN, "/x")
    assert robots.groups == ()
    (diagnostic,) = robots.diagnostics
    assert diagnostic.kind == "utf-16"
    assert "UTF-16 byte order mark" in str(diagnostic)
    assert "UTF-8" in str(diagnostic)
    assert robots.size == len(body)


def test_diagnostics_are_bounded_and_the_rest_counted() -> None:
    # scrapy_rep API: an HTML page served as robots.txt has a diagnostic per
    # line; the first MAX_DIAGNOSTICS are kept and the rest counted, and the
    # truncation note is always kept.
    body = b"<p>\n" * 200_000
    robots = parse(body)
    assert len(robots.diagnostics) == parser_module.MAX_DIAGNOSTICS + 2
    *kept, dropped, truncated = robots.diagnostics
    assert {d.kind for d in kept} == {"not-a-record"}
    assert dropped.kind == "diagnostics-dropped"
    assert dropped.text.startswith(f"{128_000 - parser_module.MAX_DIAGNOSTICS} more")
    assert truncated.kind == "truncated"


def test_typo_diagnostic_names_the_key() -> None:
    # Google robots.cc kAllowFrequentTypos: understood, but worth telling.
    robots = parse("User-agent: *\nDissallow: /a\n")
    (diagnostic,) = robots.diagnostics
    assert "Dissallow" in diagnostic.text
    assert not robots.allowed(TOKEN, "/a")


def test_several_diagnostics_keep_file_order() -> None:
    # scrapy_rep API: diagnostics are listed by line.
    body = "Allow: /x\nUser-agent: *\nDisalow /a\nwhat\nCrawl-delay: -1\nSitemap: nope\n"
    robots = parse(body)
    assert kinds(robots) == [
        (1, "outside-group"),
        (3, "typo"),
        (3, "missing-colon"),
        (4, "not-a-record"),
        (5, "invalid-crawl-delay"),
        (6, "invalid-sitemap"),
    ]


def test_diagnostic_text_is_bounded() -> None:
    # scrapy_rep API: a diagnostic keeps at most 200 characters of its line.
    robots = parse("User-agent: *\nDisallow " + "/" + "x" * 5000 + " y\n")
    (diagnostic,) = robots.diagnostics
    assert diagnostic.kind == "not-a-record"
    assert len(diagnostic.text) == 201 and diagnostic.text.endswith("…")


def test_invalid_utf8_diagnostic_text_is_printable() -> None:
    # scrapy_rep API: surrogate escapes never leak into diagnostic text.
    robots = parse(b"User-agent: *\nDisallow: /\xff\n")
    (diagnostic,) = robots.diagnostics
    assert "\ufffd" in diagnostic.text
    diagnostic.text.encode("utf-8")  # would raise on a lone surrogate


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        ("\x1b[31mred", "\\x1b[31mred"),  # an ANSI escape would colour the terminal
        ("bell\x07", "bell\\x07"),
        ("del\x7f", "del\\x7f"),
        ("c1\x9b2J", "c1\\x9b2J"),
        ("rtl\u202eevil", "rtl\\u202eevil"),
        ("tab\tok é", "tab\tok é"),
    ],
)
def test_diagnostic_text_escapes_control_characters(line: str, shown: str) -> None:
    # Diagnostics are printed and logged, so their text is made printable
    # where it is built.
    robots = parse(f"User-agent: *\n{line}\n")
    (diagnostic,) = robots.diagnostics
    assert diagnostic.text == shown
    assert str(diagnostic).replace("\t", " ").isprintable()


def test_a_clean_file_has_no_diagnostics() -> None:
    # Every record below is standard (RFC 9309 §2.2) or a well-formed extension.
    body = (
        "# comment\n"
        "User-agent: mybot\n"
        "User-agent: *\n"
        "Allow: /a/b\n"
        "Disallow: /a\n"
        "Disallow:\n"
        "Crawl-delay: 2.5\n"
        "Request-rate: 1/10s\n"
        "\n"
        "Sitemap: https://example.com/sitemap.xml\n"
    )
    assert parse(body).diagnostics == ()

"""Differential test against Google's robots.txt parser (robots.cc via jwm.robotstxt).

Two halves:

* generated robots.txt files and URLs, drawn (seeded, so deterministic) from a
  vocabulary that stays where we mean to agree with Google -- ASCII paths
  without '%', no /robots.txt URL, lines shorter than the line cap. Both
  engines must give the same answer, and when a rule decided, Google's
  matching line must name a rule as heavy as ours and of the same kind;
* ``DEVIATIONS``: the known, deliberate disagreements. Each row is asserted on
  *both* sides, so the table (and docs/deviations.md, checked against it)
  stays true.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import pytest
from jwm.robotstxt import googlebot

from scrapy_rep.robotstxt import RobotsTxt, normalise_path, parse
from scrapy_rep.robotstxt.paths import path_of
from tests.support.examples import examples
from tests.support.matching import reference

DOCS = Path(__file__).resolve().parent.parent / "docs" / "deviations.md"
TOKENS = ("mybot", "other")


def google(body: str | bytes, url: str, token: str = "mybot") -> tuple[bool, int]:
    """Google's answer and matching line (0: none)."""
    matcher = googlebot.RobotsMatcher()
    allowed = matcher.OneAgentAllowedByRobots(body, token, url)
    return bool(allowed), matcher.matching_line()


def ours(robots: RobotsTxt, url: str, token: str = "mybot") -> tuple[bool, int]:
    """Our answer and the deciding rule's line (0: none)."""
    verdict = robots.decide(token, url)
    return verdict.allowed, verdict.rule.line if verdict.rule else 0


# --- generated agreement --------------------------------------------------------------

AGENTS = [
    "mybot",
    "MyBot",
    "MYBOT",
    "mybot/1.0",
    "mybot (+https://example.com)",
    "mybot2",
    "myb",
    "other",
    "otherbot/2.1",
    "*",
    "* (everyone)",
    "*x",
    "",
]
AGENT_KEYS = ["User-agent", "user-agent", "USER-AGENT", "useragent", "User agent"]
RULE_KEYS = [
    "Allow",
    "allow",
    "ALLOW",
    "Disallow",
    "disallow",
    "Disalow",
    "dissallow",
    "Disallowed",
]
OTHER_RECORDS = [
    "Sitemap: https://example.com/sitemap.xml",
    "Crawl-delay: 3",
    "Request-rate: 1/5",
    "Host: example.com",
    "Noindex: /a",
    "# just a comment",
    "",
    "garbage line here",
]
PATTERNS = [
    "",
    "/",
    "/a",
    "/a/",
    "/ab",
    "/abc",
    "/a*",
    "/*b",
    "/a$",
    "/a/b",
    "/a?x",
    "/$",
    "*",
    "*$",
    "/*$",
    "/**",
    "/a*b$",
    "/a*b*c",
    "/*.php$",
    "/*.php",
    "/*?",
    "/a$b",
    "/a$$",
    "/*/b",
    "/a/*/",
    "/index.html",
    "/a/index.html",
    "/a/index.htm",
    "/*/index.html",
    "/b/index.html$",
    "a",
    "b/c",
    "?x",
    "/~x",
    "/a-b_c.d",
    "/A",
]
PATHS = [
    "/",
    "/a",
    "/a/",
    "/ab",
    "/abc",
    "/aab",
    "/a/b",
    "/a/b/c",
    "/a/x/",
    "/a/x/b",
    "/b",
    "/b/",
    "/ba",
    "/x.php",
    "/a.php",
    "/x.php?y",
    "/a?x",
    "/a?x=1",
    "/a$b",
    "/a$",
    "/?",
    "/a/index.html",
    "/index.html",
    "/b/index.html",
    "/ab/index.htm",
    "/~x",
    "/~x/y",
    "/a-b_c.d",
    "/A",
    "/A/b",
    "/a;p",
]
URL_FORMS = [
    "https://example.com{}",
    "http://example.com:8080{}",
    "{}",
    "https://example.com{}#frag",
]


SEPARATORS = [": ", ":", " : ", ":\t"]


def random_body(rng: random.Random) -> str:
    lines = []
    for _ in range(rng.randint(0, 14)):
        roll = rng.random()
        if roll < 0.28:
            line = f"{rng.choice(AGENT_KEYS)}{rng.choice(SEPARATORS)}{rng.choice(AGENTS)}"
        elif roll < 0.85:
            key, pattern = rng.choice(RULE_KEYS), rng.choice(PATTERNS)
            separator = rng.choice(SEPARATORS)
            if pattern and rng.random() < 0.1:
                separator = rng.choice([" ", "\t"])  # Google's missing-colon leniency
            line = f"{key}{separator}{pattern}"
        else:
            line = rng.choice(OTHER_RECORDS)
        if rng.random() < 0.1:
            line += rng.choice([" # comment", "#c", "\t# x"])
        if rng.random() < 0.1:
            line = rng.choice([" ", "\t", "  "]) + line + rng.choice([" ", "\t", ""])
        lines.append(line)
    eol = rng.choice(["\n", "\r\n", "\r"])
    body = eol.join(lines) + (eol if rng.random() < 0.8 else "")
    return ("\ufeff" + body) if rng.random() < 0.05 else body


def check_agreement(body: str, url: str, token: str) -> None:
    robots = parse(body)
    verdict = robots.decide(token, url)
    g_allowed, g_line = google(body, url, token)
    context = (
        f"\nbody={body!r}\nurl={url!r} token={token!r}\nours={verdict}\ngoogle={g_allowed, g_line}"
    )
    assert verdict.allowed == g_allowed, context

    rules = {rule.line: rule for group in verdict.groups for rule in group.rules}
    if verdict.rule is None:
        # Google also reports an empty Allow/Disallow (priority 0); we report none.
        assert g_line == 0 or rules[g_line].pattern == "", context
        return
    path = normalise_path(path_of(url))
    google_rule = rules.get(g_line)
    assert google_rule is not None, context
    # Equally heavy rules of one kind may be cited differently (see DEVIATIONS).
    assert reference([google_rule], path) == reference([verdict.rule], path), context


@pytest.mark.parametrize("seed", range(12))
def test_generated_files_agree_with_google(seed: int) -> None:
    # Google robots.cc (checked with jwm.robotstxt) and RFC 9309 agree on all
    # of this vocabulary; we must give the same answers.
    rng = random.Random(seed)
    for _ in range(examples(400)):
        body = random_body(rng)
        for path in rng.sample(PATHS, 5):
            url = rng.choice(URL_FORMS).format(path)
            check_agreement(body, url, rng.choice(TOKENS))


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"])
def test_realistic_file_agrees_with_google(eol: str) -> None:
    # A typical hand-written file, every path of the vocabulary, both tokens.
    body = eol.join(
        [
            "\ufeff# robots.txt for example.com",
            "User-agent: *",
            "Disallow: /a/",
            "Allow: /a/index.html",
            "Disallow: /*.php$",
            "Disallow: /*?",
            "",
            "User-agent: MyBot/2.0",
            "User-agent: other",
            "Crawl-delay: 5",
            "Allow: /a/b",
            "Disallow: /a",
            "disalow: /x",
            "Sitemap: https://example.com/sitemap.xml",
            "",
        ]
    )
    for path in PATHS:
        for token in (*TOKENS, "third"):
            check_agreement(body, f"https://example.com{path}", token)


@pytest.mark.parametrize(
    "body",
    [
        "User-agent: *\nDisallow: /a\0bc\n",
        "User-agent: *\nDisallow: /a\0\nAllow: /ab\0x\n",
        "User-agent: *\nDisallow\0: /a\nDisallow: /b\n",
        "User-agent: my\0bot\nDisallow: /a\nUser-agent: *\nDisallow: /b\n",
        "User-agent: *\0\nDisallow: /a # x\0y\n",
    ],
)
def test_nul_ends_the_line_as_in_google(body: str) -> None:
    # Google robots.cc ends a line at NUL; so do we.
    for path in ("/", "/a", "/ab", "/abc", "/ax", "/b", "/a\0bc"):
        for token in TOKENS:
            check_agreement(body, f"https://example.com{path}", token)


# --- the deliberate deviations --------------------------------------------------------


@dataclass(frozen=True)
class Deviation:
    id: str
    body: str | bytes
    url: str
    ours: tuple[bool, int]  # (allowed, line of the deciding rule or 0)
    google: tuple[bool, int]  # (allowed, Google's matching_line())
    reason: str
    shown: str = ""  # how docs/deviations.md shows a body too large to print
    shown_url: str = ""  # ... and a URL too long to print

    def body_text(self) -> str:
        if self.shown:
            return self.shown
        assert isinstance(self.body, str)
        return repr(self.body)[1:-1]

    def url_text(self) -> str:
        return self.shown_url or self.url


_PAD = "User-agent: *\n" + ("#" * 999 + "\n") * 600
_LONG = "User-agent: *\nDisallow: /" + "é" * 9000 + "\n"

DEVIATIONS = [
    Deviation(
        "robots-txt",
        "User-agent: *\nDisallow: /\n",
        "https://example.com/robots.txt",
        (True, 0),
        (False, 2),
        "RFC 9309 §2.2.2: /robots.txt is implicitly allowed.",
    ),
    Deviation(
        "robots-txt-encoded",
        "User-agent: *\nDisallow: /\n",
        "https://example.com/%72obots.txt",
        (True, 0),
        (False, 2),
        "We normalise before the /robots.txt check: %72 is 'r' (RFC 3986 §2.3).",
    ),
    Deviation(
        "tilde-in-url",
        "User-agent: *\nDisallow: /~joe/\n",
        "https://example.com/%7Ejoe/x",
        (False, 2),
        (True, 0),
        "RFC 9309 §2.2.2 / RFC 3986 §6.2.2.2: %7E and '~' are the same (unreserved).",
    ),
    Deviation(
        "tilde-in-rule",
        "User-agent: *\nDisallow: /%7Ejoe/\n",
        "https://example.com/~joe/x",
        (False, 2),
        (True, 0),
        "The same, the other way round: patterns are normalised too.",
    ),
    Deviation(
        "unreserved-escapes",
        "User-agent: *\nDisallow: /foo/bar/baz\n",
        "https://example.com/foo/bar/%62%61%7A",
        (False, 2),
        (True, 0),
        'RFC 9309 §2.2.2 table: "/foo/bar/%62%61%7A" is matched as "/foo/bar/baz".',
    ),
    Deviation(
        "non-ascii-url",
        "User-agent: *\nDisallow: /café\n",
        "https://example.com/café",
        (False, 2),
        (True, 0),
        "RFC 9309 §2.2.2: non-ASCII is compared UTF-8 percent-encoded; Google expects "
        "the caller to have encoded the URL and compares raw octets.",
    ),
    Deviation(
        "lower-case-hex-in-url",
        "User-agent: *\nDisallow: /caf%C3%A9\n",
        "https://example.com/caf%c3%a9",
        (False, 2),
        (True, 0),
        "RFC 3986 §6.2.2.1: hex digits are case-insensitive; Google upper-cases them "
        "only in patterns.",
    ),
    Deviation(
        "space-encoded-in-url",
        "User-agent: *\nDisallow: /a b\n",
        "https://example.com/a%20b",
        (False, 2),
        (True, 0),
        "A space (or control character) is compared as its %XX escape on both sides.",
    ),
    Deviation(
        "stray-percent",
        "User-agent: *\nDisallow: /%zz\n",
        "https://example.com/%25zz",
        (False, 2),
        (True, 0),
        "A '%' that starts no escape is a literal '%', i.e. %25 (RFC 3986 §2.4).",
    ),
    Deviation(
        "raw-pipe-in-rule",
        "User-agent: *\nDisallow: /a|b\n",
        "https://example.com/a%7Cb",
        (False, 2),
        (True, 0),
        "Characters RFC 3986 does not allow raw in a path or query (space, controls, "
        "non-ASCII, double quote, angle and square brackets, braces, backslash, caret, "
        "backtick, pipe) are compared percent-encoded on both sides, the form Scrapy "
        "sends; Google encodes only the non-ASCII octets of a rule.",
    ),
    Deviation(
        "raw-brackets-in-query",
        "User-agent: *\nDisallow: /*?f=[0]\n",
        "https://example.com/s?f=%5B0%5D",
        (False, 2),
        (True, 0),
        "The same for '[' and ']', which Scrapy encodes in paths and queries.",
    ),
    Deviation(
        "encoded-star-in-rule",
        "User-agent: *\nDisallow: /a%2Ab\n",
        "https://example.com/a*b",
        (False, 2),
        (True, 0),
        "RFC 9309 §2.2.3 (Figure 6): %2A in a pattern matches a literal '*' in the URL; "
        "Google matches %2A only against %2A.",
    ),
    Deviation(
        "encoded-dollar-in-rule",
        "User-agent: *\nDisallow: /foo-%24\n",
        "https://example.com/foo-$",
        (False, 2),
        (True, 0),
        "RFC 9309 §2.2.3 (Figure 6): %24 in a pattern matches a literal '$' in the URL; "
        "Google matches %24 only against %24.",
    ),
    Deviation(
        "scheme-relative-url",
        "User-agent: *\nDisallow: /a\n",
        "//example.com/a",
        (True, 0),
        (False, 2),
        'Anything starting with "/" is taken as a path ("//example.com/a"); Google '
        "reads a network-path reference. Pass absolute URLs.",
    ),
    Deviation(
        "url-without-scheme",
        "User-agent: *\nDisallow: /a\n",
        "example.com/a",
        (True, 0),
        (False, 2),
        'Neither an absolute URL nor a path: we read the relative path "/example.com/a", '
        "Google guesses a host. Pass absolute URLs.",
    ),
    Deviation(
        "semicolon-after-host",
        "User-agent: *\nDisallow: /;a\n",
        "http://example.com;a",
        (True, 0),
        (False, 2),
        "RFC 3986 §3.2: the authority ends at '/', '?' or '#' only; Google also "
        "starts the path at ';'.",
    ),
    Deviation(
        "size-cap",
        _PAD + "Disallow: /a\n",
        "https://example.com/a",
        (True, 0),
        (False, 602),
        "RFC 9309 §2.5: we read the first 500 KiB (512,000 octets); Google's library "
        "has no cap of its own.",
        shown=r"User-agent: *\n + 600,000 octets of comments + Disallow: /a\n",
    ),
    Deviation(
        "line-cap-in-octets",
        _LONG,
        "https://example.com/" + "%C3%A9" * 8500,
        (True, 0),
        (False, 2),
        "Lines are cut at 16,663 characters here, at 16,663 octets in Google; this only "
        "shows on non-ASCII lines longer than about 4,000 characters.",
        shown=r"User-agent: *\nDisallow: /(é × 9000)\n",
        shown_url="https://example.com/(%C3%A9 × 8500)",
    ),
    Deviation(
        "tie-cites-another-rule",
        "User-agent: *\nDisallow: /a*\nDisallow: /ab\n",
        "https://example.com/ab",
        (False, 3),
        (False, 2),
        "Same answer; of equally heavy rules of one kind we cite the one with the longer "
        "literal prefix, Google the first in the file.",
    ),
    Deviation(
        "empty-disallow-cited",
        "User-agent: *\nDisallow:\n",
        "https://example.com/x",
        (True, 0),
        (True, 2),
        "Same answer; Google reports the empty Disallow as matching (priority 0), we "
        "report that no rule matched (RFC 9309 §2.2.2: it disallows nothing).",
    ),
]


@pytest.mark.parametrize("row", DEVIATIONS, ids=[row.id for row in DEVIATIONS])
def test_deviation_holds_on_both_sides(row: Deviation) -> None:
    # Each row is a fact about both engines; if either changes, the row (and
    # docs/deviations.md) must be revisited.
    assert ours(parse(row.body), row.url) == row.ours, "our side changed"
    assert google(row.body, row.url) == row.google, "Google's side changed"
    assert row.ours != row.google


def _answer(side: tuple[bool, int]) -> str:
    allowed, line = side
    word = "allowed" if allowed else "disallowed"
    return f"{word} (line {line})" if line else word


def markdown_rows() -> list[str]:
    """The deviation table as docs/deviations.md shows it, one row per line."""
    rows = []
    for row in DEVIATIONS:
        cells = [
            f"`{row.id}`",
            f"`{row.body_text()}`",
            f"`{row.url_text()}`",
            _answer(row.ours),
            _answer(row.google),
            row.reason,
        ]
        rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return rows


def test_docs_table_matches_deviations() -> None:
    # docs/deviations.md must show exactly these rows, in this order (in its first part:
    # the sections after it list other choices, in tables of their own).
    text = DOCS.read_text(encoding="utf-8").split("\n## ", 1)[0]
    table = [line for line in text.splitlines() if line.startswith("| `")]
    assert table == markdown_rows()

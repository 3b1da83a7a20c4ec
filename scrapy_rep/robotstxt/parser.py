"""robots.txt bytes -> groups and rules with their line numbers, per RFC 9309, lenient
where Google is. Never raises: what is not understood becomes a :class:`Diagnostic`.

Crawl-delay, Request-rate and Content-Signal belong to the run of ``user-agent`` lines
directly above them (:class:`Agents`), as every other parser reads them.
"""

from __future__ import annotations

import math
import re
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field

from scrapy_rep.robotstxt.agent import group_token
from scrapy_rep.robotstxt.paths import as_octets
from scrapy_rep.robotstxt.text import printable

#: RFC 9309 §2.5: crawlers MUST parse at least the first 500 KiB.
MAX_BYTES = 512_000
#: Google cuts lines here (2083 * 8 - 1 octets); keeps pathological lines cheap.
MAX_LINE = 16_663
#: How much of a line a diagnostic keeps: enough to read, bounded in memory.
DIAGNOSTIC_TEXT = 200
#: How many diagnostics a file keeps (an HTML page served as robots.txt has
#: one per line); the rest are counted in one ``diagnostics-dropped``.
MAX_DIAGNOSTICS = 50

_BOM = b"\xef\xbb\xbf"
#: UTF-16 byte order marks (little, big endian): such a file is not UTF-8.
_UTF16_BOMS = {b"\xff\xfe": "FF FE, UTF-16 little-endian", b"\xfe\xff": "FE FF, UTF-16 big-endian"}
_SURROGATE = re.compile("[\udc80-\udcff]")
#: Whitespace around keys and values: ASCII only, as Google's parser (RFC 9309
#: WS is SP/HT); str.strip() would also eat NBSP, U+0085 and \x1c-\x1f.
_WS = " \t\v\f"
_WORDS = re.compile(r"[ \t]+")


@dataclass(frozen=True, slots=True)
class Rule:
    """An ``allow`` or ``disallow`` line, exactly as written."""

    allow: bool
    pattern: str
    line: int

    @property
    def directive(self) -> str:
        return "allow" if self.allow else "disallow"

    def __str__(self) -> str:
        shown = printable(self.pattern)  # the site's own text
        return f"{'Allow' if self.allow else 'Disallow'}: {shown} (line {self.line})"


@dataclass(frozen=True, slots=True)
class UsageRule:
    """A ``Content-Usage: [path SP] prefs`` line (IETF aipref), the preference unread;
    ``pattern`` None covers every path."""

    pattern: str | None
    prefs: str
    line: int

    def __str__(self) -> str:
        path = f"{self.pattern} " if self.pattern is not None else ""
        return f"Content-Usage: {path}{self.prefs} (line {self.line})"


@dataclass(frozen=True, slots=True)
class Signal:
    """A ``Content-Signal`` line (Cloudflare), its value unread."""

    value: str
    line: int

    def __str__(self) -> str:
        return f"Content-Signal: {self.value} (line {self.line})"


@dataclass(slots=True)
class Agents:
    """A run of consecutive ``user-agent`` lines and the non-rule lines under it, which,
    unlike the group's rules, are the run's alone."""

    agents: list[str]
    line: int
    crawl_delay: float | None = None
    #: seconds per request, from ``Request-rate: n/Ts``
    request_interval: float | None = None
    #: an empty tuple until the run has one (a list each is tracked by the collector)
    signals: Sequence[Signal] = ()


@dataclass(slots=True)
class Group:
    """One group: the lower-cased product tokens it names (``*``: the global group), and
    the rules under them."""

    agents: list[str]
    line: int
    #: the rules' patterns as written and (``codes``) each rule's ``line << 1 | allow``:
    #: two lists, not a :class:`Rule` a line, which every full collection would walk
    #: (profiled: a third of a cold parse + first answer)
    patterns: list[str] = field(default_factory=list)
    #: 4 bytes a rule, not a pointer to an int object
    codes: array[int] = field(default_factory=lambda: array("I"))
    runs: list[Agents] = field(default_factory=list)
    #: an empty tuple until the group has one (as ``Agents.signals``)
    usage: Sequence[UsageRule] = ()

    @property
    def rules(self) -> list[Rule]:
        """The group's Allow and Disallow lines, in file order (made when asked)."""
        return [
            Rule(code & 1 == 1, pattern, code >> 1)
            for pattern, code in zip(self.patterns, self.codes, strict=True)
        ]

    def __str__(self) -> str:
        return f"user-agent: {', '.join(self.agents) or '(empty)'} (line {self.line})"


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """A line (or the file) that was not understood as written."""

    line: int
    kind: str
    text: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.kind}: {self.text}"


@dataclass(slots=True)
class Parsed:
    """What the file says, before any matcher is built."""

    groups: list[Group]
    sitemaps: list[str]
    diagnostics: list[Diagnostic]
    #: RSL ``License:`` URLs, file-wide like sitemaps (recorded, not interpreted)
    licenses: list[str]
    #: ``Content-Signal`` lines before the first ``user-agent`` line
    signals: list[Signal]
    size: int
    truncated: bool
    #: how many Content-Usage and Content-Signal lines the file has (0: no use preference)
    preference_lines: int = 0
    #: whether any run asks for a Crawl-delay or Request-rate
    paced: bool = False


# Directive names, by the key as written (lower-cased). Exact spellings are
# quiet; Google's accepted typos are understood but reported.
(
    _USER_AGENT,
    _ALLOW,
    _DISALLOW,
    _SITEMAP,
    _CRAWL_DELAY,
    _REQUEST_RATE,
    _CONTENT_USAGE,
    _CONTENT_SIGNAL,
    _LICENSE,
) = range(9)
_EXACT = {
    "user-agent": _USER_AGENT,
    "allow": _ALLOW,
    "disallow": _DISALLOW,
    "sitemap": _SITEMAP,
    "crawl-delay": _CRAWL_DELAY,
    "request-rate": _REQUEST_RATE,
    "content-usage": _CONTENT_USAGE,
    "content-signal": _CONTENT_SIGNAL,
    "license": _LICENSE,
}
# Google recognises a key by its prefix, typos included (robots.cc, KeyIs*).
_PREFIXES = (
    ("user-agent", _USER_AGENT),
    ("useragent", _USER_AGENT),
    ("user agent", _USER_AGENT),
    ("allow", _ALLOW),
    ("disallow", _DISALLOW),
    ("dissallow", _DISALLOW),
    ("dissalow", _DISALLOW),
    ("disalow", _DISALLOW),
    ("diasllow", _DISALLOW),
    ("disallaw", _DISALLOW),
    ("sitemap", _SITEMAP),
    ("site-map", _SITEMAP),
)


#: the usual spellings as written, so that the common line needs no strip or lower-casing
_AS_WRITTEN = {
    spelling: directive
    for name, directive in _EXACT.items()
    for spelling in (name, name.title(), name.capitalize(), name.upper())
}

_PREFIX = re.compile("|".join(re.escape(prefix) for prefix, _ in _PREFIXES)).match
_BY_PREFIX = dict(_PREFIXES)


def _clip(text: str) -> str:
    """A diagnostic's text: printable (safe for a terminal or a log line) and bounded."""
    if not text.isascii():  # show invalid octets as U+FFFD, not as surrogates
        text = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    text = printable(text)
    return text if len(text) <= DIAGNOSTIC_TEXT else text[:DIAGNOSTIC_TEXT] + "…"


#: ``n/T[smhd]``, then an optional time window ``hhmm-hhmm`` (``1/10s 1820-1940``).
_RATE = re.compile(
    r"(\d+)\s*/\s*(\d+(?:\.\d+)?)\s*([smhd]?)"
    r"(?:\s+([01]\d|2[0-4]):?([0-5]\d)\s*-\s*([01]\d|2[0-4]):?([0-5]\d))?"
)


def _rate(value: str) -> float | None:
    """Seconds per request from ``n/T[smhd]`` (Request-rate), None if unreadable.

    A time window after it (``1/10s 1820-1940``) is ignored: the rate applied all day is
    never faster than asked. Numbers are floats (``int()`` refuses 4,300 digits).
    """
    match = _RATE.fullmatch(value.lower())
    if not match:
        return None
    unit = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[match[3]]
    requests = float(match[1])
    interval = float(match[2]) * unit / requests if requests else math.inf
    return interval if math.isfinite(interval) else None


def _delay(value: str) -> float | None:
    try:
        delay = float(value)
    except ValueError:
        return None
    return delay if delay >= 0 and delay != float("inf") else None


def parse_records(data: bytes | str) -> Parsed:
    """Read a robots.txt body; never raises."""
    data = as_octets(data)
    size = len(data)
    diagnostics: list[Diagnostic] = []
    truncated = size > MAX_BYTES
    if data[:2] in _UTF16_BOMS:
        # Not UTF-8 (RFC 9309 §2.2); as octets, every other one is NUL, so
        # nothing would be read anyway (Google's parser reads nothing either).
        what = _UTF16_BOMS[data[:2]]
        message = (
            f"the file starts with a UTF-16 byte order mark ({what}); robots.txt must be "
            "UTF-8 (RFC 9309 §2.2), so none of its rules are read and everything is allowed"
        )
        return Parsed([], [], [Diagnostic(1, "utf-16", message)], [], [], size, truncated)
    if truncated:
        # Drop the partial last line (CR alone ends one too): a cut "Disallow: /private"
        # must not become "Disallow: /".
        end = max(data.rfind(b"\n", 0, MAX_BYTES + 1), data.rfind(b"\r", 0, MAX_BYTES + 1))
        data = data[: end + 1 or MAX_BYTES]
    if data[:1] == _BOM[:1]:  # a BOM, even a partial one
        data = data[next(n for n in (3, 2, 1) if data.startswith(_BOM[:n])) :]
    try:
        text, has_invalid_utf8 = data.decode("utf-8"), False
    except UnicodeDecodeError:  # invalid octets survive as surrogate escapes
        text, has_invalid_utf8 = data.decode("utf-8", "surrogateescape"), True
    if "\r" in text:  # CRLF, then CR alone, each one line end (as \r\n|\r|\n splits; in C)
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")

    groups: list[Group] = []
    sitemaps: list[str] = []
    licenses: list[str] = []
    signals: list[Signal] = []  # Content-Signal before any group
    current: Group | None = None  # the group rules go to
    run: Agents | None = None  # the run of user-agent lines the other lines go to
    in_agents = False  # no rule since the last user-agent line
    in_run = False  # no line of the run's own since the last user-agent line
    preference_lines = 0  # Content-Usage and Content-Signal lines in groups
    paced = False

    dropped = 0

    def note(number: int, kind: str, text: str, keep: bool = False) -> None:
        nonlocal dropped
        if len(diagnostics) < MAX_DIAGNOSTICS or keep:
            diagnostics.append(Diagnostic(number, kind, _clip(text)))
        else:
            dropped += 1

    exact = _EXACT.get
    as_written = _AS_WRITTEN.get
    has_nul = "\0" in text
    long_lines = len(text) > MAX_LINE  # else no line is
    for number, raw in enumerate(lines, 1):
        line = raw
        if long_lines and len(line) > MAX_LINE:
            line = line[:MAX_LINE]
            note(number, "line-too-long", f"{len(raw)} characters, cut at {MAX_LINE}")
        if has_nul and "\0" in line:
            # Google's parser works on C strings: the line ends at a NUL, so
            # "Disallow: /a\0bc" is "Disallow: /a" (the RFC says nothing).
            line = line[: line.index("\0")]
            note(number, "nul-octet", f"{line} (the rest, after a NUL octet, is ignored)")
        if has_invalid_utf8 and _SURROGATE.search(line):
            note(number, "invalid-utf8", line)
        if "#" in line:
            line = line[: line.index("#")]
        # The common line, "Name: value", takes no helper call.
        key, colon, value = line.partition(":")
        if colon:
            value = value.strip(_WS)
            directive = as_written(key)
        else:
            directive = None
        if directive is None:
            if colon:
                key = key.strip(_WS)
                if not key:
                    note(number, "not-a-record", line.strip(_WS))
                    continue
            else:
                line = line.strip(_WS)
                if not line:
                    continue
                # Google: a missing colon is forgiven when exactly two words remain.
                if " " not in line and "\t" not in line:  # one word (no regex call)
                    note(number, "not-a-record", line)
                    continue
                words = _WORDS.split(line, 2)  # a third item: more than two words
                if len(words) != 2:
                    note(number, "not-a-record", line)
                    continue
                key, value = words
            lowered = key.lower()
            directive = exact(lowered)
            if directive is None:  # Google reads a misspelt or longer key by its prefix
                prefix = _PREFIX(lowered)  # one C call: most keys here are unknown
                if prefix is None:
                    note(number, "unknown-directive", line.strip(_WS))
                    continue
                directive = _BY_PREFIX[prefix[0]]
                note(number, "typo", f"{key!r} read as a known directive")
            if not colon:
                note(number, "missing-colon", line)

        if 0 < directive < 3 and current is not None:  # Allow / Disallow in a group: a rule
            # (and only a rule closes the run of user-agent lines)
            in_agents = in_run = False
            if value and value[0] not in "/*":
                # Google anchors every pattern at the path's leading '/', so
                # such a rule can never match; the RFC grammar forbids it.
                note(number, "pattern-without-slash", line)
            current.patterns.append(value)
            current.codes.append(number << 1 | (directive == _ALLOW))
            continue
        if directive == _USER_AGENT:
            token = group_token(value)
            if not token:
                note(number, "invalid-user-agent", line)
            if current is None or not in_agents:
                current = Group([], number)
                groups.append(current)
            if run is None or not in_run:
                run = Agents([], number)
                current.runs.append(run)
            if token:
                current.agents.append(token)
                run.agents.append(token)
            in_agents = in_run = True
            continue
        if directive in (_SITEMAP, _LICENSE):
            if "://" in value:
                (sitemaps if directive == _SITEMAP else licenses).append(value)
            elif directive == _SITEMAP:
                note(number, "invalid-sitemap", line)
            else:
                note(number, "invalid-license", line)
            continue
        if current is None or run is None:
            if directive == _CONTENT_SIGNAL:
                signals.append(Signal(value, number))
                note(number, "content-signal-outside-group", line)
            else:
                note(number, "outside-group", line)
            continue
        if directive == _CONTENT_USAGE:
            in_agents = in_run = False  # a rule, too: it closes the run of user-agent lines
            usage = _usage(value, number)
            if not usage.prefs:
                note(number, "content-usage-without-preference", line)
            preference_lines += 1
            if isinstance(current.usage, list):
                current.usage.append(usage)
            else:
                current.usage = [usage]
            continue
        in_run = False  # the lines below attach to the run above them
        if directive == _CRAWL_DELAY:
            delay = _delay(value)
            if delay is None:
                note(number, "invalid-crawl-delay", line)
            else:
                run.crawl_delay = delay
                paced = True
        elif directive == _REQUEST_RATE:
            interval = _rate(value)
            if interval is None:
                note(number, "invalid-request-rate", line)
            else:
                run.request_interval = interval
                paced = True
        else:
            preference_lines += 1
            if isinstance(run.signals, list):
                run.signals.append(Signal(value, number))
            else:
                run.signals = [Signal(value, number)]

    if dropped:
        note(len(lines), "diagnostics-dropped", f"{dropped} more diagnostics not kept", keep=True)
    if truncated:
        read = f"{size} bytes, only the first {len(data)} were read"
        note(len(lines), "truncated", read, keep=True)
    preference_lines += len(signals)
    return Parsed(
        groups, sitemaps, diagnostics, licenses, signals, size, truncated, preference_lines, paced
    )


def _usage(value: str, number: int) -> UsageRule:
    """A Content-Usage value: a path if it starts with '/' (up to SP or HT), then the prefs."""
    if value[:1] != "/":
        return UsageRule(None, value, number)
    cut = next((i for i, char in enumerate(value) if char in " \t"), len(value))
    return UsageRule(value[:cut], value[cut:].strip(_WS), number)

"""Page-level robots directives: ``<meta name="robots">``, ``X-Robots-Tag``, ``Robots-Tag``,
``rel=nofollow`` (docs/page-directives.md). Everything that applies combines; the most
restrictive wins.

>>> page = page_directives("mybot", 0.0, headers=["otherbot: noindex", "mybot: nofollow"])
>>> page.noindex, page.nofollow, page.source("nofollow")
(False, True, 'X-Robots-Tag (mybot:): nofollow')
"""

from __future__ import annotations

import calendar
import email.utils
import html
import re
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urljoin

from w3lib.html import strip_html5_whitespace
from w3lib.url import safe_url_string

from scrapy_rep.core.fields import field_lines
from scrapy_rep.core.structured import StructuredFieldError, parse_list
from scrapy_rep.robotstxt.text import SHOWN_ITEMS, clip

#: bytes of a body searched for the end of its ``<head>``; nothing after it is read
HEAD_LIMIT = 64 * 1024

#: directives written ``name: value``; any other ``name:`` is a crawler's product token
VALUED = frozenset({"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"})
#: directive -> the restrictions it sets (``nocache`` is Bing's ``noarchive``)
_SETS: dict[str, tuple[str, ...]] = {
    "noindex": ("noindex",),
    "nofollow": ("nofollow",),
    "none": ("noindex", "nofollow"),
    "noarchive": ("noarchive",),
    "nocache": ("noarchive",),
    "nosnippet": ("nosnippet",),
}
#: names understood and ignored (they restrict nothing a crawler does)
_HARMLESS = frozenset(
    {"all", "index", "follow", "notranslate", "noimageindex", "indexifembedded", "noodp", "noydir"}
)
#: use preferences written in the same lists (DeviantArt's noai); see core/use_signals.py
USE_DIRECTIVES = frozenset({"noai", "noimageai"})
_KNOWN = frozenset(_SETS) | _HARMLESS | VALUED | USE_DIRECTIVES
#: the directives that restrict what a crawler does with a page (``scrapy-rep describe``)
DIRECTIVES: tuple[str, ...] = (*_SETS, "unavailable_after")

_HEAD_END = re.compile(rb"</head\s*>|<body[\s>/]", re.I)
_SEP = re.compile(r"[\s,]*")
_NAME = re.compile(r"([A-Za-z][A-Za-z0-9_.-]*)\s*(:)?\s*")
# a comma that starts a new element: a known directive or a ``token:`` prefix follows
_NEXT_ELEMENT = re.compile(
    r",\s*(?=(?:" + "|".join(re.escape(n) for n in sorted(_KNOWN)) + r")\b|[A-Za-z][\w.-]*\s*:)",
    re.I,
)
_WD = r"(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*"
_TZ = r"(?:\s+[a-z]{1,5}\b|\s*[+-]\d{4}\b)?"
_ISO = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})"
    r"(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,]\d+)?)?)?"
    r"\s*(Z|[+-]\d{2}(?::?\d{2})?)?(?![\w:])",
    re.I,
)
_RFC_DATES = (
    # RFC 822 / 1123: [Fri,] 25 Jun 2010 [15:00[:00]] [GMT|+0000]
    re.compile(
        rf"(?:{_WD}\s*,\s*)?\d{{1,2}}\s+[a-z]{{3,9}}\s+\d{{2,4}}"
        rf"(?:\s+\d{{1,2}}:\d{{2}}(?::\d{{2}})?{_TZ})?",
        re.I,
    ),
    # RFC 850: Friday, 25-Jun-10 15:00:00 GMT
    re.compile(
        rf"{_WD}\s*,\s*\d{{1,2}}-[a-z]{{3}}-\d{{2,4}}\s+\d{{1,2}}:\d{{2}}(?::\d{{2}})?{_TZ}", re.I
    ),
    # asctime: Fri Jun 25 15:00:00 2010
    re.compile(rf"{_WD}\s+[a-z]{{3}}\s+\d{{1,2}}\s+\d{{1,2}}:\d{{2}}:\d{{2}}\s+\d{{4}}", re.I),
)
_XHTML = "{http://www.w3.org/1999/xhtml}"
_LINK_TAGS = ("a", "area", f"{_XHTML}a", f"{_XHTML}area")


@dataclass(frozen=True, slots=True)
class PageDirectives:
    """What one page (its headers and ``<head>``) says to one product token."""

    noindex: bool = False
    nofollow: bool = False
    noarchive: bool = False
    nosnippet: bool = False
    unavailable_after: float | None = None  # the earliest that applies, epoch seconds
    sources: tuple[tuple[str, str], ...] = ()  # (restriction, where it was said)
    invalid_dates: tuple[str, ...] = ()

    def source(self, restriction: str) -> str:
        """Where ``restriction`` (``noindex``, ``nofollow``, ...) was said; '' if nowhere."""
        return "; ".join(where for name, where in self.sources if name == restriction)

    def to_dict(self) -> dict[str, Any]:
        sources = [list(pair) for pair in self.sources]
        return {**asdict(self), "sources": sources, "invalid_dates": list(self.invalid_dates)}


#: a page that says nothing
NO_DIRECTIVES = PageDirectives()


@dataclass
class _Collector:
    """Directives as they are found; :meth:`result` freezes them. Past ``SHOWN_ITEMS``
    sayings are counted, not kept: a page can say ``none`` 13,000 times, and every link
    it drops quotes the list."""

    now: float
    found: dict[str, list[str]] = field(default_factory=dict)
    more: dict[str, int] = field(default_factory=dict)
    unavailable_after: float | None = None
    invalid_dates: list[str] = field(default_factory=list)

    def add(self, name: str, argument: str, where: str) -> None:
        said = f"{where}: {name}" + (f": {clip(argument)}" if argument else "")
        if name == "unavailable_after":
            when = parse_date(argument)
            if when is None:
                if len(self.invalid_dates) < SHOWN_ITEMS:
                    self.invalid_dates.append(clip(argument))
                return
            if self.unavailable_after is None or when < self.unavailable_after:
                self.unavailable_after = when
            if when <= self.now:
                self._said("noindex", said)
            return
        for restriction in _SETS.get(name, ()):
            self._said(restriction, said)

    def _said(self, restriction: str, said: str) -> None:
        sayings = self.found.setdefault(restriction, [])
        if len(sayings) < SHOWN_ITEMS:
            sayings.append(said)
        else:
            self.more[restriction] = self.more.get(restriction, 0) + 1

    def result(self) -> PageDirectives:
        if not self.found and self.unavailable_after is None and not self.invalid_dates:
            return NO_DIRECTIVES
        for restriction, more in self.more.items():
            self.found[restriction].append(f"and {more} more")
        return PageDirectives(
            noindex="noindex" in self.found,
            nofollow="nofollow" in self.found,
            noarchive="noarchive" in self.found,
            nosnippet="nosnippet" in self.found,
            unavailable_after=self.unavailable_after,
            sources=tuple((name, w) for name, wheres in self.found.items() for w in wheres),
            invalid_dates=tuple(self.invalid_dates),
        )


def page_directives(
    token: str,
    now: float,
    *,
    headers: Iterable[str | bytes] = (),
    body: bytes | None = None,
    metas: Iterable[tuple[str, str]] | None = None,
    robots_tag: Iterable[str | bytes] = (),
) -> PageDirectives:
    """The directives for ``token`` in ``X-Robots-Tag`` and ``Robots-Tag`` field lines and
    an HTML ``body``'s head (or its ``metas``, already read by :func:`head_metas`)."""
    found = _Collector(now)
    lines = (v.decode("latin-1") if isinstance(v, bytes) else v for v in headers)
    for value in field_lines(lines):
        for prefix, name, argument in directive_list(value, token):
            where = f"X-Robots-Tag ({prefix}:)" if prefix else "X-Robots-Tag"
            found.add(name, argument, where)
    for label, name, argument in robots_tag_list(robots_tag, token):
        found.add(name, argument, f"Robots-Tag ({label})" if label else "Robots-Tag")
    if metas is None and body:
        metas = meta_robots(body, token)
    if metas is not None:
        wanted = ("robots", token.lower())
        for meta_name, content in metas:
            if meta_name not in wanted:
                continue
            for _prefix, name, argument in directive_list(content, token):
                found.add(name, argument, f'<meta name="{meta_name}">')
    return found.result()


def directive_list(value: str, token: str) -> Iterator[tuple[str | None, str, str]]:
    """(prefix, directive, argument) of each directive in ``value`` (a header value or a
    meta ``content``) that applies to ``token``. A name followed by ``:`` is a prefix
    unless it is a valued directive; it holds until the next prefix."""
    wanted = token.lower()
    prefix: str | None = None
    applies = True
    pos, end = 0, len(value)
    while True:
        pos = _SEP.match(value, pos).end()  # type: ignore[union-attr]  # [\s,]* always matches
        if pos >= end:
            return
        named = _NAME.match(value, pos)
        if named is None:  # junk: skip to the next comma
            pos = _comma(value, pos)
            continue
        name, colon = named.group(1).lower(), named.group(2)
        if colon and name not in _KNOWN:  # a product token: what follows is for that crawler
            prefix, applies = name, name == wanted
            pos = named.end()
            continue
        if name == "unavailable_after" and colon:
            argument, pos = _take_date(value, named.end())
            if applies:
                yield prefix, name, argument
            continue
        stop = _comma(value, named.end())
        if colon:  # max-snippet: 20 and the like (or a stray colon after a known name)
            if applies:
                yield prefix, name, value[named.end() : stop].strip()
        elif applies:
            # tolerate "noindex nofollow" (spaces instead of commas) for known names
            words = value[pos:stop].lower().split()
            for word in words if all(w in _KNOWN for w in words) else words[:1]:
                if word in _KNOWN:
                    yield prefix, word, ""
        pos = stop


def robots_tag_list(
    values: Iterable[str | bytes], token: str
) -> Iterator[tuple[str | None, str, str]]:
    """(label, directive, argument) of each ``Robots-Tag`` directive that applies to
    ``token`` (a bare directive name: for everyone, label None). A field line that is no
    List is read as an ``X-Robots-Tag`` value (docs/page-directives.md says why)."""
    wanted = token.lower()
    lines = (v if isinstance(v, bytes) else v.encode("latin-1", "replace") for v in values)
    for raw in field_lines(lines):
        try:
            members = parse_list(raw.strip(b" \t"))
        except StructuredFieldError:
            for prefix, name, argument in directive_list(raw.decode("latin-1"), token):
                yield (f"{prefix}:" if prefix else None), name, argument
            continue
        for item, parameters in members:
            if not isinstance(item, str):  # an inner list, a number: no product token
                continue
            member = item.lower()
            if not parameters:
                if member in _KNOWN and member not in VALUED:
                    yield None, member, ""
                continue
            if member != "*" and member != wanted:
                continue
            for key, param in parameters:
                if param is False or key not in _KNOWN:
                    continue
                yield item, key, "" if param is True else str(param)


def _comma(value: str, pos: int) -> int:
    found = value.find(",", pos)
    return len(value) if found < 0 else found


def _take_date(value: str, pos: int) -> tuple[str, int]:
    """The date starting at ``pos`` (commas and all) and where the list goes on after it."""
    for pattern in (_ISO, *_RFC_DATES):
        found = pattern.match(value, pos)
        if found:
            return found.group().strip(), found.end()
    # No known form: up to the next comma that starts a directive or a prefix.
    after = _NEXT_ELEMENT.search(value, pos)
    stop = after.start() if after else len(value)
    return value[pos:stop].strip(), stop


def parse_date(text: str) -> float | None:
    """Epoch seconds of an ISO 8601, RFC 822/1123/850 or asctime date; None if unreadable.
    No time zone means UTC; a date alone, its first second."""
    text = text.strip()
    iso = _ISO.fullmatch(text)
    try:
        if iso:
            *fields, zone = iso.groups()
            year, month, day, hour, minute, second = (int(value or 0) for value in fields)
            offset = _offset(zone)
        else:
            parts = email.utils.parsedate_tz(text)
            if parts is None and ":" not in text:  # a date without a time: its first second
                parts = email.utils.parsedate_tz(f"{text} 00:00:00")
            if parts is None:
                return None
            year, month, day, hour, minute, second = parts[:6]
            offset = parts[9] or 0
        datetime(year, month, day, hour, minute, second)  # range check: raises ValueError
        return calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0)) - offset
    except (ValueError, OverflowError):
        return None


def _offset(zone: str | None) -> float:
    if not zone or zone.upper() == "Z":
        return 0.0
    digits = zone[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:] or 0)
    if hours > 23 or minutes > 59:
        raise ValueError(zone)
    delta = float(hours * 3600 + minutes * 60)
    return delta if zone[0] == "+" else -delta


def head_of(body: bytes, limit: int = HEAD_LIMIT) -> bytes:
    """The body up to the end of its ``<head>`` (or ``<body>``), at most ``limit`` bytes."""
    window = body[:limit]
    end = _HEAD_END.search(window)
    return window[: end.start()] if end else window


def meta_robots(body: bytes, token: str) -> list[tuple[str, str]]:
    """(name, content) of the ``<meta>`` tags named ``robots`` or ``token`` in the head."""
    return head_metas(body, (b"robots", token.lower().encode("ascii", "ignore") or b"robots"))


# In a head, a <meta> can hide in a comment or in the text of these elements.
# (Not <noscript>: a crawler that runs no scripts parses its content as tags.)
_RAW_TEXT = (b"script", b"style", b"title", b"textarea", b"template", b"xmp")
# matched against the lower-cased head; every alternative starts with "<"
_HEAD_TOKEN = re.compile(
    rb"<!--(?:.*?-->|.*)"
    + b"".join(rb"|<" + t + rb"\b(?:.*?</" + t + rb"\s*>|.*)" for t in _RAW_TEXT)
    + rb"""|<meta\b((?:[^>"']|"[^"]*"|'[^']*')*)>""",
    re.S,
)
_ATTRIBUTE = re.compile(r"""([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?""")


def head_metas(body: bytes, names: tuple[bytes, ...]) -> list[tuple[str, str]]:
    """(name, content) of the head's ``<meta>`` tags named one of ``names`` (lower-case
    bytes): a linear scanner that skips comments and script-like text and reads
    attributes as HTML writes them."""
    head = head_of(body)
    encoding = "latin-1"  # the names and directives are ASCII; nothing else is used
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):  # UTF-16: re-encode so names are ASCII bytes
        head, encoding = head.decode("utf-16", "replace").encode("utf-8"), "utf-8"
    folded = head.lower()  # ASCII only: offsets stay those of ``head``
    # most pages name neither: a substring search (a case-insensitive regex is 50x slower)
    if not any(name in folded for name in names):
        return []
    found = []
    for token in _HEAD_TOKEN.finditer(folded):
        start, end = token.span(1)
        if start < 0:
            continue  # a comment, a script, ...
        if not any(name in folded[start:end] for name in names):
            continue  # another <meta>: not worth reading its attributes
        text = head[start:end].decode(encoding, "replace")
        attributes: dict[str, str] = {}
        for attribute in _ATTRIBUTE.finditer(text):
            key = attribute.group(1).lower()
            if key not in attributes:  # the first of duplicated attributes wins, as in HTML
                value = next((v for v in attribute.group(2, 3, 4) if v is not None), "")
                attributes[key] = html.unescape(value)
        name = attributes.get("name", "").strip().lower()
        if name.encode("latin-1", "replace") in names and "content" in attributes:
            found.append((name, attributes["content"]))
    return found


def link_key(url: str) -> str:
    """A URL as links and requests are compared: without its fragment."""
    return url.split("#", 1)[0]


def nofollow_only(root: Any, base_url: str, encoding: str = "utf-8") -> frozenset[str]:
    """URLs (:func:`link_key`) the document (``response.selector.root``) links to only with
    ``rel=nofollow``, made absolute and safe as Scrapy's link extractor makes them."""
    followed: set[str] = set()
    nofollow: set[str] = set()
    for element in root.iter(*_LINK_TAGS):
        href = element.get("href")
        if href is None:
            continue
        try:
            url = safe_url_string(urljoin(base_url, strip_html5_whitespace(href)), encoding)
        except ValueError:
            continue  # a bogus link, skipped as the link extractor skips it
        rel = element.get("rel")
        tokens = rel.lower().replace(",", " ").split() if rel else ()
        (nofollow if "nofollow" in tokens else followed).add(link_key(url))
    return frozenset(nofollow - followed)

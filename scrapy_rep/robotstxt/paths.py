"""Paths and patterns in one canonical percent-encoding (RFC 3986 §6.2.2, RFC 9309 §2.2.3).

In a pattern a raw ``*`` and a trailing ``$`` are special and ``%2A`` / ``%24`` the
literal characters (:func:`literal`); a URL's path is read the same way.
"""

from __future__ import annotations

import re

_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
#: What RFC 3986 allows unencoded in a path or query (§3.3, §3.4); anything else is
#: compared as its %XX escape, the form Scrapy (w3lib's safe_url_string) sends. What
#: ``bytes.translate(None, PLAIN_OCTETS)`` leaves of an ASCII path, normalising changes.
PLAIN_OCTETS = bytes(_UNRESERVED) + b"!$&'()*+,;=:@/?"
#: two hex digits (any case) -> their canonical form: the character if unreserved
_ESCAPES = {
    f"{a}{b}": chr(int(a + b, 16)) if int(a + b, 16) in _UNRESERVED else f"%{a}{b}".upper()
    for a in "0123456789abcdefABCDEF"
    for b in "0123456789abcdefABCDEF"
}
#: octets (as latin-1 characters) that are neither allowed nor '%' -> %XX
_ENCODE = {octet: f"%{octet:02X}" for octet in range(256) if octet not in PLAIN_OCTETS + b"%"}
#: scheme and authority (RFC 3986 §3.1-3.2: it ends at '/', '?' or '#'), if
#: any, then the path and query up to the fragment
_PATH = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*)?([^#]*)").match
AUTHORITY = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*)?").match
#: a character outside PLAIN_OCTETS but for "%" ("#", space, non-ASCII, ...)
_NOT_PLAIN_OR_ESCAPE = re.compile(r"[^A-Za-z0-9\-._~!$&'()*+,;=:@/?%]").search
#: an escape :func:`normalise_path` changes: not two upper-case hex digits, one of an
#: unreserved octet (A-Z a-z 0-9 - . _ ~), or %2A / %24 (read as '*' and '$'). A URL with
#: none (Scrapy sends upper-case hex, unreserved octets unescaped) is compared as it comes
changed_escape = re.compile(
    r"%(?![0-9A-F]{2})|%(?:[46][1-9A-F]|[57][0-9A]|3[0-9]|2[ADE4]|5F|7E)"
).search
#: :data:`PLAIN_OCTETS` and the '%' of escapes: what is left of a URL whose escapes are
#: unchanged is what normalising would escape
ESCAPED_OCTETS = PLAIN_OCTETS + b"%"
#: up to this length, one regex call splits a URL fastest
SHORT_URL = 512
ROBOTS_TXT = "/robots.txt"


def normalise(text: str) -> str:
    """Put a path or pattern in one canonical percent-encoding (RFC 3986 §6.2.2):
    octets not allowed in a path or query encoded (non-ASCII as UTF-8), escapes of
    unreserved characters decoded, the others in upper-case hex, a lone ``%`` as ``%25``.
    Reserved characters and their escapes stay as written (``%2F`` is not ``/``).
    Idempotent."""
    plain = False
    if text.isascii():
        # bytes.translate deletes the allowed octets in one C pass (str.isprintable
        # is ~50 times slower); what is left says what there is to do.
        leftover = text.encode("ascii").translate(None, PLAIN_OCTETS)
        if not leftover:
            return text  # the common case
        plain = not leftover.strip(b"%")
    if not plain:
        text = as_octets(text).decode("latin-1").translate(_ENCODE)
    head, *escapes = text.split("%")
    out = [head]
    for part in escapes:
        canonical = _ESCAPES.get(part[:2])
        if canonical is None:
            out.append("%25" + part)
        else:
            out.append(canonical + part[2:])
    return "".join(out)


def as_octets(data: bytes | str) -> bytes:
    """``data`` as octets: a str is its UTF-8, never an error."""
    if isinstance(data, bytes):
        return data
    try:
        return data.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate that stands for no octet
        return data.encode("utf-8", "surrogatepass")


def path_of(url: str) -> str:
    """Path, params and query of an absolute URL or a path; never empty."""
    if len(url) <= SHORT_URL:
        path: str = _PATH(url)[1]  # type: ignore[index]  # one C call; always matches
    else:  # the regex reads long URLs slower than str.find
        end = AUTHORITY(url).end()  # type: ignore[union-attr]  # always matches
        fragment = url.find("#", end)
        path = url[end:fragment] if fragment >= 0 else url[end:]
    return path if path[:1] == "/" else "/" + path


def normalise_path(text: str) -> str:
    """A URL's path as rules are matched against it: :func:`normalise`, then ``%2A`` and
    ``%24`` read as ``*`` and ``$`` (in a URL both spellings are the same plain
    character; a pattern writes them escaped to match them literally). Idempotent."""
    if not _NOT_PLAIN_OR_ESCAPE(text) and not changed_escape(text):
        return text  # escapes as Scrapy sends them (UTF-8, upper-case hex): nothing changes
    return literal(normalise(text))


def literal(text: str) -> str:
    """A piece of a normalised pattern between its special characters, in path form."""
    if "%" in text:  # one memchr; most paths have no escape at all
        text = text.replace("%2A", "*").replace("%24", "$")
    return text

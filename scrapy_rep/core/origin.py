"""The key robots.txt is scoped to: scheme, IDNA host, effective port (RFC 9309 §2.3)."""

from __future__ import annotations

import functools
import re
from urllib.parse import urlsplit

#: the schemes robots.txt governs (RFC 9309 §2.3 names http, https and ftp) and their ports
DEFAULT_PORTS = {"http": 80, "https": 443, "ftp": 21}


class NotAnOrigin(ValueError):
    """A URL that robots.txt does not govern (no host, or not http, https or ftp)."""


#: ``scheme://authority`` of a URL: all that :func:`origin_of` depends on
_AUTHORITY = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://[^/?#]*")


def origin_of(url: str) -> str:
    """``https://Example.COM/x`` -> ``https://example.com:443``.

    The port is always written out, so ``https://h`` and ``https://h:443``
    are one origin and ``http://h`` another.
    """
    # Every request is keyed (some twice): cache by scheme and authority, as
    # IDNA encoding alone costs microseconds.
    prefix = _AUTHORITY.match(url)
    try:
        return _origin_of(prefix[0] if prefix is not None else url)
    except NotAnOrigin:
        return _origin_of.__wrapped__(url)  # raises again, naming the whole URL


def origin_or_none(url: str) -> str | None:
    """:func:`origin_of`, or None for a URL robots.txt does not govern."""
    try:
        return origin_of(url)
    except NotAnOrigin:
        return None


@functools.lru_cache(maxsize=1 << 17)  # a broad crawl keys every request: no thrash
def _origin_of(url: str) -> str:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        raise NotAnOrigin(f"no robots.txt governs {url!r}")
    host = parts.hostname.rstrip(".")
    try:
        host = host.encode("idna").decode("ascii")
    except UnicodeError:
        host = host.lower()  # already-encoded or unusual labels stay as given
    try:
        port = parts.port or DEFAULT_PORTS[scheme]
    except ValueError as exc:
        raise NotAnOrigin(f"bad port in {url!r}") from exc
    if ":" in host:
        host = f"[{host}]"  # IPv6 literal
    return f"{scheme}://{host}:{port}"


def robots_url(origin: str) -> str:
    """Where an origin's robots.txt lives; the default port is left out of the URL."""
    scheme, _, authority = origin.partition("://")
    host, _, port = authority.rpartition(":")
    if int(port) == DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}/robots.txt"
    return f"{scheme}://{authority}/robots.txt"

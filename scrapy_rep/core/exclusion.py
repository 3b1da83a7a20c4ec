"""Excluded sites (``REP_EXCLUDE``): domains whose requests are dropped before any fetch.

An entry covers a domain and its subdomains, compared IDNA-encoded and lower-cased as
:func:`~scrapy_rep.core.origin.origin_of` writes hosts. A lookup is one set probe per
label suffix of the host, whatever the size of the list.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

#: an IDNA-encoded host name: labels of letters, digits, ``-`` and ``_``
_HOST = re.compile(r"[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?)*")
#: an IPv6 literal, as origins write it
_IPV6 = re.compile(r"\[[0-9a-f:.]+\]")


class ExclusionError(ValueError):
    """An entry that is no domain; the message is one line naming it and where it is."""


@dataclass(frozen=True, slots=True)
class Exclusion:
    """The list entry a host matched (as written), and its file and line (None: a list given
    in the settings)."""

    entry: str
    line: int | None
    source: str | None

    def where(self) -> str:
        """``REP_EXCLUDE`` or ``sites.txt, line 3``."""
        if self.source is None:
            return "REP_EXCLUDE"
        return f"{self.source}, line {self.line}"


def normalise(text: str) -> str:
    """An entry or a host as compared: lower-case, IDNA-encoded, no trailing dot nor leading
    ``*.`` (subdomains are included anyway)."""
    host = text.strip().rstrip(".")
    if host.startswith("*."):
        host = host[2:]
    elif host.startswith("."):
        host = host[1:]
    host = host.lower()
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise ExclusionError(f"{text!r} is not a domain IDNA can encode") from None
    if _HOST.fullmatch(host) is None and _IPV6.fullmatch(host) is None:
        hint = ""
        if "/" in host or ":" in host:
            hint = " (write the host only, e.g. 'example.com', not a URL)"
        raise ExclusionError(f"{text!r} is not a domain{hint}")
    return host


class ExcludedSites:
    """The excluded domains, normalised; :meth:`match` finds the entry covering a host."""

    __slots__ = ("_entries", "source")

    def __init__(self, entries: dict[str, Exclusion], source: str | None = None) -> None:
        self._entries = entries
        self.source = source

    @classmethod
    def parse(cls, lines: Iterable[str], source: str | None = None) -> ExcludedSites:
        """Entries one a line; ``#`` starts a comment. ``source``: the file named in errors
        and matches (None: the settings' list)."""
        entries: dict[str, Exclusion] = {}
        for number, raw in enumerate(lines, 1):
            where = f"{source}, line {number}" if source else f"item {number}"
            if not isinstance(raw, str):
                raise ExclusionError(f"{raw!r} ({where}) is not a domain")
            text = raw.split("#", 1)[0].strip()
            if not text:
                continue
            try:
                host = normalise(text)
            except ExclusionError as exc:
                raise ExclusionError(f"{exc} ({where})") from None
            if host not in entries:
                entries[host] = Exclusion(text, number if source else None, source)
        return cls(entries, source)

    def __len__(self) -> int:
        return len(self._entries)

    def __bool__(self) -> bool:
        return bool(self._entries)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExcludedSites) and self._entries == other._entries

    def __repr__(self) -> str:
        return f"ExcludedSites({len(self._entries)} entries, source={self.source!r})"

    def match(self, host: str) -> Exclusion | None:
        """The entry covering ``host`` (normalised as :func:`origin_of` writes it), or None."""
        entries = self._entries
        found = entries.get(host)
        if found is not None or host[:1] == "[":
            return found
        at = host.find(".")
        while at >= 0:
            found = entries.get(host[at + 1 :])
            if found is not None:
                return found
            at = host.find(".", at + 1)
        return None

    def match_origin(self, origin: str) -> Exclusion | None:
        """:meth:`match` for an origin key (``scheme://host:port``)."""
        return self.match(origin.partition("://")[2].rpartition(":")[0])

"""Licence and payment walls: a page that answers "pay, or license this, first".

``402`` is a payment wall; ``401`` with ``WWW-Authenticate: License`` a licence wall
(RSL); a ``401`` of any other scheme is ordinary access control. A wall is not retried
nor retried around; what it asks for is recorded.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from scrapy_rep.core.fields import field_lines
from scrapy_rep.robotstxt.text import clip

PAYMENT, LICENCE = "payment", "licence"
#: the statuses a wall answers with; no other response is looked at
WALL_STATUSES = frozenset({401, 402})
#: response headers that say what a wall asks for, recorded as they are
WALL_HEADERS = ("www-authenticate", "crawler-price", "link")
#: the parameters of a ``License`` challenge that name where to get a licence
_SERVER_PARAMS = ("server", "realm", "uri", "license", "licence")


@dataclass(frozen=True, slots=True)
class Wall:
    """What one wall response asks for."""

    kind: str  # payment or licence
    status: int
    #: the licence server a ``License`` challenge names, if any
    server: str | None = None
    #: ``crawler-price``, if given
    price: str | None = None
    #: header name -> its values, for the headers of WALL_HEADERS the response has
    headers: dict[str, list[str]] = field(default_factory=dict)

    def said(self) -> str:
        """One line: the status and what is asked (for logs, records and the report)."""
        parts = [f"{self.status} {self.kind}"]
        if self.price:
            parts.append(f"crawler-price: {self.price}")
        if self.server:
            parts.append(f"licence server {self.server}")
        return ", ".join(parts)


def wall_of(status: int, header: Callable[[str], Iterable[str]]) -> Wall | None:
    """The wall a response is, or None. ``header(name)``: that header's values, as text,
    each read within the one bound of every header (``core/fields.py``)."""
    if status not in WALL_STATUSES:
        return None
    headers = {n: lines for n in WALL_HEADERS if (lines := field_lines(header(n), cut=True))}
    licence = [
        params
        for value in headers.get("www-authenticate", ())
        for scheme, params in challenges(value)
        if scheme.lower() == "license"
    ]
    if status == 401 and not licence:
        return None
    price = clip(", ".join(headers.get("crawler-price", []))) or None
    # the first challenge naming a server, by the first of its parameters that does
    server = next((ps[p] for ps in licence for p in _SERVER_PARAMS if ps.get(p)), None)
    return Wall(LICENCE if licence else PAYMENT, status, clip(server or "") or None, price, headers)


_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]++")
_OWS = re.compile(r"[ \t]*+")
_SEPARATORS = re.compile(r"[ \t,]*+")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*+)"')
_BARE = re.compile(r"[^ \t,]*+")
_ESCAPED = re.compile(r"\\(.)")
# a token68 (RFC 9110 §11.2) ends its challenge: a comma or the end follows it
_TOKEN68 = re.compile(r"[A-Za-z0-9._~+/-]++=*+(?=[ \t]*+(?:,|$))")


def challenges(value: str) -> list[tuple[str, dict[str, str]]]:
    """The challenges of one ``WWW-Authenticate`` value (RFC 9110 §11.6.1): (auth-scheme,
    auth-param name -> value), names lower-cased, the first of a name kept. One pass of
    anchored possessive patterns: linear in the value."""
    found: list[tuple[str, dict[str, str]]] = []
    params: dict[str, str] | None = None
    pos, end = 0, len(value)
    while True:
        pos = _SEPARATORS.match(value, pos).end()  # type: ignore[union-attr]  # always matches
        if pos >= end:
            return found
        token = _TOKEN.match(value, pos)
        if token is None:  # junk: up to the next comma
            comma = value.find(",", pos + 1)
            pos = end if comma < 0 else comma
            continue
        after = _OWS.match(value, token.end()).end()  # type: ignore[union-attr]
        if after < end and value[after] == "=":  # an auth-param (BWS "=" BWS)
            text, pos = _param_value(value, after + 1)
            if params is not None:
                params.setdefault(token.group().lower(), text)
            continue
        params = {}
        found.append((token.group(), params))
        pos = after
        if after > token.end():  # after the scheme's space: a token68, or its params
            token68 = _TOKEN68.match(value, after)
            if token68 is not None:
                pos = token68.end()


def _param_value(value: str, pos: int) -> tuple[str, int]:
    """An auth-param's value (a quoted string, unquoted; else up to a space or a comma)
    and where it ends."""
    pos = _OWS.match(value, pos).end()  # type: ignore[union-attr]
    quoted = _QUOTED.match(value, pos)
    if quoted is not None:
        return _ESCAPED.sub(r"\1", quoted.group(1)), quoted.end()
    bare = _BARE.match(value, pos)  # a token; read as far as a URL goes, as sites write them
    return bare.group(), bare.end()  # type: ignore[union-attr]  # always matches

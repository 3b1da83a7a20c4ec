"""Licence and payment walls: a page that answers "pay, or license this, first".

Pure: a status and the response's headers in, a :class:`Wall` (or None) out.

- ``402 Payment Required`` is a payment wall (Cloudflare's pay per crawl
  answers it with ``crawler-price``);
- ``401`` with ``WWW-Authenticate: License ...`` is a licence wall (RSL 1.0's
  crawler authorisation: the licence server to ask is in its parameters);
  a ``401`` for any other scheme is an ordinary access control, not a wall.

A wall is not retried, nor retried around (no other identity, no other
route): the page's items are never produced, and what the wall asks for is
recorded. An origin is judged on after a wall (it may cover a path only)
until ``REP_BLOCK_AFTER`` refusals in a row there; then it is held like a
block (:meth:`scrapy_rep.core.pushback.Pushback.on_wall`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

PAYMENT, LICENCE = "payment", "licence"
#: the statuses a wall answers with; no other response is looked at
WALL_STATUSES = frozenset({401, 402})
#: the reason of a request dropped for a wall
LICENCE_REQUIRED = "licence-required"
#: response headers that say what a wall asks for, recorded as they are
WALL_HEADERS = ("www-authenticate", "crawler-price", "link")
_AUTH_PARAM = re.compile(r'([A-Za-z0-9_.-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s,]*)')
#: the parameters of a ``License`` challenge that name where to get a licence
_SERVER_PARAMS = ("server", "realm", "uri", "license", "licence")


@dataclass(frozen=True, slots=True)
class Wall:
    """What one wall response asks for."""

    kind: str  # payment or licence
    status: int
    #: header name -> its values, for the headers of WALL_HEADERS the response has
    headers: dict[str, list[str]] = field(default_factory=dict)
    #: the licence server a ``License`` challenge names, if any
    server: str | None = None
    #: ``crawler-price``, if given
    price: str | None = None

    def said(self) -> str:
        """One line: the status and what is asked (for logs, records and the report)."""
        parts = [f"{self.status} {self.kind}"]
        if self.price:
            parts.append(f"crawler-price: {self.price}")
        if self.server:
            parts.append(f"licence server {self.server}")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "status": self.status,
            "server": self.server,
            "price": self.price,
            "headers": {name: list(values) for name, values in self.headers.items()},
        }


def wall_of(status: int, header: Callable[[str], Iterable[str]]) -> Wall | None:
    """The wall a response is, or None. ``header(name)``: that header's values, as text."""
    if status not in WALL_STATUSES:
        return None
    challenges = [value for value in header("www-authenticate") if value]
    licence = [c for c in challenges if c.strip().lower().split(" ", 1)[0] == "license"]
    if status == 401 and not licence:
        return None
    headers = {name: list(header(name)) for name in WALL_HEADERS}
    headers = {name: values for name, values in headers.items() if values}
    price = ", ".join(headers.get("crawler-price", [])) or None
    server = None
    for challenge in licence:
        params = {k.lower(): _unquote(v) for k, v in _AUTH_PARAM.findall(challenge)}
        server = next((params[p] for p in _SERVER_PARAMS if params.get(p)), None)
        if server:
            break
    return Wall(LICENCE if licence else PAYMENT, status, headers, server, price)


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return re.sub(r"\\(.)", r"\1", value[1:-1])
    return value

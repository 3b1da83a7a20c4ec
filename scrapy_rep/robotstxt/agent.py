"""Product tokens: the crawler's name, and how groups name it (RFC 9309 §2.2.1)."""

from __future__ import annotations

import re

_TOKEN = re.compile(r"[a-zA-Z_-]+")
_TOKEN_PREFIX = re.compile(r"[a-zA-Z_-]*")


class InvalidProductToken(ValueError):
    """The crawler's own product token is not ``[a-zA-Z_-]+``."""

    def __init__(self, token: object) -> None:
        super().__init__(
            f"invalid product token {token!r}: RFC 9309 allows only letters, '_' and '-' "
            "(for example 'mybot', not 'MyBot/1.0')"
        )


def validate_token(token: str) -> str:
    """Return ``token`` if a crawler may use it to select groups, else raise."""
    if not isinstance(token, str) or not _TOKEN.fullmatch(token):
        raise InvalidProductToken(token)
    return token


def product_token(user_agent: str) -> str | None:
    """The product token a ``User-Agent`` header starts with (``Foo/1.0 ...`` -> ``Foo``)."""
    match = _TOKEN_PREFIX.match(user_agent.strip())
    return match[0] if match and match[0] else None


def group_token(value: str) -> str:
    """How a ``user-agent`` line's value names crawlers: lower-cased token or ``*``.

    As Google does, ``FooBot/1.2`` and ``Foo Bar`` are reduced to their
    leading product token, and ``* anything`` is still the global group.
    """
    if value[:1] == "*" and (len(value) == 1 or value[1] in " \t\v\f"):
        return "*"
    match = _TOKEN_PREFIX.match(value)
    return match[0].lower() if match else ""

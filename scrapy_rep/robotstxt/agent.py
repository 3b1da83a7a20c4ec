"""Product tokens: the crawler's name, how groups name it (RFC 9309 §2.2.1), and how a
``User-Agent`` header does (:func:`crawler_token`)."""

from __future__ import annotations

import re
from collections.abc import Iterator

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
    """How a ``user-agent`` line's value names crawlers: lower-cased token or ``*``
    (as Google does, ``FooBot/1.2`` is ``foobot`` and ``* anything`` still ``*``)."""
    if value[:1] == "*" and (len(value) == 1 or value[1] in " \t\v\f"):
        return "*"
    match = _TOKEN_PREFIX.match(value)
    return match[0].lower() if match else ""


#: product names of browsers and their engines: never a crawler's own token
BROWSER_PRODUCTS = frozenset(
    {
        *("mozilla", "applewebkit", "webkit", "khtml", "gecko", "trident", "presto", "blink"),
        *("chrome", "chromium", "headlesschrome", "crios", "safari", "mobilesafari", "version"),
        *("firefox", "fxios", "edge", "edg", "edga", "edgios", "opr", "opt", "opera", "msie"),
        *("mobile", "vivaldi", "brave", "yabrowser", "samsungbrowser", "ucbrowser", "silk"),
        *("electron", "android", "linux", "windows", "macintosh", "compatible", "like"),
    }
)
#: a comment ``( ... )`` (also one left open), or a word outside comments
_UA_PART = re.compile(r"\(([^()]*)\)?|([^\s()]+)")
_COMMENT_PRODUCT = re.compile(r"([^\s/;]+)/\S*")


def _products(header: str) -> Iterator[str]:
    """The product names of a ``User-Agent`` header, in order. The first word counts even
    without a version; later words and comment items only as ``name/version``, so
    ``(KHTML, like Gecko)`` names no product."""
    for index, match in enumerate(_UA_PART.finditer(header)):
        comment, word = match.groups()
        if word is not None:
            name, slash, _version = word.partition("/")
            if slash or index == 0:
                yield name
        else:
            for item in (comment or "").split(";"):
                found = _COMMENT_PRODUCT.fullmatch(item.strip())
                if found:
                    yield found[1]


def crawler_token(header: str) -> str | None:
    """The first product in a ``User-Agent`` header that is a valid token, not a browser's.

    >>> crawler_token("shopbot/1.0 (+https://shop.example/bot)")
    'shopbot'
    >>> crawler_token("Mozilla/5.0 (compatible; shopbot/1.0; +https://shop.example/bot)")
    'shopbot'
    >>> crawler_token("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko)")
    """
    for name in _products(header):
        if _TOKEN.fullmatch(name) and name.lower() not in BROWSER_PRODUCTS:
            return name
    return None

"""The crawler's identity as a request leaves: its product token (RFC 9309 §2.2.1), and no
change after a 403/429 ("an HTTP error is no reason to change identity"): another
``User-Agent`` or proxy would evade the refusal.
"""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import unquote, urlsplit

from scrapy_rep.core.recent import Recent

#: the statuses that fix an origin's identity: the site refused the crawler as it was
REFUSING_STATUSES = frozenset({403, 429})
#: the reasons of the requests this module stops (decision records, ``rep/dropped/<reason>``)
TOKEN_MISSING = "token-missing"
IDENTITY_CHANGED = "identity-changed"
#: how long an origin's refused identity is kept at most after its last refusal (seconds)
REFUSAL_MEMORY = 3600.0
#: origins whose refused identity is kept at most (LRU, ~0.3 KiB each)
MAX_ORIGINS = 100_000
#: a token is a whole product name: not part of a longer ``[a-zA-Z_-]`` word
_NAME_CHARS = "A-Za-z_-"


def carries_token(user_agent: str, token: str) -> bool:
    """Whether ``user_agent`` names ``token`` as a product (any case, a whole word):
    ``Mozilla/5.0 (compatible; ShopBot/1.0)`` carries ``shopbot``, ``notshopbot/1.0`` not."""
    if not token or not user_agent:
        return False
    return _pattern(token).search(user_agent) is not None


@lru_cache(maxsize=64)  # a crawl has one token; tests make many
def _pattern(token: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![{_NAME_CHARS}]){re.escape(token)}(?![{_NAME_CHARS}])", re.I)


def _credentials(header: str) -> bytes:
    """What a ``Proxy-Authorization`` header says: ``user:password`` for a Basic one,
    else the header itself."""
    kind, _, token = header.strip().partition(" ")
    if kind.lower() == "basic":
        try:
            return base64.b64decode(token.strip(), validate=True)
        except ValueError:
            pass
    return header.encode("latin-1", "replace")


@dataclass(frozen=True, slots=True)
class Identity:
    """Who a request says it is: its ``User-Agent``, the proxy as the handler connects to it
    (``scheme://host:port``; ``""``: none) and a short digest of the credentials sent to it
    (never the credentials)."""

    user_agent: str
    proxy: str = ""
    proxy_auth: str = ""

    @classmethod
    def of(
        cls, user_agent: str, proxy: str | None = None, proxy_authorization: str | None = None
    ) -> Identity:
        """The identity a request leaves with, as Scrapy's download handlers send it: the
        credentials are the ``Proxy-Authorization`` header's when there is one, else the
        proxy URL's (a Basic header and the URL's ``user:password`` are one set)."""
        where, secret = "", _credentials(proxy_authorization) if proxy_authorization else b""
        if proxy:
            parts = urlsplit(proxy if "//" in proxy else f"//{proxy}")
            scheme = parts.scheme or "http"
            try:
                port = parts.port
            except ValueError:
                port = None
            if port is None:
                port = 443 if scheme == "https" else 80
            where = f"{scheme}://{parts.hostname or ''}:{port}"
            if not secret and parts.username is not None:
                secret = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
        digest = hashlib.sha256(secret).hexdigest()[:12] if secret else ""
        return cls(user_agent, where, digest)

    def changes(self, other: Identity) -> list[str]:
        """What ``other`` changed from this identity, in words (empty: the same)."""
        said = []
        if other.user_agent != self.user_agent:
            said.append(f"User-Agent {self.user_agent!r} -> {other.user_agent!r}")
        if other.proxy != self.proxy:
            said.append(f"proxy {self.proxy or 'none'!r} -> {other.proxy or 'none'!r}")
        elif other.proxy_auth != self.proxy_auth:
            said.append("proxy credentials changed")
        return said

    def __str__(self) -> str:
        via = f" via {self.proxy}" if self.proxy else ""
        return f"{self.user_agent!r}{via}"


@dataclass(slots=True)
class Refusal:
    """The identity an origin refused, when and how, and until when it is kept."""

    identity: Identity
    status: int
    url: str
    until: float


class RefusedIdentities:
    """Per origin, the identity it refused (403/429), until its pause ends (``ended``) or
    ``keep`` seconds after the last refusal; at most ``max_origins``, least recent first out.

    The first refused identity stays while the entry lives: it is the one the site knows
    the crawler by; a later refusal only extends it.
    """

    def __init__(self, keep: float, max_origins: int) -> None:
        self.keep = keep
        self._by_origin: Recent[str, Refusal] = Recent(max_origins)
        #: identities shared between entries (one crawl has a handful)
        self._shared: dict[Identity, Identity] = {}

    def __len__(self) -> int:
        return len(self._by_origin)

    def refused(self, origin: str, identity: Identity, status: int, url: str, now: float) -> None:
        """Note that ``origin`` answered ``status`` to a request sent as ``identity``."""
        end = now + self.keep
        entry = self._live(origin, now)
        if entry is None:
            if identity not in self._shared and len(self._shared) >= 1024:
                self._shared.clear()
            shared = self._shared.setdefault(identity, identity)
            self._by_origin.put(origin, Refusal(shared, status, url, end))
        else:
            entry.until = max(entry.until, end)
            self._by_origin.move_to_end(origin)

    def changed(self, origin: str, identity: Identity, now: float) -> Refusal | None:
        """The refusal ``identity`` departs from, if ``origin`` refused another one lately."""
        entry = self._live(origin, now)
        if entry is None or entry.identity == identity:
            return None
        return entry

    def ended(self, origin: str) -> None:
        """The origin's pause ended: the crawler may present itself afresh."""
        self._by_origin.pop(origin, None)

    def _live(self, origin: str, now: float) -> Refusal | None:
        entry = self._by_origin.get(origin)
        if entry is not None and now >= entry.until:
            del self._by_origin[origin]
            return None
        return entry


class Once:
    """Keys seen, at most ``size`` (LRU): "one WARNING per origin" in bounded memory."""

    def __init__(self, size: int) -> None:
        self._seen: Recent[str, None] = Recent(size)

    def first(self, key: str) -> bool:
        """True the first time ``key`` is asked (or again once it was forgotten)."""
        if key in self._seen:
            self._seen.move_to_end(key)
            return False
        self._seen.put(key, None)
        return True

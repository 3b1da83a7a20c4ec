"""The crawler's identity: the token in a User-Agent and the bounded memory of refused
identities (core/identity.py, pure); then, on the rig, ``IdentityGuard`` last in the crawl's
own downloader middlewares. The whole crawls are ``tests/integration/test_identity.py``.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Iterator
from typing import Any

import pytest
import pytest_twisted
from scrapy import Request
from scrapy.http import Response

from scrapy_rep.core.decision import DROP, identity_drop, unjudged
from scrapy_rep.core.identity import (
    IDENTITY_CHANGED,
    REFUSAL_MEMORY,
    Identity,
    Once,
    RefusedIdentities,
    carries_token,
)
from scrapy_rep.crawl.exceptions import RepIgnoreRequest
from tests.support.rig import Middlewares, in_loop, rig_for

A, B = "http://a.example:80", "http://b.example:80"
BOT = Identity("testbot/1.0 (+http://127.0.0.1/)")


@pytest.mark.parametrize(
    ("agent", "carries"),
    [
        ("testbot/1.0 (+http://127.0.0.1/)", True),
        ("TestBot/2", True),
        ("Mozilla/5.0 (compatible; testbot/1.0; +http://x)", True),
        ("testbot", True),
        ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/120", False),
        ("nottestbot/1.0", False),
        ("testbot-two/1.0", False),
        ("testbotx/1.0", False),
        ("", False),
    ],
)
def test_carries_token(agent: str, carries: bool) -> None:
    assert carries_token(agent, "testbot") is carries


def test_identity_of_proxy_keeps_no_credentials() -> None:
    plain = Identity.of("bot/1", "http://user:secret@proxy.example:3128")
    assert plain.proxy == "http://proxy.example:3128"
    assert "secret" not in repr(plain) and plain.proxy_auth
    header = Identity.of("bot/1", "http://proxy.example:3128", "Basic dXNlcjpzZWNyZXQ=")
    other = Identity.of("bot/1", "http://proxy.example:3128", "Basic b3RoZXI6eA==")
    assert header.proxy == other.proxy and header != other
    assert header.changes(other) == ["proxy credentials changed"]
    assert Identity.of("bot/1") == Identity("bot/1")
    assert Identity("bot/1").changes(Identity("bot/2")) == ["User-Agent 'bot/1' -> 'bot/2'"]
    assert Identity("bot/1").changes(plain) == ["proxy 'none' -> 'http://proxy.example:3128'"]


def basic(credentials: bytes) -> str:
    return "Basic " + base64.b64encode(credentials).decode()


def test_identity_of_proxy_is_what_the_handler_sends() -> None:
    """One proxy and one set of credentials, however written: one identity. Scrapy's
    HttpProxyMiddleware turns ``user:pw`` in the URL (percent-decoded) into a Basic
    ``Proxy-Authorization``; the handlers send that header when there is one, and add
    ``http://`` and the scheme's default port."""
    url = Identity.of("bot/1", "http://us%40er:p%3Aw@proxy.example:3128")
    header = Identity.of("bot/1", "http://proxy.example:3128", basic(b"us@er:p:w"))
    assert url == header
    # the header is what is sent: credentials left in the URL beside it do not count
    assert Identity.of("bot/1", "http://bob:x@proxy.example:3128", basic(b"us@er:p:w")) == header
    assert Identity.of("bot/1", "proxy.example:3128", basic(b"us@er:p:w")) == header
    assert Identity.of("bot/1", "http://PROXY.example:80") == Identity.of(
        "bot/1", "http://proxy.example"
    )
    assert Identity.of("bot/1", "https://proxy.example").proxy == "https://proxy.example:443"
    assert Identity.of("bot/1", "http://proxy.example:3128", basic(b"us@er:other")) != header
    assert Identity.of("bot/1", "http://proxy.example:3129", basic(b"us@er:p:w")) != header
    # not Basic (or not base64): the header as it is sent
    token = Identity.of("bot/1", "http://proxy.example:3128", "Bearer abc")
    assert token.proxy_auth and token != Identity.of(
        "bot/1", "http://proxy.example:3128", "Bearer abd"
    )


def test_refused_identity_is_kept_until_the_pause_ends_or_keep() -> None:
    memory = RefusedIdentities(keep=100.0, max_origins=10)
    rotated = Identity("Mozilla/5.0 Chrome/120")
    assert memory.changed(A, rotated, now=0.0) is None  # nothing refused: anything goes
    memory.refused(A, BOT, 429, "http://a.example/p", now=10.0)
    assert memory.changed(A, BOT, now=11.0) is None  # the same identity may go on
    found = memory.changed(A, rotated, now=11.0)
    assert found is not None and found.identity == BOT and found.status == 429
    assert memory.changed(B, rotated, now=11.0) is None  # per origin
    assert memory.changed(A, rotated, now=109.9) is not None
    assert memory.changed(A, rotated, now=110.0) is None  # keep: 100 s after the refusal
    assert len(memory) == 0
    memory.refused(A, BOT, 403, "http://a.example/q", now=500.0)
    memory.ended(A)
    assert memory.changed(A, rotated, now=501.0) is None


def test_first_refused_identity_stays_and_later_refusals_extend_it() -> None:
    memory = RefusedIdentities(keep=100.0, max_origins=10)
    rotated = Identity("other/1")
    memory.refused(A, BOT, 429, "http://a.example/1", now=0.0)
    memory.refused(A, rotated, 429, "http://a.example/2", now=50.0)  # sent anyway (warn)
    found = memory.changed(A, rotated, now=120.0)
    assert found is not None and found.identity == BOT and found.url == "http://a.example/1"
    assert memory.changed(A, rotated, now=150.0) is None


def test_memory_is_bounded_lru() -> None:
    memory = RefusedIdentities(keep=1e9, max_origins=3)
    rotated = Identity("other/1")
    for i in range(5):
        memory.refused(f"http://o{i}.example:80", Identity("bot/1"), 429, "u", now=float(i))
    assert len(memory) == 3
    for forgotten in ("http://o0.example:80", "http://o1.example:80"):
        assert memory.changed(forgotten, rotated, now=10.0) is None
    assert memory.changed("http://o4.example:80", rotated, now=10.0) is not None
    # identities are shared between entries, not copied per origin
    entries = [memory.changed(f"http://o{i}.example:80", rotated, 10.0) for i in (2, 3, 4)]
    assert len({id(e.identity) for e in entries if e is not None}) == 1


def test_once_per_key_bounded() -> None:
    once = Once(2)
    assert once.first("a") and not once.first("a")
    assert once.first("b") and once.first("c")  # "a" forgotten
    assert once.first("a")


def test_identity_drop_keeps_the_judgement_and_drops() -> None:
    judged = unjudged(A, "testbot", "http://a.example/x", None, "download", "allow-rule", "ok")
    record = identity_drop(judged, A, "testbot", judged["url"], IDENTITY_CHANGED, "changed")
    assert record["action"] == DROP and record["reason"] == IDENTITY_CHANGED
    assert record["rep_decision"] == judged["rep_decision"] and judged["action"] == "download"
    fresh = identity_drop(None, A, "testbot", "http://a.example/y", IDENTITY_CHANGED, "d")
    assert fresh["action"] == DROP and fresh["url"] == "http://a.example/y"
    assert set(fresh) == set(judged)


# -- IdentityGuard in the crawl: the downloader middlewares on the rig ------------------------

SITE = "http://a.example"
ROBOTS = (200, {}, b"User-agent: *\nAllow: /\n")
ROTATED = "Mozilla/5.0 (compatible; testbot/2.0)"  # carries the token, another identity
BROWSER = "Mozilla/5.0 (X11; Linux x86_64) Chrome/120"  # no token


def guarded(**settings: Any) -> Middlewares:
    return Middlewares(
        rig_for({"http://a.example:80": ROBOTS, f"{SITE}/refused": (403, {}, b"")}, **settings)
    )


@pytest.fixture
def mw() -> Iterator[Middlewares]:
    mw = guarded()
    yield mw
    mw.rig.close()


def page(url: str, agent: str | None = None, **meta: Any) -> Request:
    return Request(url, headers={"User-Agent": agent} if agent else None, meta=meta)


async def sent(mw: Middlewares, request: Request) -> None:
    mw.rig.transport.answers.setdefault(request.url, (200, {}, b"ok"))
    response = await mw.fetch(request)
    assert isinstance(response, Response), response
    assert mw.rig.transport.urls()[-1] == request.url  # it left for the network


async def dropped(mw: Middlewares, request: Request) -> str:
    with pytest.raises(RepIgnoreRequest) as caught:
        await mw.fetch(request)
    assert request.url not in mw.rig.transport.urls()  # never left for the network
    assert caught.value.decision["action"] == "drop"
    return str(caught.value.decision["reason"])


@pytest_twisted.ensureDeferred
async def test_a_user_agent_without_the_token_is_sent_and_said_once_per_origin(
    mw: Middlewares, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        with caplog.at_level(logging.WARNING, logger="scrapy_rep"):
            for n in range(2):
                await sent(mw, page(f"{SITE}/{n}", BROWSER))
        assert mw.rig.stat("rep/identity/token-missing") == 2
        (warned,) = [r for r in caplog.records if "does not carry" in r.getMessage()]
        assert "testbot" in warned.getMessage()

    await in_loop(scenario())


@pytest_twisted.ensureDeferred
async def test_a_user_agent_without_the_token_is_not_sent_when_asked() -> None:
    mw = guarded(REP_IDENTITY_ACTION={"token-missing": "drop"})

    async def scenario() -> None:
        assert await dropped(mw, page(f"{SITE}/1", BROWSER)) == "token-missing"
        await sent(mw, page(f"{SITE}/2"))  # the USER_AGENT setting carries it
        assert mw.rig.stat("rep/dropped/token-missing") == 1
        assert mw.rig.stat("rep/downloaded") == 1  # the dropped one no longer counts

    await mw.rig.run(scenario())


@pytest_twisted.ensureDeferred
async def test_no_new_identity_at_an_origin_after_it_refused_one(mw: Middlewares) -> None:
    async def scenario() -> None:
        await sent(mw, page(f"{SITE}/"))
        await sent(mw, page(f"{SITE}/refused"))  # a 403: the identity it was sent as stays
        assert await dropped(mw, page(f"{SITE}/1", ROTATED)) == "identity-changed"
        proxied = page(f"{SITE}/2", proxy="http://proxy.example:3128")
        assert await dropped(mw, proxied) == "identity-changed"
        await sent(mw, page(f"{SITE}/3"))  # the refused identity itself goes on
        await sent(mw, page("http://b.example/1", ROTATED))  # per origin
        mw.rig.clock.advance(REFUSAL_MEMORY)  # an hour after the refusal at most
        await sent(mw, page(f"{SITE}/4", ROTATED))
        assert mw.rig.stat("rep/identity/identity-changed") == 2
        assert mw.rig.stat("rep/dropped/identity-changed") == 2

    await in_loop(scenario())


@pytest_twisted.ensureDeferred
async def test_dont_obey_robotstxt_requests_are_not_checked() -> None:
    mw = guarded(REP_IDENTITY_ACTION={"token-missing": "drop"})

    async def scenario() -> None:
        await sent(mw, page(f"{SITE}/refused", dont_obey_robotstxt=True))
        await sent(mw, page(f"{SITE}/1", BROWSER, dont_obey_robotstxt=True))
        assert mw.rig.stat("rep/identity/token-missing") is None

    await mw.rig.run(scenario())

"""Licence and payment walls: what a wall is and asks, when walls block an origin (pure);
then, on the rig, what meets a wall in the crawl's own downloader middlewares. The whole
crawl is ``tests/integration/test_licence_walls.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from scrapy import Request
from scrapy.http import Response

from scrapy_rep.core.fields import FIELD_OCTETS
from scrapy_rep.core.pushback import BLOCKED, Pushback, PushbackConfig
from scrapy_rep.core.report import CrawlCounts, report_lines
from scrapy_rep.core.walls import LICENCE, PAYMENT, wall_of
from scrapy_rep.crawl.exceptions import RepIgnoreRequest
from scrapy_rep.robotstxt.text import ITEM_TEXT
from tests.support.audit import records
from tests.support.rig import Middlewares, in_loop, rig_for

NOW = 1_000_000.0


def headers(**values: list[str]) -> object:
    found = {name.replace("_", "-"): v for name, v in values.items()}
    return lambda name: found.get(name, [])


def test_402_is_a_payment_wall_with_its_price() -> None:
    wall = wall_of(402, headers(crawler_price=["USD 0.01"]))  # type: ignore[arg-type]
    assert wall is not None
    assert (wall.kind, wall.status, wall.price) == (PAYMENT, 402, "USD 0.01")
    assert wall.headers == {"crawler-price": ["USD 0.01"]}
    assert wall.said() == "402 payment, crawler-price: USD 0.01"


def test_401_with_a_license_challenge_is_a_licence_wall_naming_its_server() -> None:
    challenge = 'License realm="news", server="https://license.example/token", error="x"'
    wall = wall_of(401, headers(www_authenticate=["Basic realm=a", challenge]))  # type: ignore[arg-type]
    assert wall is not None and wall.kind == LICENCE
    assert wall.server == "https://license.example/token"
    assert wall.said() == "401 licence, licence server https://license.example/token"
    assert wall.headers["www-authenticate"] == ["Basic realm=a", challenge]


def test_other_401s_and_other_statuses_are_no_walls() -> None:
    assert wall_of(401, headers(www_authenticate=['Basic realm="x"'])) is None  # type: ignore[arg-type]
    assert wall_of(401, headers()) is None  # type: ignore[arg-type]
    assert wall_of(200, headers(crawler_price=["USD 1"])) is None  # type: ignore[arg-type]
    assert wall_of(403, headers(www_authenticate=["License"])) is None  # type: ignore[arg-type]


def test_block_after_walls_in_a_row_hold_the_origin_like_a_block() -> None:
    a = "https://a:443"
    pb = Pushback(PushbackConfig(block_after=2, block_pause=600.0))
    # a wall counts from the first response: no page served first is needed
    assert pb.on_wall(a, 402, f"{a}/1", NOW) is None
    assert pb.on_response(a, 200, {}, f"{a}/2", NOW) is None  # a page breaks the run
    assert pb.on_wall(a, 402, f"{a}/3", NOW) is None
    block = pb.on_wall(a, 401, f"{a}/4", NOW)
    assert block is not None and block.cause == BLOCKED
    assert (block.statuses, block.refusals) == ((401, 402), 2)
    assert pb.hold_reason(a, NOW + 1) == BLOCKED
    assert pb.paused(a, NOW + 601) is None  # then a slow start, as after any block
    # walls and the 403s the page status table blocks for make one run
    b = "https://b:443"
    assert pb.on_response(b, 200, {}, f"{b}/", NOW) is None
    assert pb.on_wall(b, 402, f"{b}/1", NOW) is None
    blocked = pb.on_response(b, 403, {}, f"{b}/2", NOW)
    assert blocked is not None and blocked.statuses == (402, 403)


def test_the_close_report_lists_the_origins_behind_walls() -> None:
    counts = CrawlCounts()
    counts.downloaded("https://a:443")
    assert not any("walls" in line for line in report_lines(counts))
    counts.wall("https://a:443", "402 payment, crawler-price: USD 0.01")
    counts.wall("https://a:443", "402 payment, crawler-price: USD 0.02")
    lines = report_lines(counts)
    assert "  licence and payment walls: 2 responses" in lines
    assert any(
        line.split() == ["https://a:443", "2", "402", "payment,", "crawler-price:", "USD", "0.02"]
        for line in lines
    )


@pytest.mark.parametrize(
    "value",
    [
        'Basic realm="members", License server="https://license.example/token"',
        'Basic realm="a, License server=no", License server="https://license.example/token"',
        "Basic dXNlcjpwYXNz==, License realm=news, server=https://license.example/token",
        'Negotiate, license server = "https://license.example/token"',
    ],
)
def test_a_licence_challenge_beside_others_in_one_header_is_a_licence_wall(value: str) -> None:
    # RFC 9110 §11.6.1: one field value is a comma-separated list of challenges
    wall = wall_of(401, headers(www_authenticate=[value]))  # type: ignore[arg-type]
    assert wall is not None and wall.kind == LICENCE
    assert wall.server == "https://license.example/token"


@pytest.mark.parametrize(
    "value",
    [
        'Basic realm="License server=x"',  # the word in a quoted string is no challenge
        'Bearer error="License", realm=License',
        "Basic License=x",  # an auth-param named License
    ],
)
def test_license_said_other_than_as_a_scheme_is_no_wall(value: str) -> None:
    assert wall_of(401, headers(www_authenticate=[value])) is None  # type: ignore[arg-type]


def test_a_huge_wall_is_read_within_the_header_bound_and_kept_as_a_bounded_summary() -> None:
    # two 15,000-character License challenges: read up to the one bound of every header
    # (a licence wall still), and what is kept of them stays within it
    challenge = 'License server="https://license.example/t", x="' + "a" * 15_000 + '"'
    wall = wall_of(401, headers(www_authenticate=[challenge, challenge]))  # type: ignore[arg-type]
    assert wall is not None and wall.kind == LICENCE
    assert wall.server == "https://license.example/t"
    assert sum(len(v) for v in wall.headers["www-authenticate"]) <= FIELD_OCTETS
    # 250 crawler-price headers of 8,000 characters: a bounded summary, not 2 MB
    prices = [f"USD {n}.00 " + "x" * 8_000 for n in range(250)]
    paid = wall_of(402, headers(crawler_price=prices))  # type: ignore[arg-type]
    assert paid is not None
    assert sum(len(v) for v in paid.headers["crawler-price"]) <= FIELD_OCTETS
    assert len(paid.said()) <= 2 * ITEM_TEXT + 100
    assert paid.said().startswith("402 payment, crawler-price: USD 0.00 xxx")
    # the pathological shape of a challenge parser that backtracks: a long run of token
    # characters with no '=' after it, many times over; read in one pass
    tokens = wall_of(401, headers(www_authenticate=["a" * 4000 + " " + "b" * 4000, "License"]))  # type: ignore[arg-type]
    assert tokens is not None and tokens.kind == LICENCE


# -- in the crawl: the downloader middlewares on the rig ------------------------------------

SITE = "http://a.example"
ROBOTS = (200, {}, b"User-agent: *\nAllow: /\nLicense: https://a.example/licence.xml\n")
PRICED = (402, {"crawler-price": "USD 0.01"}, b"pay")
LICENSED = (401, {"WWW-Authenticate": 'License realm="x", server="https://lic.example/t"'}, b"")


@pytest.fixture
def mw(tmp_path: Path) -> Iterator[Middlewares]:
    rig = rig_for(
        {"http://a.example:80": ROBOTS, f"{SITE}/ok": (200, {}, b"ok")},
        REP_DECISION_LOG=str(tmp_path / "audit.jsonl"),
        # a retry would send a wall again: it must never see one
        RETRY_ENABLED=True,
        RETRY_HTTP_CODES=[401, 402],
    )
    yield Middlewares(rig)
    rig.close()


async def walled(mw: Middlewares, url: str, reply: Any, **meta: Any) -> RepIgnoreRequest:
    mw.rig.transport.answers[url] = reply
    with pytest.raises(RepIgnoreRequest) as dropped:
        await mw.fetch(Request(url, meta=meta))
    return dropped.value


@pytest_twisted.ensureDeferred
async def test_a_402_is_dropped_before_the_spider_never_retried_and_recorded(
    mw: Middlewares, tmp_path: Path
) -> None:
    rig = mw.rig

    async def scenario() -> None:
        url = f"{SITE}/paid"
        dropped = await walled(mw, url, PRICED)
        record = dropped.decision  # what the request's errback hears
        assert (record["action"], record["reason"]) == ("drop", "licence-required")
        assert record["policy_status"] == "wall"
        assert record["matched_rule"] == "402 payment, crawler-price: USD 0.01"
        assert rig.transport.urls().count(url) == 1  # not retried
        assert rig.stat("rep/walls/payment") == 1
        assert rig.stat("rep/dropped/licence-required") == 1
        assert rig.stat("retry/count") is None
        await rig.close_spider()
        (wall,) = records(tmp_path / "audit.jsonl", "licence_wall")
        assert (wall["url"], wall["kind"], wall["status"]) == (url, "payment", 402)
        assert wall["price"] == "USD 0.01" and not wall["walled"]
        assert wall["licenses"] == ["https://a.example/licence.xml"]  # robots.txt's RSL lines

    await in_loop(scenario())


@pytest_twisted.ensureDeferred
async def test_a_401_is_a_wall_only_with_a_license_challenge(mw: Middlewares) -> None:
    rig = mw.rig

    async def scenario() -> None:
        dropped = await walled(mw, f"{SITE}/licensed", LICENSED)
        assert dropped.decision["matched_rule"] == (
            "401 licence, licence server https://lic.example/t"
        )
        rig.transport.answers[f"{SITE}/basic"] = (401, {"WWW-Authenticate": "Basic"}, b"")
        response = await mw.fetch(Request(f"{SITE}/basic", meta={"max_retry_times": 0}))
        assert isinstance(response, Response) and response.status == 401  # access control
        assert rig.stat("rep/walls/licence") == 1
        # a dont_obey_robotstxt request opts out of robots.txt, not of a wall
        exempt = await walled(mw, f"{SITE}/exempt", PRICED, dont_obey_robotstxt=True)
        assert exempt.decision["reason"] == "licence-required"

    await in_loop(scenario())


@pytest_twisted.ensureDeferred
async def test_block_after_walls_in_a_row_hold_the_origins_other_requests(
    mw: Middlewares,
) -> None:
    rig = mw.rig

    async def scenario() -> None:
        for n in range(3):  # REP_BLOCK_AFTER: no page served first is needed for walls
            assert rig.stat("rep/walls/origins-walled") is None
            await walled(mw, f"{SITE}/paid/{n}", PRICED)
        assert rig.stat("rep/walls/origins-walled") == 1
        handed = await mw.fetch(Request(f"{SITE}/ok"))
        assert isinstance(handed, Request)  # held like a block, not sent
        assert not rig.schedule(handed)
        assert f"{SITE}/ok" not in rig.transport.urls()
        rig.idle()
        with pytest.raises(RepIgnoreRequest) as ended:
            await mw.fetch(rig.engine.crawled[0])
        assert ended.value.decision["reason"] == "blocked"

    await in_loop(scenario())

"""Licence and payment walls, pure: what a wall is and asks; when walls block an origin."""

from __future__ import annotations

import pytest

from scrapy_rep.core.fields import FIELD_OCTETS
from scrapy_rep.core.pushback import BLOCKED, Pushback, PushbackConfig
from scrapy_rep.core.report import CrawlCounts, report_lines
from scrapy_rep.core.walls import LICENCE, PAYMENT, wall_of
from scrapy_rep.robotstxt.text import ITEM_TEXT

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

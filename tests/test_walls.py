"""Licence and payment walls, pure: what a wall is and asks; when an origin is walled off."""

from __future__ import annotations

from scrapy_rep.core.report import CrawlCounts, report_lines
from scrapy_rep.core.walls import LICENCE, PAYMENT, Walls, wall_of


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


def test_an_origin_is_walled_off_at_the_limit_once() -> None:
    wall = wall_of(402, headers())  # type: ignore[arg-type]
    assert wall is not None
    walls = Walls(2)
    assert walls.hit("https://a:443", wall) is False
    assert walls.hit("https://a:443", wall) is True
    assert walls.hit("https://a:443", wall) is False  # already walled
    assert list(walls.walled) == ["https://a:443"]
    never = Walls(0)
    assert not any(never.hit("https://a:443", wall) for _ in range(10))
    assert never.walled == {}


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

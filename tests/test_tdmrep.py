"""TDMRep's tdmrep.json: parsing, matching and the header/meta values (pure).

The files are shaped like the JSON examples of the W3C community group's
report: a whole-site reservation with a policy, a reserved folder with a
public sub-folder, and a pattern by file type.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from scrapy_rep.core.policy import FetchResult, PolicyConfig, Status, next_policy
from scrapy_rep.core.tdmrep import (
    MAX_BYTES,
    MAX_RULES,
    NO_RULES,
    TdmRule,
    parse_tdmrep,
    reservation_value,
)
from scrapy_rep.core.uses import UseAnswer
from scrapy_rep.runtime.tdmrep import tdm_config

POLICY = "https://publisher.example/policies/tdm-offer.json"


def rules_of(entries: object) -> bytes:
    return json.dumps(entries).encode()


def test_a_whole_site_reservation_refuses_train_ai_everywhere_and_keeps_its_policy() -> None:
    rules = parse_tdmrep(rules_of([{"location": "/", "tdm-reservation": 1, "tdm-policy": POLICY}]))
    assert rules.diagnostics == ()
    assert rules.answer("https://publisher.example/articles/1?page=2") == UseAnswer(
        "train-ai", "refused", "tdmrep.json location /"
    )
    assert rules.rule("/") == TdmRule("/", 1, POLICY, 0)


def test_the_most_specific_location_wins_whatever_the_order() -> None:
    body = rules_of(
        [
            {"location": "/media/open/*", "tdm-reservation": 0},
            {"location": "/media/*", "tdm-reservation": 1, "tdm-policy": POLICY},
            {"location": "/*.mp4$", "tdm-reservation": 1},
        ]
    )
    rules = parse_tdmrep(body)
    assert rules.answer("/media/photo.jpg") == UseAnswer(
        "train-ai", "refused", "tdmrep.json location /media/*"
    )
    assert rules.answer("/media/open/photo.jpg") == UseAnswer(
        "train-ai", "allowed", "tdmrep.json location /media/open/*"
    )
    assert rules.answer("/films/trailer.mp4").answer == "refused"  # type: ignore[union-attr]
    assert rules.answer("/films/trailer.mp4?autoplay=1") is None  # "$" anchors the end
    assert rules.answer("/about") is None  # no entry: the file says nothing about it


def test_locations_match_case_sensitively_and_in_one_percent_encoding() -> None:
    rules = parse_tdmrep(rules_of([{"location": "/Archive/caf%C3%A9", "tdm-reservation": 1}]))
    assert rules.answer("/archive/caf%C3%A9") is None
    assert rules.answer("/Archive/café").answer == "refused"  # type: ignore[union-attr]
    assert rules.answer("/Archive/caf%c3%a9/menu").answer == "refused"  # type: ignore[union-attr]


@pytest.mark.parametrize("value", ["1", True, 2, None])
def test_a_reservation_other_than_0_or_1_is_no_value_and_a_broader_entry_decides(
    value: object,
) -> None:
    body = rules_of(
        [{"location": "/", "tdm-reservation": 0}, {"location": "/news/", "tdm-reservation": value}]
    )
    rules = parse_tdmrep(body)
    assert rules.answer("/news/today").answer == "allowed"  # type: ignore[union-attr]
    assert len(rules.diagnostics) == 1 and "neither 0 nor 1" in rules.diagnostics[0]
    assert rules.diagnostics[0].startswith("entry 1:")


def test_entries_without_a_path_pattern_are_skipped_with_a_diagnostic() -> None:
    body = rules_of(
        [
            "just a string",
            {"tdm-reservation": 1},
            {"location": "https://publisher.example/", "tdm-reservation": 1},
            {"location": "/ok", "tdm-reservation": 1, "tdm-policy": 42},
        ]
    )
    rules = parse_tdmrep(body)
    assert [r.location for r in rules.rules] == ["/ok"]
    assert rules.rules[0].policy is None
    assert [d.split(":")[0] for d in rules.diagnostics] == [
        "entry 0",
        "entry 1",
        "entry 2",
        "entry 3",
    ]


def test_the_same_location_twice_reserves_if_either_entry_does() -> None:
    body = rules_of(
        [
            {"location": "/shop/", "tdm-reservation": 0},
            {"location": "/shop/", "tdm-reservation": 1},
            {"location": "/blog/", "tdm-reservation": 1},
            {"location": "/blog/", "tdm-reservation": 0},
        ]
    )
    rules = parse_tdmrep(body)
    assert rules.answer("/shop/x").answer == "refused"  # type: ignore[union-attr]
    assert rules.answer("/blog/x").answer == "refused"  # type: ignore[union-attr]
    assert len(rules) == 2


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b"", "not JSON"),
        (b"<html>404</html>", "not JSON"),
        (b'[{"location": "/", "tdm-reservation": 1}', "not JSON"),  # cut short
        (b"\xff\xfe\x00[", "not JSON"),
        (b"[" * 200_000, "not JSON"),  # nesting deeper than the parser's stack
        (b'{"location": "/", "tdm-reservation": 1}', "not a JSON array but dict"),
        (b" " * MAX_BYTES, "500 KiB or more"),
    ],
)
def test_a_broken_file_gives_no_rules_and_says_why(body: bytes, said: str) -> None:
    rules = parse_tdmrep(body)
    assert len(rules) == 0 and rules.answer("/") is None
    assert len(rules.diagnostics) == 1 and rules.diagnostics[0].startswith(said)


def test_a_utf8_bom_and_unknown_keys_are_fine() -> None:
    body = b"\xef\xbb\xbf" + rules_of([{"location": "/", "tdm-reservation": 1, "x-note": "hi"}])
    assert parse_tdmrep(body).answer("/a").answer == "refused"  # type: ignore[union-attr]


def test_entries_past_the_cap_are_ignored_and_counted_once() -> None:
    body = rules_of([{"location": f"/p{i}/", "tdm-reservation": 1} for i in range(MAX_RULES + 5)])
    rules = parse_tdmrep(body)
    assert len(rules) == MAX_RULES
    assert rules.diagnostics == (f"more than {MAX_RULES} entries: the rest ignored",)


def test_a_hostile_pattern_of_many_stars_is_matched_without_backtracking() -> None:
    rules = parse_tdmrep(rules_of([{"location": "/" + "*a" * 2000 + "$", "tdm-reservation": 1}]))
    assert rules.answer("/" + "a" * 1999 + "b") is None
    assert rules.answer("/" + "a" * 2000).answer == "refused"  # type: ignore[union-attr]


def test_no_rules_says_nothing() -> None:
    assert NO_RULES.answer("/") is None and NO_RULES.rule("/x") is None


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["1"], 1),
        ([b" 0 "], 0),
        (["0", "1"], 1),
        (["0, 1"], 1),
        (["yes"], None),
        (["", "2"], None),
        (["0", "maybe"], 0),
        ([], None),
    ],
)
def test_header_and_meta_values(values: list[str | bytes], expected: int | None) -> None:
    assert reservation_value(values) == expected


def test_a_long_location_is_quoted_escaped_and_clipped() -> None:
    location = "/\x1b[31m" + "a" * 100_000
    rules = parse_tdmrep(json.dumps([{"location": location, "tdm-reservation": 1}]).encode())
    source = rules.rules[0].answer.source
    assert source.isprintable() and len(source) < 1_200
    assert source.startswith("tdmrep.json location /\\x1b[31maaa")
    assert source.endswith("more characters)")


def test_the_status_table_of_tdmrep_json() -> None:
    config = tdm_config(PolicyConfig(ttl=3600.0))
    url = "http://h/.well-known/tdmrep.json"

    def after(**result: Any) -> Any:
        return next_policy(None, FetchResult(url, url, **result), 1000.0, config)

    assert after(status=200, body=b"[]").status is Status.OK
    for status in (404, 401, 403, 429, 410):
        assert after(status=status).status is Status.UNAVAILABLE  # no reservation
    for failed in (after(status=500), after(status=503), after(error="TimeoutError")):
        assert failed.status is Status.UNREACHABLE  # unknown, never paused
        assert failed.expires_at == 1000.0 + 3600.0  # refetched at the next TTL

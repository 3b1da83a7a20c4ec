"""Use preferences, the pure part: parsing the values, combining answers, the record."""

from __future__ import annotations

import pytest

from scrapy_rep.core.uses import (
    AIPREF_LABELS,
    USES,
    UseAnswer,
    combine,
    parse_content_signal,
    parse_usage_prefs,
    record,
)


def test_the_uses_a_crawl_may_declare() -> None:
    assert USES == ("train-ai", "ai-input", "search")
    assert set(AIPREF_LABELS) <= set(USES)


# -- Content-Usage values (aipref vocabulary, an RFC 9651 Dictionary) ---------


def test_usage_prefs_y_and_n() -> None:
    assert parse_usage_prefs(b"train-ai=n, search=y") == {"train-ai": False, "search": True}


def test_usage_prefs_keep_unknown_labels_for_the_caller() -> None:
    assert parse_usage_prefs(b"ai-input=n, foo=y") == {"ai-input": False, "foo": True}


@pytest.mark.parametrize(
    "value",
    [b'train-ai="n"', b"train-ai", b"train-ai=?0", b"train-ai=no", b"train-ai=Y", b"train-ai=1"],
)
def test_usage_values_other_than_the_tokens_y_and_n_state_nothing(value: bytes) -> None:
    assert parse_usage_prefs(value) == {}


def test_usage_parameters_are_ignored_and_the_last_duplicate_wins() -> None:
    assert parse_usage_prefs(b"train-ai=y;why=1, train-ai=n") == {"train-ai": False}


@pytest.mark.parametrize("value", [b"Train-AI=n", b"train-ai=n,", b"train-ai=n search=y", b"="])
def test_a_usage_value_that_does_not_parse_is_none(value: bytes) -> None:
    assert parse_usage_prefs(value) is None


# -- Content-Signal values (Cloudflare) -------------------------------------


def test_cloudflare_managed_signal() -> None:
    assert parse_content_signal("search=yes, ai-train=no") == {"search": True, "train-ai": False}
    assert parse_content_signal("search=yes,ai-train=no,ai-input=no") == {
        "search": True,
        "train-ai": False,
        "ai-input": False,
    }


def test_signal_case_spaces_and_the_aipref_spelling() -> None:
    assert parse_content_signal(" AI-Train = No ,  Search=YES ,") == {
        "train-ai": False,
        "search": True,
    }
    assert parse_content_signal("train-ai=no") == {"train-ai": False}


def test_signal_other_keys_and_values_state_nothing() -> None:
    assert parse_content_signal("use=reference, ai-train=maybe, search=yes") == {"search": True}
    assert parse_content_signal("") == {}


def test_signal_a_use_given_twice_is_refused_if_either_says_no() -> None:
    assert parse_content_signal("ai-train=no, ai-train=yes") == {"train-ai": False}
    assert parse_content_signal("ai-train=yes, ai-train=no") == {"train-ai": False}


@pytest.mark.parametrize(
    "value",
    ["ai-train", "ai-train=", "=no", "ai-train no", "/images/ ai-train=no", 'ai-train="no"'],
)
def test_a_malformed_signal_is_none(value: str) -> None:
    assert parse_content_signal(value) is None


# -- combining and recording ------------------------------------------------


def answer(use: str, what: str, source: str) -> UseAnswer:
    return UseAnswer(use, what, source)  # type: ignore[arg-type]


def test_combine_a_refusal_wins_then_a_grant_then_unknown() -> None:
    combined = combine(
        [
            answer("train-ai", "unknown", "a"),
            answer("train-ai", "allowed", "b"),
            answer("train-ai", "refused", "c"),
            answer("train-ai", "allowed", "d"),
            answer("search", "unknown", "e"),
            answer("search", "allowed", "f"),
            answer("ai-input", "unknown", "g"),
            answer("ai-input", "unknown", "h"),
        ]
    )
    assert combined == {
        "train-ai": answer("train-ai", "refused", "c"),
        "search": answer("search", "allowed", "f"),
        "ai-input": answer("ai-input", "unknown", "g"),
    }


def test_combine_of_nothing_is_empty() -> None:
    assert combine([]) == {}


def test_record_is_plain_data() -> None:
    source = "robots.txt line 7 in group user-agent: * : Content-Signal: ai-train=no"
    combined = combine([answer("train-ai", "refused", source)])
    assert record(combined) == {"train-ai": {"answer": "refused", "source": source}}

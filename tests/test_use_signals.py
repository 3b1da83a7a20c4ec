"""What a response says about use, and how it meets the request-time answers (pure)."""

from __future__ import annotations

import pytest

from scrapy_rep.core.directives import page_directives
from scrapy_rep.core.use_signals import (
    NO_SIGNALS,
    NOTHING_SAID,
    ResponseSignals,
    request_answers,
    response_signals,
    response_uses,
)
from scrapy_rep.core.uses import UseAnswer, combine, uses_field

TOKEN = "testbot"
ROBOTS_NO = UseAnswer("train-ai", "refused", "robots.txt line 2 in group user-agent: * : x")
ROBOTS_YES = UseAnswer("train-ai", "allowed", "robots.txt line 2 in group user-agent: * : y")
FILE_RESERVED = UseAnswer("train-ai", "refused", "tdmrep.json location /articles/*")
FILE_OPEN = UseAnswer("train-ai", "allowed", "tdmrep.json location /articles/open/*")


def html(head: str) -> bytes:
    return f"<html><head>{head}</head><body>text</body></html>".encode()


def uses(signals: ResponseSignals, *before: UseAnswer, tdm_file: UseAnswer | None = None) -> dict:
    found = response_uses(("train-ai", "ai-input", "search"), before, tdm_file, signals)
    return {use: (a.answer, a.source) for use, a in found.items()}


def test_a_content_usage_header_n_wins_against_a_robots_txt_y() -> None:
    signals = response_signals(TOKEN, content_usage=[b"train-ai=n, search=y"])
    assert uses(signals, ROBOTS_YES) == {
        "train-ai": ("refused", "header Content-Usage: train-ai=n"),
        "ai-input": ("unknown", NOTHING_SAID),
        "search": ("allowed", "header Content-Usage: search=y"),
    }


def test_a_content_usage_header_y_does_not_lift_a_robots_txt_n() -> None:
    signals = response_signals(TOKEN, content_usage=[b"train-ai=y"])
    assert uses(signals, ROBOTS_NO)["train-ai"] == ("refused", ROBOTS_NO.source)


def test_content_usage_header_lines_are_one_dictionary_and_the_last_member_wins() -> None:
    signals = response_signals(TOKEN, content_usage=[b"train-ai=n", b"train-ai=y"])
    assert uses(signals)["train-ai"] == ("allowed", "header Content-Usage: train-ai=y")


@pytest.mark.parametrize("value", [b"Train-AI=n", b"train-ai=n,", b'train-ai="n"'])
def test_a_content_usage_header_that_does_not_parse_or_states_nothing_says_nothing(
    value: bytes,
) -> None:
    assert uses(response_signals(TOKEN, content_usage=[value]))["train-ai"] == (
        "unknown",
        NOTHING_SAID,
    )


def test_ai_input_is_no_aipref_label_in_a_content_usage_header() -> None:
    assert response_signals(TOKEN, content_usage=[b"ai-input=n"]) is NO_SIGNALS


def test_a_content_signal_header_answers_each_use_it_names_and_no_wins_against_robots_txt() -> None:
    signals = response_signals(TOKEN, content_signal=[b"search=yes, ai-train=no, ai-input=yes"])
    assert uses(signals, ROBOTS_YES) == {
        "train-ai": ("refused", "header Content-Signal: ai-train=no"),
        "ai-input": ("allowed", "header Content-Signal: ai-input=yes"),
        "search": ("allowed", "header Content-Signal: search=yes"),
    }
    lifted = response_signals(TOKEN, content_signal=[b"ai-train=yes"])
    assert uses(lifted, ROBOTS_NO)["train-ai"] == ("refused", ROBOTS_NO.source)


def test_content_signal_header_lines_are_one_value_and_a_no_in_either_wins() -> None:
    signals = response_signals(TOKEN, content_signal=[b"ai-train=yes", b"AI-Train=No"])
    assert uses(signals)["train-ai"] == ("refused", "header Content-Signal: ai-train=no")


@pytest.mark.parametrize("value", [b"ai-train", b"/images/ ai-train=no", b"ai-train=", b"use=full"])
def test_a_content_signal_header_that_does_not_parse_or_names_no_use_says_nothing(
    value: bytes,
) -> None:
    assert response_signals(TOKEN, content_signal=[value]) is NO_SIGNALS


# -- TDMRep: file, then header, then meta --------------------------------------------------


def test_the_tdm_reservation_header_overrides_the_file_both_ways() -> None:
    lifted = response_signals(TOKEN, tdm_reservation=[b"0"])
    assert uses(lifted, tdm_file=FILE_RESERVED)["train-ai"] == (
        "allowed",
        "header tdm-reservation: 0",
    )
    reserved = response_signals(TOKEN, tdm_reservation=[b"1"])
    assert uses(reserved, tdm_file=FILE_OPEN)["train-ai"] == (
        "refused",
        "header tdm-reservation: 1",
    )


def test_the_meta_tag_overrides_the_header_and_absence_resets_nothing() -> None:
    meta = '<meta name="tdm-reservation" content="0">'
    signals = response_signals(TOKEN, tdm_reservation=[b"1"], body=html(meta))
    assert uses(signals, tdm_file=FILE_RESERVED)["train-ai"] == (
        "allowed",
        '<meta name="tdm-reservation" content="0">',
    )
    nothing = response_signals(TOKEN, tdm_reservation=[b"maybe"], body=html("<title>x</title>"))
    assert uses(nothing, tdm_file=FILE_RESERVED)["train-ai"] == ("refused", FILE_RESERVED.source)


def test_a_lifted_tdm_reservation_still_meets_a_robots_txt_refusal() -> None:
    signals = response_signals(TOKEN, tdm_reservation=[b"0"])
    assert uses(signals, ROBOTS_NO, tdm_file=FILE_RESERVED)["train-ai"] == (
        "refused",
        ROBOTS_NO.source,
    )


# -- noai, noimageai -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "head", "source"),
    [
        ([b"noai"], "", "X-Robots-Tag noai"),
        ([b"noindex, noai"], "", "X-Robots-Tag noai"),
        ([b"testbot: noai"], "", "X-Robots-Tag (testbot:) noai"),
        ([b"otherbot: noindex", b"TestBot: NoAI"], "", "X-Robots-Tag (testbot:) noai"),
        ([], '<meta name="robots" content="noai, noimageai">', '<meta name="robots"> noai'),
        ([], '<meta name="testbot" content="noai">', '<meta name="testbot"> noai'),
        ([], "<META NAME=ROBOTS CONTENT='noindex noai'>", '<meta name="robots"> noai'),
    ],
)
def test_noai_refuses_train_ai_and_ai_input(headers: list[bytes], head: str, source: str) -> None:
    signals = response_signals(TOKEN, x_robots_tag=headers, body=html(head) if head else None)
    assert uses(signals) == {
        "train-ai": ("refused", source),
        "ai-input": ("refused", source),
        "search": ("unknown", NOTHING_SAID),
    }


def test_noai_for_another_crawler_says_nothing() -> None:
    signals = response_signals(TOKEN, x_robots_tag=[b"otherbot: noai"])
    assert signals is NO_SIGNALS


def test_noimageai_refuses_for_an_image_only() -> None:
    assert response_signals(TOKEN, x_robots_tag=[b"noimageai"]) is NO_SIGNALS
    image = response_signals(TOKEN, x_robots_tag=[b"noimageai"], image=True)
    assert uses(image)["ai-input"] == ("refused", "X-Robots-Tag noimageai")


def test_noai_in_a_comment_or_script_is_not_read() -> None:
    head = '<!-- <meta name="robots" content="noai"> --><script>"<meta name=robots content=noai>"'
    assert response_signals(TOKEN, body=html(head + "</script>")) is NO_SIGNALS


def test_the_page_directives_still_read_their_own_words_beside_noai() -> None:
    page = page_directives(TOKEN, 0.0, headers=["noai, noindex", "noimageai nofollow"])
    assert page.noindex and page.nofollow


@pytest.mark.parametrize(
    ("robots", "tdm_file", "signals"),
    [
        (robots, tdm_file, signals)
        for robots in (None, ROBOTS_NO, ROBOTS_YES, UseAnswer("train-ai", "unknown", "r"))
        for tdm_file in (None, FILE_RESERVED, FILE_OPEN)
        for signals in (
            NO_SIGNALS,
            response_signals(TOKEN, tdm_reservation=[b"0"]),
            response_signals(TOKEN, tdm_reservation=[b"1"]),
            response_signals(TOKEN, content_usage=[b"train-ai=y"]),
            response_signals(TOKEN, content_usage=[b"train-ai=n"], tdm_reservation=[b"0"]),
        )
    ],
)
def test_the_combined_request_record_gives_each_response_the_answer_of_the_separate_sources(
    robots: UseAnswer | None, tdm_file: UseAnswer | None, signals: ResponseSignals
) -> None:
    """The request path records one combined answer; split again, nothing is lost."""
    robots_answers = [robots] if robots is not None else []
    expected = response_uses(["train-ai"], robots_answers, tdm_file, signals)["train-ai"]
    recorded = uses_field(combine([*robots_answers, *([tdm_file] if tdm_file else [])]))
    before, split_file = request_answers(recorded)
    found = response_uses(["train-ai"], before, split_file, signals)["train-ai"]
    assert found.answer == expected.answer


def test_request_answers_skip_what_is_no_answer() -> None:
    assert request_answers(None) == ([], None)
    assert request_answers({"train-ai": {"answer": "perhaps", "source": "?"}}) == ([], None)


@pytest.mark.parametrize(
    ("values", "source"),
    [
        ([b"*;noai"], "Robots-Tag (*) noai"),
        ([b"otherbot;noindex, testbot;noai"], "Robots-Tag (testbot) noai"),
        ([b"testbot: noai"], "Robots-Tag (testbot:) noai"),
        ([b"noai"], "Robots-Tag noai"),
    ],
)
def test_noai_in_robots_tag_refuses_too(values: list[bytes], source: str) -> None:
    signals = response_signals(TOKEN, robots_tag=values)
    assert uses(signals)["train-ai"] == ("refused", source)
    assert response_signals(TOKEN, robots_tag=[b"otherbot;noai"]) is NO_SIGNALS

"""Use preferences, the pure part: the values, combining, the record, robots.txt's answers."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scrapy_rep.cli import diagnose
from scrapy_rep.core.uses import (
    AIPREF_LABELS,
    USES,
    Declared,
    UseAnswer,
    combine,
    parse_content_signal,
    parse_usage_prefs,
    robots_answers,
    uses_field,
)
from scrapy_rep.robotstxt import parse
from tests.support.examples import examples


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
    assert uses_field(combined) == {"train-ai": {"answer": "refused", "source": source}}


# -- robots.txt at request time ---------------------------------------------


#: the aipref attach draft's worked example (its robots.txt section)
DRAFT_EXAMPLE = """\
User-Agent: *
Allow: /
Disallow: /never/
Content-Usage: train-ai=n
Content-Usage: /ai-ok/ train-ai=y

User-Agent: ExampleBot
Allow: /
Content-Usage: train-ai=y
"""

#: the head of Cloudflare's managed robots.txt (its comment block shortened)
CLOUDFLARE_MANAGED = """\
# As a condition of accessing this website, you agree to abide by the following content signals:
# (a) If a content-signal = yes, you may collect content for the corresponding use.
# (b) If a content-signal = no, you may not collect content for the corresponding use.
# ai-train: training or fine-tuning AI models.
User-Agent: *
Content-signal: search=yes, ai-train=no
Allow: /
User-agent: GPTBot
Disallow: /
"""

TRAIN = Declared(uses=("train-ai",))


def answers(body: str, url: str, token: str = "mybot", declared: Declared = TRAIN):
    robots = parse(body)
    crawlable = robots.allowed(token, url)
    return {
        use: (a.answer, a.source)
        for use, a in robots_answers(robots, token, url, crawlable, declared).items()
    }


def test_draft_example_star_group() -> None:
    assert answers(DRAFT_EXAMPLE, "https://example.com/test") == {
        "train-ai": (
            "refused",
            "robots.txt line 4 in group user-agent: * (line 1): Content-Usage: train-ai=n",
        ),
    }
    assert answers(DRAFT_EXAMPLE, "https://example.com/ai-ok/test")["train-ai"] == (
        "allowed",
        "robots.txt line 5 in group user-agent: * (line 1): Content-Usage: /ai-ok/ train-ai=y",
    )


def test_draft_example_a_disallowed_path_has_no_preference() -> None:
    assert answers(DRAFT_EXAMPLE, "https://example.com/never/test") == {
        "train-ai": ("unknown", "no preference stated"),
    }


def test_draft_example_examplebot_uses_its_own_group() -> None:
    got = answers(DRAFT_EXAMPLE, "https://example.com/test", token="ExampleBot")
    assert got["train-ai"][0] == "allowed"
    assert "line 9 in group user-agent: examplebot (line 7)" in got["train-ai"][1]


def test_cloudflare_managed_file() -> None:
    everything = Declared(uses=USES)
    got = answers(CLOUDFLARE_MANAGED, "https://example.com/page", declared=everything)
    source = (
        "robots.txt line 6 in group user-agent: * (line 5): Content-Signal: search=yes, ai-train=no"
    )
    assert got == {
        "train-ai": ("refused", source),
        "search": ("allowed", source),
        "ai-input": ("unknown", "no preference stated"),
    }
    # GPTBot's own group replaces '*' wholesale: no signal for it.
    assert answers(CLOUDFLARE_MANAGED, "/page", token="GPTBot", declared=everything) == {
        use: ("unknown", "no preference stated") for use in USES
    }


def test_with_no_use_declared_every_stated_label_is_answered() -> None:
    got = answers(CLOUDFLARE_MANAGED, "/page", declared=Declared())
    assert {use: answer for use, (answer, _) in got.items()} == {
        "train-ai": "refused",
        "search": "allowed",
    }
    assert answers("User-agent: *\nDisallow: /x\n", "/page", declared=Declared()) == {}


def test_a_named_group_replaces_star_for_content_usage() -> None:
    body = "User-agent: *\nContent-Usage: train-ai=n\n\nUser-agent: mybot\nAllow: /\n"
    assert answers(body, "/a")["train-ai"][0] == "unknown"
    assert answers(body, "/a", token="other")["train-ai"][0] == "refused"


def test_groups_for_the_same_token_merge() -> None:
    body = (
        "User-agent: mybot\nContent-Usage: /a/ train-ai=y\n\n"
        "User-agent: other\nDisallow: /\n\n"
        "User-agent: mybot\nContent-Usage: /a/b/ train-ai=n\n"
    )
    assert answers(body, "/a/x")["train-ai"][0] == "allowed"
    assert answers(body, "/a/b/x")["train-ai"] == (
        "refused",
        "robots.txt line 8 in group user-agent: mybot (line 7): Content-Usage: /a/b/ train-ai=n",
    )


def test_content_usage_is_a_rule_shared_by_the_run_of_user_agents() -> None:
    body = "User-agent: a\nUser-agent: mybot\nContent-Usage: train-ai=n\n"
    assert answers(body, "/x")["train-ai"][0] == "refused"
    assert answers(body, "/x", token="a")["train-ai"][0] == "refused"
    # and it ends the run: the next user-agent line opens a group of its own
    body = "User-agent: a\nContent-Usage: train-ai=n\nUser-agent: mybot\nDisallow: /p\n"
    assert answers(body, "/x")["train-ai"][0] == "unknown"
    assert parse(body).allowed("a", "/p")


def test_longest_path_wins_with_allow_disallow_normalisation() -> None:
    body = (
        "User-agent: *\nContent-Usage: train-ai=y\nContent-Usage: /d%61ta/ train-ai=n, search=y\n"
        "Content-Usage: /data/open/* train-ai=y\n"
    )
    assert answers(body, "/other")["train-ai"][0] == "allowed"
    assert answers(body, "/data/x")["train-ai"][0] == "refused"
    assert answers(body, "/%64ata/x")["train-ai"][0] == "refused"
    assert answers(body, "/data/open/x")["train-ai"][0] == "allowed"
    # the longest rule states nothing for search: unknown, not the shorter rule's y
    assert answers(body, "/data/open/x", declared=Declared(uses=("search",)))["search"][0] == (
        "unknown"
    )


def test_identical_paths_combine_label_by_label_n_beating_y() -> None:
    body = (
        "User-agent: *\nContent-Usage: /a/ train-ai=y, search=y\nContent-Usage: /a/ train-ai=n\n"
        "Content-Usage: /%61/ search=y\n"
    )
    both = Declared(uses=("train-ai", "search"))
    got = answers(body, "/a/x", declared=both)
    assert got["train-ai"] == (
        "refused",
        "robots.txt line 3 in group user-agent: * (line 1): Content-Usage: /a/ train-ai=n",
    )
    assert got["search"][0] == "allowed"


def test_a_rule_without_a_path_and_a_rule_for_slash_are_the_same_path() -> None:
    body = "User-agent: *\nContent-Usage: train-ai=y\nContent-Usage: / train-ai=n\n"
    assert answers(body, "/x")["train-ai"][0] == "refused"


def test_a_dictionary_that_fails_makes_every_label_of_that_rule_unknown() -> None:
    body = (
        "User-agent: *\nContent-Usage: train-ai=y, search=y\n"
        "Content-Usage: /x/ Train-AI=n, search=n\n"
    )
    both = Declared(uses=("train-ai", "search"))
    assert {u: a for u, (a, _) in answers(body, "/x/1", declared=both).items()} == {
        "train-ai": "unknown",
        "search": "unknown",
    }
    assert answers(body, "/y", declared=both)["search"][0] == "allowed"


def test_unknown_labels_are_ignored() -> None:
    body = "User-agent: *\nContent-Usage: ai-input=n, bots=n\n"
    assert answers(body, "/x", declared=Declared(uses=USES)) == {
        use: ("unknown", "no preference stated") for use in USES
    }


def test_content_signal_belongs_to_the_user_agent_lines_above_it() -> None:
    body = "User-agent: mybot\nContent-Signal: ai-train=no\nUser-agent: other\nDisallow: /private\n"
    assert answers(body, "/x")["train-ai"][0] == "refused"
    assert answers(body, "/x", token="other")["train-ai"][0] == "unknown"
    assert not parse(body).allowed("mybot", "/private")  # the rule is shared


def test_content_signal_lines_combine_and_file_wide_ones_are_a_fallback() -> None:
    body = "User-agent: *\nContent-Signal: ai-train=yes\nContent-Signal: ai-train=no\n"
    assert answers(body, "/x")["train-ai"][0] == "refused"
    body = "Content-Signal: ai-train=no, search=yes\nUser-agent: *\nDisallow: /p\n"
    assert answers(body, "/x")["train-ai"] == (
        "refused",
        "robots.txt line 1 before any group: Content-Signal: ai-train=no, search=yes",
    )
    body += "User-agent: mybot\nContent-Signal: ai-train=yes\n"
    assert answers(body, "/x")["train-ai"][0] == "allowed"


def test_content_usage_and_content_signal_combine_a_refusal_winning() -> None:
    body = "User-agent: *\nContent-Signal: ai-train=yes\nContent-Usage: train-ai=n\n"
    assert answers(body, "/x")["train-ai"][0] == "refused"


# -- policy tokens -------------------------------------------------------------

SHOP = Declared(uses=("train-ai",), tokens={"train-ai": "shopbot-training"})


def test_policy_token_group_disallows_the_path() -> None:
    body = "User-agent: shopbot-training\nDisallow: /products/\n\nUser-agent: *\nAllow: /\n"
    assert answers(body, "/products/1", declared=SHOP)["train-ai"] == (
        "refused",
        "policy token shopbot-training: disallowed by Disallow: /products/ (line 2) "
        "in group user-agent: shopbot-training (line 1)",
    )
    assert answers(body, "/about", declared=SHOP)["train-ai"] == (
        "allowed",
        "policy token shopbot-training: allowed: no rule matches",
    )


def test_policy_token_falls_back_to_star() -> None:
    # A site that disallows everything for '*' and names only the crawl's own
    # token refuses the use: that is what its file says.
    body = "User-agent: *\nDisallow: /\n\nUser-agent: mybot\nAllow: /\n"
    assert answers(body, "/a", declared=SHOP)["train-ai"][0] == "refused"
    assert parse(body).allowed("mybot", "/a")


def test_policy_token_refusal_beats_a_content_usage_grant() -> None:
    body = "User-agent: *\nContent-Usage: train-ai=y\n\nUser-agent: shopbot-training\nDisallow: /\n"
    assert answers(body, "/a", declared=SHOP)["train-ai"][0] == "refused"


def test_more_answers_join_the_combine() -> None:
    robots = parse("User-agent: *\nContent-Usage: train-ai=y\n")
    tdm = UseAnswer("train-ai", "refused", "tdmrep.json location /")
    combined = robots_answers(robots, "mybot", "/a", True, TRAIN, more=[tdm])
    assert combined == {"train-ai": tdm}


# -- lint ----------------------------------------------------------------------


def test_diagnose_lines_that_say_nothing_usable() -> None:
    body = (
        "Content-Signal: ai-train\n"
        "User-agent: *\nContent-Usage: Train-AI=n\nContent-Usage: /x/ ai-input=n\n"
        "Content-Signal: use=reference\nContent-Usage: train-ai=n\nContent-Signal: search=yes\n"
    )
    assert [(line, kind) for line, kind, _ in diagnose(parse(body))] == [
        (1, "invalid-content-signal"),
        (3, "invalid-content-usage"),
        (4, "content-usage-states-nothing"),
        (5, "content-signal-states-nothing"),
    ]


# -- hostile input ---------------------------------------------------------------


_LINES = st.sampled_from(
    [
        "User-agent: *", "User-agent: mybot", "User-agent: shopbot-training", "Allow: /",
        "Disallow: /p", "Content-Usage: train-ai=n", "Content-Usage: /a/ train-ai=y, search=n",
        "Content-Usage: /a* Train-ai=n", "Content-Usage: /%zz\ttrain-ai=y", "Content-Usage:",
        "Content-Usage: /only-a-path", "Content-Signal: ai-train=no, search=yes",
        "Content-Signal: use=reference", "Content-Signal: =", "Content-Signal: /x ai-train=no",
        "Content-Usage: train-ai=:AAAA:, search=(y n);p=?1", "License: https://e.example/l",
        "Crawl-delay: 1", "", "# c",
    ]
)  # fmt: skip
_NOISE = st.text(st.characters(codec="utf-8"), max_size=30)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(_LINES, _NOISE.map(lambda t: "Content-Usage: " + t),
                          _NOISE.map(lambda t: "Content-Signal: " + t)), max_size=12),
       st.sampled_from(["/", "/a/b", "/p", "/%C3%A9", "/robots.txt"]))  # fmt: skip
def test_answers_and_lint_never_raise_and_carry_printable_text(lines: list[str], path: str) -> None:
    robots = parse("\n".join(lines))
    declared = Declared(USES, drop=True, tokens={"train-ai": "shopbot-training"})
    for token in ("mybot", "other"):
        got = robots_answers(robots, token, path, robots.allowed(token, path), declared)
        assert set(got) == set(USES)
        for answer in got.values():
            assert answer.answer in ("allowed", "refused", "unknown")
            assert answer.source.isprintable()
            answer.source.encode("utf-8")  # valid text, no lone surrogates
    for _line, _kind, text in diagnose(robots):
        assert text.isprintable()


def test_a_hostile_signal_is_escaped_in_the_source() -> None:
    body = "User-agent: *\nContent-Signal: ai-train=no, x=\x1b]0;pwned\x07\n"
    # the escape sequence makes the line malformed: it states nothing, and lint says so
    assert answers(body, "/a")["train-ai"][0] == "unknown"
    (found,) = diagnose(parse(body))
    assert found[1] == "invalid-content-signal" and "\\x1b]0;pwned\\x07" in found[2]
    body = "User-agent: *\nContent-Usage: /a\u202e/ train-ai=n\n"
    answer, source = answers(body, "/a%E2%80%AE/x")["train-ai"]
    assert answer == "refused"
    assert source.endswith("Content-Usage: /a\\u202e/ train-ai=n")

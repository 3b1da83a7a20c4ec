"""``judge_record``: the three answers for one request and the action they lead to. Pure."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from scrapy_rep import parse
from scrapy_rep.core.decision import (
    APPROVED,
    DOWNLOAD,
    DROP,
    PARK,
    REJECTED,
    UNRESOLVED,
    USE_REFUSED,
    judge_record,
    page_drop,
    unjudged,
    withheld,
)
from scrapy_rep.core.policy import FetchResult, Policy, PolicyConfig, Status, next_policy
from scrapy_rep.core.uses import Declared, UseAnswer
from tests.support.decision import EVERY_FIELD, FIELDS

NOW = 1_700_000_000.0
ORIGIN = "https://example.com:443"
ROBOTS_URL = "https://example.com/robots.txt"
BODY = b"""User-agent: *
Disallow: /private
Allow: /private/open

User-agent: otherbot
Disallow: /
"""


def policy_for(status: int | None, body: bytes = b"") -> Policy:
    error = None if status is not None else "TimeoutError"
    fetched = FetchResult(ROBOTS_URL, ROBOTS_URL, status, body, {}, error)
    return next_policy(None, fetched, NOW, PolicyConfig())


OK = policy_for(200, BODY)
ROBOTS = parse(BODY)


def url(path: str) -> str:
    return "https://example.com" + path


def test_disallowed_by_a_rule() -> None:
    decision = judge_record(ORIGIN, "testbot", url("/private/x"), OK, ROBOTS)
    assert (decision["rep_decision"], decision["action"], decision["reason"]) == (
        "disallow",
        DROP,
        "disallow-rule",
    )
    assert decision["matched_rule"] == "disallow: /private"
    assert decision["matched_line"] == 2
    assert decision["group"] == "user-agent: * (line 1)"
    assert decision["collection_decision"] == UNRESOLVED  # not asked: robots.txt said no
    assert "Disallow: /private (line 2)" in decision["detail"]


def test_allowed_by_a_longer_allow_rule() -> None:
    decision = judge_record(ORIGIN, "testbot", url("/private/open/y"), OK, ROBOTS)
    assert (decision["rep_decision"], decision["action"], decision["reason"]) == (
        "allow",
        DOWNLOAD,
        "allow-rule",
    )
    assert decision["matched_rule"] == "allow: /private/open"
    assert decision["matched_line"] == 3
    assert decision["collection_decision"] == APPROVED


def test_allowed_when_no_rule_matches() -> None:
    decision = judge_record(ORIGIN, "testbot", url("/public"), OK, ROBOTS)
    assert (decision["rep_decision"], decision["action"], decision["reason"]) == (
        "allow",
        DOWNLOAD,
        "no-matching-rule",
    )
    assert decision["matched_rule"] is None and decision["matched_line"] is None
    assert decision["group"] == "user-agent: * (line 1)"


def test_the_token_selects_its_own_group() -> None:
    decision = judge_record(ORIGIN, "otherbot", url("/public"), OK, ROBOTS)
    assert decision["rep_decision"] == "disallow"
    assert decision["group"] == "user-agent: otherbot (line 5)"
    assert decision["matched_line"] == 6
    assert decision["product_token"] == "otherbot"


def test_no_group_for_the_token() -> None:
    robots = parse(b"User-agent: otherbot\nDisallow: /\n")
    policy = policy_for(200, b"User-agent: otherbot\nDisallow: /\n")
    decision = judge_record(ORIGIN, "testbot", url("/x"), policy, robots)
    assert (decision["rep_decision"], decision["reason"], decision["group"]) == (
        "allow",
        "no-group",
        None,
    )


def test_robots_txt_itself_is_always_allowed() -> None:
    robots = parse(b"User-agent: *\nDisallow: /\n")
    policy = policy_for(200, b"User-agent: *\nDisallow: /\n")
    decision = judge_record(ORIGIN, "testbot", ROBOTS_URL, policy, robots)
    assert (decision["rep_decision"], decision["reason"]) == ("allow", "robots-txt")


def test_disallowed_may_be_parked() -> None:
    decision = judge_record(ORIGIN, "testbot", url("/private"), OK, ROBOTS, disallowed_action=PARK)
    assert (decision["rep_decision"], decision["action"]) == ("disallow", PARK)


def test_stale_copy_says_so() -> None:
    stale = replace(OK, stale_since=NOW - 10)
    decision = judge_record(ORIGIN, "testbot", url("/private"), stale, ROBOTS)
    assert decision["rep_decision"] == "disallow"
    assert "last good copy" in decision["detail"]


@pytest.mark.parametrize(
    ("status", "rep", "action", "reason"),
    [
        (Status.UNAVAILABLE, "allow", DOWNLOAD, "robots-unavailable"),
        (Status.UNREACHABLE, "disallow", DROP, "robots-unreachable"),
        (Status.PAUSED, "unresolved", PARK, "origin-paused"),
        (Status.UNRESOLVED, "unresolved", DROP, "policy-unresolved"),
    ],
)
def test_each_policy_status(status: Status, rep: str, action: str, reason: str) -> None:
    policy = replace(policy_for(404), status=status, reason=f"because {status.value}")
    decision = judge_record(ORIGIN, "testbot", url("/private"), policy, None)
    assert (decision["rep_decision"], decision["action"], decision["reason"]) == (
        rep,
        action,
        reason,
    )
    assert decision["policy_status"] == status.value
    assert decision["detail"] == f"because {status.value}"
    assert decision["matched_rule"] is None and decision["group"] is None


def test_unreachable_follows_the_disallowed_action() -> None:
    policy = replace(policy_for(503), status=Status.UNREACHABLE)
    assert (
        judge_record(ORIGIN, "t", url("/"), policy, None, disallowed_action=PARK)["action"] == PARK
    )


def test_ok_without_a_parsed_file_is_never_allowed() -> None:
    decision = judge_record(ORIGIN, "testbot", url("/x"), OK, None)
    assert decision["rep_decision"] == "unresolved"
    assert decision["action"] == DROP


def test_collection_rejected() -> None:
    decision = judge_record(ORIGIN, "testbot", url("/public"), OK, ROBOTS, collection=REJECTED)
    assert (decision["rep_decision"], decision["collection_decision"]) == ("allow", REJECTED)
    assert (decision["action"], decision["reason"]) == (DROP, "collection-rejected")


@pytest.mark.parametrize("unresolved_action", [DROP, PARK])
def test_collection_unresolved(unresolved_action: str) -> None:
    decision = judge_record(
        ORIGIN,
        "testbot",
        url("/public"),
        OK,
        ROBOTS,
        collection=UNRESOLVED,
        unresolved_collection_action=unresolved_action,
    )
    assert decision["collection_decision"] == UNRESOLVED
    assert (decision["action"], decision["reason"]) == (unresolved_action, "collection-unresolved")


def test_collection_does_not_override_a_disallow() -> None:
    decision = judge_record(ORIGIN, "testbot", url("/private"), OK, ROBOTS, collection=APPROVED)
    assert decision["action"] == DROP
    assert decision["reason"] == "disallow-rule"


def test_collection_on_an_unavailable_file() -> None:
    decision = judge_record(ORIGIN, "t", url("/x"), policy_for(404), None, collection=REJECTED)
    assert (decision["rep_decision"], decision["action"]) == ("allow", DROP)
    assert decision["reason"] == "collection-rejected"


def test_record_has_every_field_and_is_json() -> None:
    record = judge_record(ORIGIN, "testbot", url("/private/x"), OK, ROBOTS)
    assert set(FIELDS) <= set(record)
    assert json.loads(json.dumps(record)) == record
    assert record["origin"] == ORIGIN
    assert record["url"] == url("/private/x")
    assert record["policy_status"] == "ok"
    assert record["policy_http_status"] == 200
    assert record["policy_fetched_at"] == NOW
    assert record["policy_digest"] == OK.digest
    assert record["policy_url"] == ROBOTS_URL
    assert record["policy_final_url"] == ROBOTS_URL
    assert (record["action"], record["reason"]) == ("drop", "disallow-rule")


def test_every_answer_is_made_by_the_one_builder_with_the_same_fields() -> None:
    records = {
        "judged": judge_record(ORIGIN, "testbot", url("/x"), OK, ROBOTS),
        "withheld": withheld(ORIGIN, "testbot", url("/x"), OK, "park-expired"),
        "pending": unjudged(ORIGIN, "testbot", url("/x"), None, DROP, "origin-pending", "why"),
        "page": page_drop(ORIGIN, "testbot", url("/x"), "page-nofollow", "X-Robots-Tag: none", "p"),
    }
    for kind, record in records.items():
        assert list(record) == EVERY_FIELD, kind
        assert json.loads(json.dumps(record)) == record, kind
    assert records["withheld"]["policy_digest"] == OK.digest
    assert records["withheld"]["detail"] == "parked longer than REP_PARK_TIMEOUT"
    assert records["pending"]["policy_status"] == "pending"
    assert records["pending"]["policy_url"] is None
    assert (records["page"]["policy_status"], records["page"]["matched_rule"]) == (
        "page",
        "X-Robots-Tag: none",
    )


# --- use preferences ------------------------------------------------------------------

SIGNALLED = b"""User-agent: *
Content-Signal: search=yes, ai-train=no
Content-Usage: /open/ train-ai=y
Disallow: /private
"""
SIGNALLED_OK = policy_for(200, SIGNALLED)
SIGNALLED_ROBOTS = parse(SIGNALLED)
TRAIN = Declared(("train-ai",))
TRAIN_DROP = Declared(("train-ai",), drop=True)


def test_no_use_declared_and_no_preference_stated_records_nothing() -> None:
    assert judge_record(ORIGIN, "testbot", url("/x"), OK, ROBOTS)["uses"] == {}


def test_with_no_use_declared_the_stated_labels_are_recorded() -> None:
    decision = judge_record(ORIGIN, "testbot", url("/x"), SIGNALLED_OK, SIGNALLED_ROBOTS)
    source = (
        "robots.txt line 2 in group user-agent: * (line 1): Content-Signal: search=yes, ai-train=no"
    )
    assert decision["uses"] == {
        "train-ai": {"answer": "refused", "source": source},
        "search": {"answer": "allowed", "source": source},
    }
    assert decision["action"] == DOWNLOAD  # recorded, not enforced


def test_a_declared_use_is_always_answered() -> None:
    decision = judge_record(ORIGIN, "testbot", url("/x"), OK, ROBOTS, declared=TRAIN)
    assert decision["uses"] == {"train-ai": {"answer": "unknown", "source": "no preference stated"}}
    for status in (404, None):  # no rules, unreachable: nothing stated either
        decision = judge_record(
            ORIGIN, "testbot", url("/x"), policy_for(status), None, declared=TRAIN
        )
        assert decision["uses"]["train-ai"]["answer"] == "unknown"


def test_drop_a_request_robots_txt_refuses_for_a_declared_use() -> None:
    decision = judge_record(
        ORIGIN, "testbot", url("/x"), SIGNALLED_OK, SIGNALLED_ROBOTS, declared=TRAIN_DROP
    )
    assert (decision["rep_decision"], decision["action"], decision["reason"]) == (
        "allow",
        DROP,
        USE_REFUSED,
    )
    assert decision["detail"].startswith("refused for train-ai by robots.txt line 2 in group")
    # a Content-Usage grant does not lift the Content-Signal refusal: any refusal wins
    decision = judge_record(
        ORIGIN, "testbot", url("/open/x"), SIGNALLED_OK, SIGNALLED_ROBOTS, declared=TRAIN_DROP
    )
    assert decision["action"] == DROP
    # without the signal, the longer Content-Usage path allows what the shorter refuses
    body = b"User-agent: *\nContent-Usage: train-ai=n\nContent-Usage: /open/ train-ai=y\n"
    for path, action in (("/x", DROP), ("/open/x", DOWNLOAD)):
        decision = judge_record(
            ORIGIN, "t", url(path), policy_for(200, body), parse(body), declared=TRAIN_DROP
        )
        assert decision["action"] == action


def test_only_a_declared_use_refused_drops() -> None:
    search = Declared(("search",), drop=True)
    decision = judge_record(
        ORIGIN, "testbot", url("/x"), SIGNALLED_OK, SIGNALLED_ROBOTS, declared=search
    )
    assert decision["action"] == DOWNLOAD
    assert decision["uses"]["train-ai"]["answer"] == "refused"  # stated, recorded


def test_record_action_never_drops_for_a_use() -> None:
    decision = judge_record(
        ORIGIN, "testbot", url("/x"), SIGNALLED_OK, SIGNALLED_ROBOTS, declared=TRAIN
    )
    assert decision["action"] == DOWNLOAD
    assert decision["uses"]["train-ai"]["answer"] == "refused"


def test_a_disallow_stays_a_disallow_with_uses_declared() -> None:
    decision = judge_record(
        ORIGIN, "testbot", url("/private/x"), SIGNALLED_OK, SIGNALLED_ROBOTS, declared=TRAIN_DROP
    )
    assert (decision["action"], decision["reason"]) == (DROP, "disallow-rule")


def test_more_uses_join_robots_txt_even_without_rules() -> None:
    tdm = UseAnswer("train-ai", "refused", "tdmrep.json location /")
    decision = judge_record(
        ORIGIN, "t", url("/x"), policy_for(404), None, declared=TRAIN_DROP, more_uses=[tdm]
    )
    assert (decision["action"], decision["reason"]) == (DROP, USE_REFUSED)
    decision = judge_record(ORIGIN, "t", url("/x"), OK, ROBOTS, declared=TRAIN, more_uses=[tdm])
    assert decision["uses"] == {
        "train-ai": {"answer": "refused", "source": "tdmrep.json location /"}
    }


def test_the_record_made_once_per_rule_equals_the_answers() -> None:
    # robots_record keeps one record per matching rule: the same as answering afresh
    from scrapy_rep.core.uses import USES, robots_answers, robots_record, uses_field

    for declared in (Declared(), TRAIN, Declared(USES)):
        for path in ("/x", "/open/x", "/open/", "/private/x", "/robots.txt"):
            robots = parse(SIGNALLED)
            crawlable = robots.allowed("testbot", path)
            first = robots_record(robots, "testbot", path, crawlable, declared)
            again = robots_record(robots, "testbot", path, crawlable, declared)
            fresh = uses_field(
                robots_answers(parse(SIGNALLED), "testbot", path, crawlable, declared)
            )
            assert first == again == fresh
            with pytest.raises(TypeError):  # shared by the requests it answers: read-only
                first.clear()
            assert dict(first) == fresh  # a copy is the caller's own


def test_uses_are_in_the_json_record() -> None:
    record = judge_record(ORIGIN, "testbot", url("/x"), SIGNALLED_OK, SIGNALLED_ROBOTS)
    assert json.loads(json.dumps(record))["uses"]["train-ai"]["answer"] == "refused"


def test_a_record_without_uses_shares_one_read_only_empty_mapping() -> None:
    # no allocation per request: judging millions of requests stays as cheap as before
    import pickle

    from scrapy_rep.core.uses import NO_USES

    first = judge_record(ORIGIN, "testbot", url("/x"), OK, ROBOTS)["uses"]
    assert first is NO_USES and first == {} and not first
    assert judge_record(ORIGIN, "t", url("/x"), policy_for(404), None)["uses"] is NO_USES
    assert json.dumps(first) == "{}" and pickle.loads(pickle.dumps(first)) == {}
    with pytest.raises(TypeError, match="copy them to change them"):
        first["train-ai"] = {"answer": "refused", "source": "x"}
    assert {**first, "search": {}} == {"search": {}}

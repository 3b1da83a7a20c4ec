"""The verdict ``scrapy-rep recheck`` gives an item from its decision record now (pure)."""

from __future__ import annotations

import pytest

from scrapy_rep.core.decision import decision_record, excluded_site, unjudged
from scrapy_rep.core.recheck import ALLOWED, REFUSED, UNKNOWN, verdict

ORIGIN, URL = "https://a.example:443", "https://a.example/x"


def record(rep: str, action: str, reason: str, **extra: object) -> dict[str, object]:
    found = decision_record(ORIGIN, "mybot", URL, None, rep, "approved", action, reason, "d")
    return {**found, **extra}


def test_allowed_refused_and_unknown() -> None:
    assert verdict(record("allow", "download", "no-matching-rule")).verdict == ALLOWED
    refused = verdict(
        record("disallow", "drop", "disallow-rule", matched_rule="disallow: /x", matched_line=3)
    )
    assert (refused.verdict, refused.why) == (REFUSED, "disallow-rule: disallow: /x (line 3)")
    paused = unjudged(ORIGIN, "mybot", URL, None, "drop", "origin-paused", "503 for 60s")
    paused["policy_http_status"] = 503
    assert verdict(paused).verdict == UNKNOWN and "robots.txt 503" in verdict(paused).why


def test_a_refused_declared_use_refuses_even_when_recorded_only() -> None:
    uses = {"train-ai": {"answer": "refused", "source": "robots.txt line 3: Content-Usage"}}
    found = verdict(record("allow", "download", "no-matching-rule", uses=uses))
    assert found.verdict == REFUSED and found.why.startswith("use-refused: train-ai by robots.txt")


def test_an_excluded_site_and_a_rejected_collection_are_refused() -> None:
    excluded = excluded_site(ORIGIN, "mybot", URL, "a.example", None, "REP_EXCLUDE")
    assert verdict(excluded).verdict == REFUSED
    assert verdict(record("allow", "drop", "collection-rejected")).verdict == REFUSED


def test_a_large_feed_shows_its_progress_at_each_tenth(capsys: pytest.CaptureFixture[str]) -> None:
    from scrapy_rep.cli.recheck import _progress

    progress = _progress(2000, 40)
    for done in range(50, 2001, 50):  # an origin's URLs judged at a time
        progress(done)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 10
    assert lines[0] == "recheck: 200 of 2000 URLs judged (40 origins)"
    assert lines[-1] == "recheck: 2000 of 2000 URLs judged (40 origins)"
    small = _progress(999, 3)
    small(999)
    assert capsys.readouterr().err == ""

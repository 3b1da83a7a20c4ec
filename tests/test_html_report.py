"""The crawl report from hand-written audit records: fates, uses refused, escaping.

No crawl and no browser; the page of a real crawl read in Chromium is in
``tests/integration/test_html_report.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scrapy_rep.report.html import read_audit_log, render
from scrapy_rep.report.story import EXAMPLES, story_of


def test_a_held_request_is_followed_to_its_fate() -> None:
    story = story_of(
        [
            {"type": "parked", "at": 1.0, "url": "u1", "origin": "o", "reason": "origin-paused"},
            {"type": "parked", "at": 1.0, "url": "u2", "origin": "o", "reason": "origin-paused"},
            {"type": "released", "at": 2.0, "url": "u1", "origin": "o"},
            {"type": "decision", "at": 2.1, "url": "u1", "origin": "o", "action": "download"},
            {"type": "decision", "at": 9.0, "url": "u2", "origin": "o", "action": "drop",
             "reason": "park-expired"},
        ]
    )  # fmt: skip
    assert [(h.url, h.released_at, h.fate) for h in story.held] == [
        ("u1", 2.0, "download"),
        ("u2", None, "drop (park-expired)"),
    ]


def test_a_held_request_requeued_or_kept_at_close_has_that_fate_and_is_no_drop() -> None:
    def parked(url: str) -> dict[str, Any]:
        return {"type": "parked", "at": 1.0, "url": url, "origin": "o", "reason": "origin-paused"}

    story = story_of(
        [
            parked("u1"), parked("u2"), parked("u3"), parked("u4"),
            {"type": "decision", "at": 5.0, "url": "u1", "origin": "o", "action": "requeue",
             "reason": "origin-paused"},
            {"type": "decision", "at": 5.0, "url": "u2", "origin": "o", "action": "keep",
             "reason": "origin-paused"},
            # how an older version said it: records of their own
            {"type": "requeued", "at": 6.0, "url": "u3", "reason": "spider-closed"},
            {"type": "kept", "at": 6.0, "url": "u4", "reason": "jobdir"},
        ]
    )  # fmt: skip
    assert [(h.url, h.fate, h.fate_at) for h in story.held] == [
        ("u1", "requeued into the shared queue", 5.0),
        ("u2", "kept in the JOBDIR for the resumed crawl", 5.0),
        ("u3", "requeued into the shared queue", 6.0),
        ("u4", "kept in the JOBDIR for the resumed crawl", 6.0),
    ]
    assert story.unknown == 0 and story.dropped == [] and story.origin("o").dropped == {}
    assert story.handed_over == 2
    page = render(story)
    assert "<b>0</b> dropped" in page
    assert "(0 still held when the log ends, 2 requeued or kept at close)" in page


def test_uses_a_site_refused_are_listed_by_origin_with_where_it_says_so() -> None:
    uses = {
        "train-ai": {"answer": "refused", "source": "robots.txt line 4"},
        "search": {"answer": "allowed", "source": "robots.txt line 4"},
    }
    story = story_of(
        [{"type": "decision", "url": "u", "origin": "o", "action": "download", "uses": uses}]
    )
    assert story.origins["o"].refused == {"train-ai": {"robots.txt line 4"}}
    html = render(story)
    assert "train-ai" in html and "robots.txt line 4" in html


def test_a_broken_log_still_gives_a_page_that_says_what_it_left_out(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    log.write_text(
        '{"type": "fetch", "at": 1, "origin": "o", "status": "ok"}\n'
        "not json\n[1, 2]\n"
        '{"type": "future-thing", "at": 2}\n'
        '{"type": "decision", "at": "yesterday", "origin": null, "action": 5}\n'
        '{"type": "fetch", "at": 3, "origin": "</script><b>x', encoding="utf-8"
    )  # fmt: skip
    read = read_audit_log(str(log))
    # the decision whose `at` is text and `action` a number is malformed: left out, counted
    assert read.bad_lines == 4 and len(read.records) == 2
    html = render(story_of(read.records), bad_lines=read.bad_lines)
    assert "4 lines of the log could not be read" in html
    assert "1 records of a type this version does not know" in html


def test_everything_from_the_site_is_escaped() -> None:
    evil = '"><script>alert(1)</script>'
    story = story_of(
        [
            {"type": "fetch", "at": 1.0, "origin": evil, "status": evil, "reason": evil,
             "digest": evil},
            {"type": "decision", "at": 2.0, "origin": evil, "url": evil, "action": "drop",
             "reason": evil, "matched_rule": evil, "group": evil, "product_token": evil},
        ]
    )  # fmt: skip
    html = render(story, source=evil)
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)" in html
    assert html.count("<script>") == 1  # the page's own


def test_rep_report_page_needs_the_audit_log_it_is_made_from(tmp_path: Path) -> None:
    import pytest

    from scrapy_rep.runtime.settings import RepSettings, SettingError

    page = str(tmp_path / "r.html")
    with pytest.raises(SettingError, match="REP_REPORT needs REP_DECISION_LOG"):
        RepSettings.from_settings({"USER_AGENT": "testbot/1.0", "REP_REPORT": page}.get)
    log = str(tmp_path / "a.jsonl")
    config = RepSettings.from_settings(
        {"USER_AGENT": "testbot/1.0", "REP_REPORT": page, "REP_DECISION_LOG": log}.get
    )
    assert config.report_html == page


def test_a_use_refused_drop_names_the_source_that_refused_not_the_rule_it_passed() -> None:
    from scrapy_rep.report.story import dropped_by

    signal = "robots.txt line 29 in group user-agent: * (line 27): Content-Signal: ai-train=no"
    record = {
        "reason": "use-refused",
        "matched_rule": "allow: /",
        "matched_line": 30,
        "group": "user-agent: * (line 27)",
        "detail": f"refused for train-ai by {signal}",
        "uses": {
            "search": {"answer": "allowed", "source": "robots.txt line 28"},
            "train-ai": {"answer": "refused", "source": signal},
        },
    }
    assert dropped_by(record) == (f"train-ai refused by {signal}", 29, "user-agent: * (line 27)")
    tdm = "tdmrep.json location /articles/*"
    record.update(
        detail=f"refused for train-ai by {tdm}",
        uses={"train-ai": {"answer": "refused", "source": tdm}},
    )
    assert dropped_by(record) == (f"train-ai refused by {tdm}", None, "")
    disallowed = {"reason": "disallow-rule", "matched_rule": "disallow: /x", "matched_line": 3}
    assert dropped_by(disallowed) == ("disallow: /x", 3, "")


def test_of_many_drops_and_holds_the_first_and_last_of_each_reason_are_listed() -> None:
    drops = [
        {"type": "decision", "at": float(i), "url": f"u{i}", "origin": "o", "action": "drop",
         "reason": "blocked" if i % 10 == 0 else "disallowed"}
        for i in range(1000)
    ]  # fmt: skip
    holds = [
        record
        for i in range(300)
        for record in (
            {"type": "parked", "at": 1.0, "url": f"h{i}", "origin": "o", "reason": "origin-paused"},
            {"type": "decision", "at": 2.0, "url": f"h{i}", "origin": "o", "action": "download"},
        )
    ]
    story = story_of([*drops, *holds])
    assert story.drops.total == 1000
    assert story.origin("o").dropped == {"disallowed": 900, "blocked": 100}  # all counted
    disallowed = [f"u{i}" for i in range(1000) if i % 10]
    blocked = [f"u{i}" for i in range(0, 1000, 10)]  # 2 * EXAMPLES: all kept
    listed = disallowed[:EXAMPLES] + disallowed[-EXAMPLES:] + blocked
    assert [d["url"] for d in story.dropped] == sorted(listed, key=lambda u: int(u[1:]))
    assert story.holds.total == 300 and story.still_held == 0
    assert [h.url for h in story.held] == [f"h{i}" for i in (*range(50), *range(250, 300))]
    assert all(h.fate == "download" for h in story.held)
    page = render(story)
    assert "<b>1,000</b> dropped, <b>300</b> held (0 still held" in page
    assert "800 more drops are counted above but not listed" in page
    assert "200 more held requests are counted above but not listed" in page

"""The crawl report: an audit log made into one HTML page, read in a real Chromium.

The crawl is real (loopback origins: one with rules, one that pauses then
recovers, one that never answers but 403); the page is written at close
(``REP_REPORT``) and by ``scrapy-rep report``, then loaded in Debian's
Chromium through Playwright, and what a person sees is checked: the rows, the
timeline, sorting and filtering, a hostile rule shown as text, no network.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest_twisted
from playwright.async_api import async_playwright
from twisted.internet.defer import Deferred

from scrapy_rep.core.audit_story import story_of
from scrapy_rep.runtime.html_report import read_audit_log, render
from tests.support import processes
from tests.support.audit import of, records
from tests.support.browsersite import CHROMIUM
from tests.support.crawl import crawl
from tests.support.fakesite import FakeSite, Reply

#: a rule whose text is markup: the page must show it, not run it
HOSTILE = "/<img src=x onerror=alert(1)>"
RULES = (
    f"User-agent: *\nDisallow: /private\nDisallow: {HOSTILE}\nContent-Usage: train-ai=n\n".encode()
)
PAUSE = {"REP_PAUSE_INITIAL": 0.3, "REP_PAUSE_MAX": 0.6, "REP_PAUSE_MAX_TRIES": 2}
ROOT = Path(__file__).resolve().parents[2]


def as_deferred(coro: Any) -> Deferred[Any]:
    return Deferred.fromFuture(asyncio.ensure_future(coro))


async def crawl_three_origins(site: FakeSite, tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    rules = site.add("rules").robots(Reply(body=RULES))
    flaky = site.add("flaky").robots(Reply(status=503), Reply(body=b"User-agent: *\nAllow: /\n"))
    forbidden = site.add("forbidden").robots(Reply(status=403))
    urls = [
        rules.url_for(p) for p in ("/", "/a", "/private/x", "/%3Cimg%20src=x%20onerror=alert(1)%3E")
    ]
    urls += [flaky.url_for(p) for p in ("/", "/b")] + [forbidden.url_for(p) for p in ("/", "/c")]
    log, page = tmp_path / "audit.jsonl", tmp_path / "report.html"
    settings = {
        "REP_DECISION_LOG": str(log),
        "REP_REPORT": str(page),
        "REP_USES": ["train-ai"],
    }
    await crawl(urls, {**PAUSE, **settings})
    return log, page, {"rules": rules.url, "flaky": flaky.url, "forbidden": forbidden.url}


async def what_a_person_sees(page_path: Path) -> dict[str, Any]:
    seen: dict[str, Any] = {"dialogs": [], "requests": []}
    async with async_playwright() as p:
        browser = await p.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            page = await browser.new_page()
            page.on("dialog", lambda d: seen["dialogs"].append(d.message))
            page.on("request", lambda r: seen["requests"].append(r.url))
            await page.goto(page_path.as_uri())

            async def column(table: str, n: int) -> list[str]:
                cells = page.locator(f"#{table} tbody tr:not([hidden]) td:nth-child({n})")
                return [text.strip() for text in await cells.all_inner_texts()]

            seen["dropped_urls"] = await column("t-dropped", 1)
            seen["dropped_rules"] = await column("t-dropped", 4)
            seen["img_in_page"] = await page.locator("img").count()
            seen["timeline_rows"] = await page.locator("#timeline g.tl-row").count()
            seen["paused_segments"] = await page.locator("#timeline rect.tl-paused").count()
            seen["resumed_dots"] = await page.locator("#timeline circle.tl-resumed").count()
            seen["timeline_height"] = (await page.locator("#timeline").bounding_box() or {})[
                "height"
            ]
            seen["held"] = list(
                zip(await column("t-held", 2), await column("t-held", 6), strict=True)
            )
            seen["counts"] = await column("t-counts", 2)
            seen["refused"] = list(
                zip(
                    await column("t-uses", 1),
                    await column("t-uses", 2),
                    await column("t-uses", 3),
                    strict=True,
                )
            )

            await page.locator("#t-dropped th", has_text="URL").click()
            seen["sorted_up"] = await column("t-dropped", 1)
            await page.locator("#t-dropped th", has_text="URL").click()
            seen["sorted_down"] = await column("t-dropped", 1)

            seen["origins_before"] = await column("t-origins", 1)
            await page.locator('input[data-table="t-origins"]').fill("forbidden-not-a-host")
            seen["origins_none"] = await column("t-origins", 1)
            seen["shown_none"] = await page.locator('.shown[data-for="t-origins"]').inner_text()
            await page.screenshot(path=str(page_path.with_suffix(".png")), full_page=True)
        finally:
            await browser.close()
    return seen


@pytest_twisted.ensureDeferred
async def test_the_report_of_a_real_crawl_reads_in_chromium(site: FakeSite, tmp_path: Path) -> None:
    log, page, origin = await crawl_three_origins(site, tmp_path)
    found = records(log)
    assert page.exists(), "REP_REPORT was not written at close"
    # the command makes the same page from the same log
    command = ["-m", "scrapy_rep.cli", "report", str(log), "-o", str(tmp_path / "cli.html")]
    done = processes.python(*command, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "3 origins" in done.stderr

    seen = await as_deferred(what_a_person_sees(page))

    drops = [d for d in of(found, "decision") if d["action"] == "drop"]
    assert sorted(seen["dropped_urls"]) == sorted(d["url"] for d in drops)
    assert f"disallow: {HOSTILE}" in seen["dropped_rules"]  # shown as the text it is
    assert seen["img_in_page"] == 0 and seen["dialogs"] == []
    assert [u for u in seen["requests"] if not u.startswith("file:")] == []  # no network
    assert seen["timeline_rows"] == 3
    assert seen["paused_segments"] >= 2  # flaky's 503, forbidden's 403
    assert seen["resumed_dots"] == 1  # flaky came back
    assert seen["timeline_height"] > 60
    fates = dict(seen["held"])
    assert fates[origin["flaky"]] == "download"
    assert fates[origin["forbidden"]] == "drop (policy-unresolved)"
    assert {"disallow-rule", "policy-unresolved", "allow-rule"} <= set(seen["counts"])
    [(site_, use, source)] = seen["refused"]  # the one site that says no to training
    assert (site_, use) == (origin["rules"], "train-ai") and "Content-Usage: train-ai=n" in source
    assert seen["sorted_up"] == sorted(seen["dropped_urls"], key=str.lower)
    assert seen["sorted_down"] == seen["sorted_up"][::-1]
    assert sorted(seen["origins_before"]) == sorted(origin.values())
    assert seen["origins_none"] == [] and seen["shown_none"] == "0 of 3 rows"


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
    assert read.bad_lines == 3 and len(read.records) == 3
    html = render(story_of(read.records), bad_lines=read.bad_lines)
    assert "3 lines of the log could not be read" in html
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


@pytest_twisted.ensureDeferred
async def test_a_page_that_cannot_be_written_is_a_warning_and_only_this_crawls_records(
    site: FakeSite, tmp_path: Path, caplog: Any
) -> None:
    a = site.add("a").robots(Reply(body=b"User-agent: *\nDisallow: /private\n"))
    log = tmp_path / "audit.jsonl"
    log.write_text('{"type": "fetch", "at": 1, "origin": "http://earlier.example:80"}\n')
    (tmp_path / "blocked").write_text("a file where the page's folder would be")
    bad, good = tmp_path / "blocked" / "r.html", tmp_path / "r.html"
    common = {"REP_DECISION_LOG": str(log)}
    result = await crawl(
        [a.url_for("/"), a.url_for("/private/x")], {**common, "REP_REPORT": str(bad)}
    )
    assert result.stat("rep/downloaded") == 1  # the crawl itself is unharmed
    assert any("cannot write the HTML report" in r.getMessage() for r in caplog.records)
    await crawl([a.url_for("/")], {**common, "REP_REPORT": str(good)})
    html = good.read_text(encoding="utf-8")
    assert "earlier.example" not in html  # written at close from this crawl's records only
    assert a.url in html and 'id="t-dropped-none"' in html  # the first crawl's drop is not


def _one_of_each(kind: str) -> dict[str, Any]:
    """A record of type ``kind`` as the package writes it (the fields a report reads)."""
    base: dict[str, Any] = {"type": kind, "at": 1.0, "url": "http://o/p", "origin": "http://o"}
    if kind in ("decision", "subrequest"):
        base.update(action="download", reason="allow-rule", product_token="bot")
    if kind == "page_use":
        base["uses"] = {"train-ai": {"answer": "refused", "source": "header Content-Usage: n"}}
    if kind == "item_dropped":
        base.update(reason="use-refused", detail="train-ai refused: header Content-Usage: n")
    if kind in ("fetch", "tdmrep"):
        base.update(status="ok", outcome="2xx", http_status=200)
    return base


def test_a_log_with_every_record_type_the_package_writes_has_none_unknown(
    tmp_path: Path,
) -> None:
    """Every type of ``RECORDS``: a type added there without report support fails here."""
    from scrapy_rep.runtime.audit import RECORDS

    log = tmp_path / "audit.jsonl"
    log.write_text(
        "".join(json.dumps(_one_of_each(kind)) + "\n" for kind in RECORDS), encoding="utf-8"
    )
    out = tmp_path / "report.html"
    done = processes.run(
        "scrapy_rep.cli", ["report", str(log), "-o", str(out)], cwd=tmp_path, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "for what pages said: 1 items dropped, 0 media files failed" in done.stderr
    page = out.read_text(encoding="utf-8")
    assert story_of(read_audit_log(str(log)).records).unknown == 0
    assert "does not know" not in page
    # the page-level refusal and its dropped item show up
    pages = page[page.index('id="t-pages"') :]
    assert "header Content-Usage: n" in pages[: pages.index("</table>")]
    assert "<b>1</b> items dropped (use-refused 1)" in page


def test_a_use_refused_drop_names_the_source_that_refused_not_the_rule_it_passed() -> None:
    from scrapy_rep.core.audit_story import dropped_by

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

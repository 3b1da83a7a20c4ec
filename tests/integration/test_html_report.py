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

from scrapy_rep.report.html import read_audit_log
from scrapy_rep.report.story import story_of
from scrapy_rep.runtime.settings import TUNE
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
PAUSE = {"REP_PAUSE_INITIAL": 0.3, "REP_PAUSE_MAX": 0.6, TUNE: {"policy.pause_max_tries": 2}}
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
    from scrapy_rep.reference.records import RECORDS

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

"""An AI-dataset builder's crawl, end to end: a real ``scrapy crawl`` with a feed, media
pipelines, ``REP_USES = ["train-ai"]`` and ``"drop"`` (``tests/support/dataset_site.py``).

What a user sees: the feed, ``FILES_STORE`` / ``IMAGES_STORE``, the INFO close
report, the audit log, ``scrapy-rep explain`` and the HTML report.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from scrapy.pipelines import media as media_pipeline

from tests.support.dataset_site import FILES, IMAGES, DatasetCrawl, run
from tests.support.fakesite import FakeSite
from tests.support.processes import run as run_process


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DatasetCrawl]:
    """One crawl for the module: every test reads what it left."""
    with FakeSite() as site:
        done = run(site, tmp_path_factory.mktemp("dataset"))
        assert done.returncode == 0, done.stderr[-3000:]
        yield done


def _gallery(crawled: DatasetCrawl) -> dict[str, object]:
    (item,) = [i for i in crawled.items() if i["url"].endswith("/gallery")]
    return item


# -- 1. media pipelines and the use filter ------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "media", "store"),
    [("files", FILES, "files_store"), ("images", IMAGES, "images_store")],
)
def test_a_media_download_its_response_refuses_fails_and_is_not_stored(
    crawled: DatasetCrawl, field: str, media: dict[str, tuple[dict[str, str], bool]], store: str
) -> None:
    item = _gallery(crawled)
    listed = {entry["url"] for entry in item[field]}  # type: ignore[attr-defined]
    refused = {crawled.press.url_for(path) for path, (_, no) in media.items() if no}
    allowed = {crawled.press.url_for(path) for path, (_, no) in media.items() if not no}
    assert listed == allowed  # the refused ones failed: not in the item's list
    assert all(e["status"] == "downloaded" for e in item[field])  # type: ignore[attr-defined]
    # FILES_STORE / IMAGES_STORE hold exactly the allowed ones
    assert len(crawled.stored(getattr(crawled, store))) == len(allowed)
    # the pipeline's own failure path, with the reason (Scrapy says "File (filtered)" for
    # an IgnoreRequest since it has _MediaRequestFiltered; older ones fail it silently)
    filtered_line = hasattr(media_pipeline, "_MediaRequestFiltered")
    for url in refused:
        assert re.search(
            rf"a media download of {re.escape(url)} failed \(use-refused\): train-ai refused: ",
            crawled.stderr,
        ), url
        assert not filtered_line or re.search(
            rf"File \(filtered\): Not downloading \w+ from <GET {re.escape(url)}> .*: "
            r"use-refused: train-ai refused: ",
            crawled.stderr,
        ), url
    # counted and recorded like a dropped item
    media_records = [r for r in crawled.records("item_dropped") if r.get("media")]
    assert refused <= {r["url"] for r in media_records}
    assert all(r["reason"] == "use-refused" for r in media_records)
    said = {r["url"]: r["detail"] for r in media_records}
    assert said[crawled.press.url_for("/img/noimageai.png")] == (
        "train-ai refused: X-Robots-Tag noimageai"
    )


def test_media_refusals_are_counted_in_the_stats(crawled: DatasetCrawl) -> None:
    refused = sum(no for _, no in FILES.values()) + sum(no for _, no in IMAGES.values())
    assert f"'rep/media/dropped/use-refused': {refused}" in crawled.stderr


# -- 4. the close report counts dropped items ---------------------------------------------------


def test_the_close_report_counts_dropped_items_by_reason(crawled: DatasetCrawl) -> None:
    report = crawled.stderr[crawled.stderr.index("scrapy-rep report:") :]
    # /refused (Content-Usage) and /noindex: one item each; the media files by reason too
    assert "for what pages said: 2 items dropped (" in report
    line = next(ln for ln in report.splitlines() if "for what pages said" in ln)
    assert "use-refused 1" in line and "page-noindex 1" in line
    assert "4 media files failed (use-refused 4)" in line


# -- 8. dont_obey_robotstxt keeps its items -----------------------------------------------------


def test_dont_obey_robotstxt_keeps_the_items_of_a_noindex_page(crawled: DatasetCrawl) -> None:
    noindex = crawled.press.url_for("/noindex")
    assert crawled.press.hits("/noindex") == 2  # once obeyed, once with dont_obey_robotstxt
    # the obeyed request's item is dropped (noindex), the dont_obey one's is kept
    assert [i["url"] for i in crawled.items()].count(noindex) == 1
    dropped = [r for r in crawled.records("item_dropped") if r["url"] == noindex]
    assert [r["reason"] for r in dropped] == ["page-noindex"]


# -- 2. explain tells the page's own answer -----------------------------------------------------


def _explain(crawled: DatasetCrawl, url: str) -> tuple[int, str]:
    done = run_process(
        "scrapy_rep.cli", ["explain", str(crawled.log), url], cwd=crawled.project, timeout=60
    )
    return done.returncode, done.stdout + done.stderr


def test_explain_tells_a_page_refused_by_its_own_header_and_its_items_dropped(
    crawled: DatasetCrawl,
) -> None:
    code, out = _explain(crawled, crawled.press.url_for("/refused"))
    assert "use train-ai unknown" not in out.replace("  ", " ")
    assert "page use  train-ai  refused  header Content-Usage: train-ai=n" in out
    assert "items     1 dropped (use-refused): train-ai refused: header Content-Usage" in out
    assert code == 1  # downloaded, but nothing of it kept


def test_explain_tells_a_refused_media_file(crawled: DatasetCrawl) -> None:
    code, out = _explain(crawled, crawled.press.url_for("/img/noai.png"))
    assert "page use  train-ai  refused  X-Robots-Tag noai" in out
    assert "media     failed (use-refused): train-ai refused: X-Robots-Tag noai" in out
    assert code == 1


def test_explain_of_a_page_kept_is_unchanged(crawled: DatasetCrawl) -> None:
    code, out = _explain(crawled, crawled.press.url_for("/plain"))
    assert "page use  train-ai  unknown" in out
    assert "dropped" not in out
    assert code == 0


# -- 3. the HTML report knows its own log -------------------------------------------------------


def test_the_html_report_knows_every_record_of_its_own_log(crawled: DatasetCrawl) -> None:
    page = crawled.html.read_text()
    assert "does not know" not in page
    written = {r["type"] for r in crawled.records()}
    assert {"page_use", "item_dropped", "tdmrep"} <= written
    # page-level refusals are shown: the page, the use, where it was said
    assert "Refused by the page itself" in page
    assert "header Content-Usage: train-ai=n" in page
    assert "X-Robots-Tag noimageai" in page


def test_the_dropped_table_names_what_dropped_each_request(crawled: DatasetCrawl) -> None:
    page = crawled.html.read_text()
    table = page[page.index('id="t-dropped"') :]
    table = table[: table.index("</table>")]
    rows = re.findall(r"<tr>(.*?)</tr>", table)
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in rows]
    by_url = {found[0]: " | ".join(found) for found in cells if found}
    shop = by_url[crawled.shop.url_for("/")]
    assert "Content-Signal: search=yes, ai-train=no" in shop
    assert "Allow: /" not in shop  # not the allow rule the request passed
    reserved = by_url[crawled.press.url_for("/reserved/article")]
    assert "tdmrep.json location /reserved/*" in reserved
    assert "Allow: /" not in reserved
    assert '<th scope="col" title="sort">why</th>' in table


def test_explain_of_a_page_fetched_with_dont_obey_robotstxt_tells_its_answer(
    tmp_path: Path,
) -> None:
    log = tmp_path / "audit.jsonl"
    uses = {"train-ai": {"answer": "refused", "source": "header Content-Usage: train-ai=n"}}
    log.write_text(
        json.dumps({"type": "page_use", "at": 1.0, "url": "http://o/p", "origin": "http://o",
                    "uses": uses}) + "\n",
        encoding="utf-8",
    )  # fmt: skip
    done = run_process(
        "scrapy_rep.cli", ["explain", str(log), "http://o/p"], cwd=tmp_path, timeout=60
    )
    assert "not judged: dont_obey_robotstxt" in done.stdout
    assert "page use  train-ai  refused  header Content-Usage: train-ai=n" in done.stdout
    assert done.returncode == 0  # downloaded, nothing dropped

"""The close report's lines from counts alone: bounded, exact totals, drops by reason.

The report of a real crawl: ``tests/integration/test_report.py``.
"""

from __future__ import annotations

from scrapy_rep.core.report import CrawlCounts, report_lines


def test_report_is_bounded_and_totals_stay_exact() -> None:
    counts = CrawlCounts(max_origins=3)
    for n in range(12):
        origin = f"http://h{n}:80"
        for _ in range(n):
            counts.downloaded(origin)
        counts.dropped(origin, "disallow-rule")
        counts.fetched(origin, "ok")
    counts.dropped(None, "spider-closed")  # a URL with no origin still counts in the totals

    assert len(counts.origins) == 3 and counts.evicted == 9  # the least recently used went
    assert counts.total.downloaded == sum(range(12))
    assert counts.total.dropped == {"disallow-rule": 12, "spider-closed": 1}
    lines = report_lines(counts, top=2)
    assert lines[0].startswith("scrapy-rep report: 12 origins, 79 requests: 66 downloaded, 13")
    assert [line.split()[0] for line in lines[2:4]] == ["http://h11:80", "http://h10:80"]
    assert lines[-1] == "  ... and 10 more origins (in the totals above)"
    assert len(lines) == 5


def test_report_says_what_the_cluster_cost_only_when_it_cost_something() -> None:
    counts = CrawlCounts()
    counts.downloaded("http://h:80")
    assert not any("cluster:" in line for line in report_lines(counts))
    counts.delay_waited(2.1)
    counts.delay_waited(4.3)
    counts.requeued_from_dead += 3
    assert report_lines(counts)[1] == (
        "  cluster: 2 waits for the shared Crawl-delay (6.4 s in all), 3 held requests of dead "
        "workers requeued"
    )


def test_items_dropped_for_what_pages_said_are_counted_by_reason() -> None:
    counts = CrawlCounts()
    counts.downloaded("http://a")
    assert not any("for what pages said" in line for line in report_lines(counts))
    for reason in ("use-refused", "use-refused", "page-noindex"):
        counts.item_dropped(reason)
    counts.media_dropped("use-refused")
    assert report_lines(counts)[1] == (
        "  for what pages said: 3 items dropped (use-refused 2, page-noindex 1); "
        "1 media files failed (use-refused 1)"
    )


def test_report_lines_without_refusals_say_nothing_of_uses() -> None:
    counts = CrawlCounts()
    counts.downloaded("https://a.example:443")
    assert not any("uses" in line for line in report_lines(counts))
    counts.add("https://a.example:443", "uses_refused", "train-ai")
    assert "uses refused by robots.txt: train-ai 1 (requests)" in "\n".join(report_lines(counts))


def test_report_counts_browser_subrequests_per_origin() -> None:
    counts = CrawlCounts()
    counts.downloaded("http://a")
    counts.add("http://a", "browser_allowed")
    counts.add("http://b", "browser_aborted", "disallow-rule")
    counts.add("http://b", "browser_aborted", "origin-paused")
    text = "\n".join(report_lines(counts))
    assert "browser sub-requests: 3: 1 allowed, 2 aborted" in text
    assert "disallow-rule 1, origin-paused 1" in text
    assert "browser sub-requests" not in "\n".join(report_lines(CrawlCounts()))


def test_report_says_pages_pauses_of_origins_folded_away() -> None:
    counts = CrawlCounts(max_origins=1)
    counts.add("http://a", "page_pauses", "rate-limited")
    counts.downloaded("http://b")  # folds http://a away: its pause stays in the totals only
    lines = report_lines(counts)
    assert lines[-1] == "  pauses for what pages said: rate-limited 1"


def test_report_tables_show_hosts_printable() -> None:
    counts = CrawlCounts()
    host = "http://a\x1b[2J.example:80"  # a redirect's host can carry ESC
    counts.add(host, "browser_allowed")
    counts.add(host, "uses_refused", "train-ai")
    counts.add(host, "page_pauses", "rate-limited")
    lines = report_lines(counts)
    assert not any("\x1b" in line for line in lines)
    assert sum("a\\x1b[2J.example" in line for line in lines) == 4  # the origins' table too

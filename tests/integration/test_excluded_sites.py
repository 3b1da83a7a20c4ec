"""REP_EXCLUDE in a real crawl: an excluded site's robots.txt and pages are never requested."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_twisted
import scrapy

from scrapy_rep import cli
from tests.support import doc_examples
from tests.support.audit import audited_crawl, of
from tests.support.fakesite import FakeSite, Reply

RULES = b"User-agent: *\nDisallow: /private\n"


@pytest_twisted.ensureDeferred
async def test_excluded_sites_are_never_requested_and_explain_names_the_entry(
    site: FakeSite, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kept = site.add("kept").robots(Reply(body=RULES))
    by_ip = site.add("by-ip", host="127.0.0.2").robots(Reply(body=RULES))
    by_name = site.add("by-name").robots(Reply(body=RULES))  # asked for as localhost
    named = f"http://localhost:{by_name.port}"
    listed = tmp_path / "infringing.txt"
    listed.write_text("# our copy of the list\n\n127.0.0.2\nlocalhost  # dev hosts\n")
    urls = [
        kept.url_for("/a"),
        by_ip.url_for("/a"),
        by_ip.robots_url,  # even a spider's own robots.txt request
        f"{named}/a",
        f"{named}/b",
    ]

    result, audit = await audited_crawl(tmp_path, urls, REP_EXCLUDE=str(listed))

    # the server logs: nothing at all reached the excluded sites
    assert by_ip.hit_paths() == []
    assert by_name.hit_paths() == []
    assert kept.hit_paths() == ["/robots.txt", "/a"]
    assert result.downloaded == [kept.url_for("/a")]
    assert result.dropped == {url: "excluded-site" for url in urls[1:]}
    assert result.stat("rep/dropped/excluded-site") == 4
    decisions = {r["url"]: r for r in of(audit, "decision")}
    record = decisions[f"{named}/a"]
    assert record["matched_rule"] == "exclude: localhost"
    assert record["matched_line"] == 4
    assert record["policy_status"] == "excluded"
    assert f"{listed}, line 4" in record["detail"]
    assert decisions[by_ip.url_for("/a")]["matched_rule"] == "exclude: 127.0.0.2"
    assert not any(r.get("origin", "").endswith(f":{by_ip.port}") for r in of(audit, "fetch"))

    log = str(tmp_path / "audit.jsonl")
    assert cli.main(["explain", log, f"{named}/b"]) == 1
    out = capsys.readouterr().out
    assert "DISALLOW -> drop (excluded-site)" in out
    assert "excluded  by the entry 'localhost' (line 4)" in out
    assert "REP_EXCLUDE, not robots.txt (never fetched)" in out
    # the worked example of docs/uses.md
    text = f"$ scrapy-rep explain audit.jsonl {named}/b\n{out}"
    stable = doc_examples.stable(
        text, **{"8000": str(by_name.port), "/srv/crawl/infringing.txt": str(listed)}
    )
    doc_examples.check("explain-excluded.txt", stable)


@pytest_twisted.ensureDeferred
async def test_a_list_in_the_settings_excludes_too(site: FakeSite, tmp_path: Path) -> None:
    kept = site.add("kept").robots(Reply(body=RULES))
    gone = site.add("gone", host="127.0.0.2")
    # dont_obey_robotstxt opts out of robots.txt, not of the list
    unobeyed = scrapy.Request(gone.url_for("/b"), meta={"dont_obey_robotstxt": True})
    result, _ = await audited_crawl(
        tmp_path, [kept.url_for("/a"), gone.url_for("/a"), unobeyed], REP_EXCLUDE=["127.0.0.2"]
    )
    assert gone.hit_paths() == []
    assert result.dropped == {
        gone.url_for("/a"): "excluded-site",
        gone.url_for("/b"): "excluded-site",
    }
    assert result.decisions[gone.url_for("/a")]["matched_line"] is None


def test_scrapy_robots_says_an_excluded_site_is_dropped_without_fetching(site: FakeSite) -> None:
    from tests.support.scrapy_command import scrapy_robots

    gone = site.add("gone", host="127.0.0.2").robots(Reply(body=RULES))
    done = scrapy_robots("-s", 'REP_EXCLUDE=["127.0.0.2"]', gone.url_for("/x"))
    assert done.returncode == 1, done.stderr
    assert "action  drop (excluded-site)" in done.stdout
    assert "rule    exclude: 127.0.0.2" in done.stdout
    assert gone.hit_paths() == []

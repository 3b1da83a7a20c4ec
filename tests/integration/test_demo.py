"""``make demo`` as a test: the example project crawls the demo site, and the numbers hold.

``run_demo.run`` starts ``demo_site.py`` and ``scrapy crawl tour`` as
separate processes, as ``make demo`` does; the assertions read the same
summary data the demo prints. The site judges the crawl independently of
scrapy-rep: its own list of what a compliant crawler must not fetch, its
trap, and whether a page came while robots.txt could not be read.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "example_project"))

import run_demo  # noqa: E402

#: origin -> (downloads, drops by reason); fixed by the site's link graph and rules
EXPECTED: dict[str, tuple[int, dict[str, int]]] = {
    # /private/secret, *.pdf$, /search?q=, /trap/; /news/story (its only link says nofollow)
    "hub": (7, {"disallow-rule": 4, "page-nofollow": 1}),
    "merged": (3, {"disallow-rule": 2}),  # /members/list (group 1), /trap/x (group 2)
    "notfound": (3, {}),
    "forbidden": (0, {"policy-unresolved": 2}),
    "ratelimited": (2, {"disallow-rule": 1}),
    "flaky": (2, {"disallow-rule": 1}),
    "moved": (2, {"disallow-rule": 2}),
    "big": (2, {"disallow-rule": 2}),
    "slow": (4, {"disallow-rule": 2}),
    "delay": (4, {"disallow-rule": 1}),
}


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> run_demo.Run:
    return run_demo.run("rep", tmp_path_factory.mktemp("demo"))


@pytest.mark.slow
def test_demo_crawl_breaks_no_rule(demo: run_demo.Run) -> None:
    assert run_demo.problems(demo) == []
    _, seen = run_demo.seen_by_site(demo)
    assert (seen.trap, seen.forbidden, seen.while_failing, seen.early) == (0, 0, 0, 0)
    assert seen.pages == sum(down for down, _ in EXPECTED.values())
    assert demo.stats["finish_reason"] == "finished"


@pytest.mark.slow
def test_demo_shows_page_directives(demo: run_demo.Run) -> None:
    """The hub's /news says nofollow, its /report says noindex to demobot (X-Robots-Tag)."""
    assert demo.stats.get("rep/page/nofollow") == 1
    assert demo.stats.get("rep/dropped/page-nofollow") == 1
    assert demo.stats.get("rep/page/noindex") == 1
    assert demo.stats.get("rep/page/noindex/items-dropped") == 1
    assert demo.stats.get("item_scraped_count") == demo.stats["rep/downloaded"] - 1


@pytest.mark.slow
def test_demo_numbers_per_origin(demo: run_demo.Run) -> None:
    decided = run_demo.decided_by_rep(demo)
    got = {name: (d.downloads, dict(d.dropped)) for name, d in decided.items()}
    assert got == EXPECTED
    seen, _ = run_demo.seen_by_site(demo)
    for name, (downloads, _) in EXPECTED.items():
        assert seen[name].pages == downloads, name  # the site agrees with the audit log


@pytest.mark.slow
def test_demo_policy_statuses(demo: run_demo.Run) -> None:
    decided = run_demo.decided_by_rep(demo)

    def story(name: str) -> list[tuple[str, Any]]:
        return [(f["status"], f["http_status"]) for f in decided[name].fetches]

    for name in ("hub", "merged", "slow", "delay"):
        assert story(name) == [("ok", 200)], name
    assert story("notfound") == [("unavailable", 404)]
    assert story("ratelimited") == [("paused", 429), ("ok", 200)]  # once, after Retry-After
    flaky = story("flaky")
    assert flaky[-1] == ("ok", 200) and set(flaky[:-1]) == {("paused", 503)}
    forbidden = story("forbidden")
    assert forbidden[-1] == ("unresolved", 403)
    assert len(forbidden) == 5  # given up after 5 tries (fixed)
    assert decided["moved"].policy(demo) == "ok(200) via hub"
    assert decided["big"].fetches[0]["truncated"] is True
    assert decided["big"].fetches[0]["size"] == 512_000


@pytest.mark.slow
def test_demo_parks_releases_and_delays(demo: run_demo.Run) -> None:
    decided = run_demo.decided_by_rep(demo)
    # the slow robots.txt: its requests were parked, then all released
    assert decided["slow"].parked == decided["slow"].released > 0
    # paused origins held their requests until they recovered (or gave up)
    for name in ("ratelimited", "flaky"):
        assert decided[name].parked == decided[name].released >= 1, name
    assert decided["forbidden"].parked >= 1 and decided["forbidden"].released == 0
    assert decided["delay"].counters["crawl_delay"] == 1
    assert all(d.counters["crawl_delay"] is None for n, d in decided.items() if n != "delay")
    # the report's counters (written at close) match the audit log's events
    for name, d in decided.items():
        assert d.counters["downloaded"] == d.downloads, name
        assert d.counters["parked"] == d.parked, name
    # every downloaded page has its own status recorded, apart from robots.txt's
    assert sum(sum(d.targets.values()) for d in decided.values()) == demo.stats["rep/downloaded"]


@pytest.mark.slow
def test_demo_summary_reads_at_a_glance(demo: run_demo.Run) -> None:
    text = run_demo.summary(demo)
    for name in EXPECTED:
        assert f"\n{name} " in text
    assert "paused(429) -> ok(200)" in text
    assert "trap hits 0; disallowed pages 0; pages while robots.txt failing 0" in text
    assert "scrapy-rep explain " in text


@pytest.mark.slow
def test_builtin_middleware_on_the_same_site(tmp_path: Path) -> None:
    """What ``make demo-compare`` shows: Scrapy's RobotsTxtMiddleware takes 5xx/429 as consent."""
    builtin = run_demo.run("builtin", tmp_path)
    _, seen = run_demo.seen_by_site(builtin)
    assert seen.while_failing > 0  # pages from origins whose robots.txt answered 403/429/503
    assert seen.trap > 0  # their /trap/ was disallowed once the file could be read
    assert seen.early > 0  # Scrapy's retries ask again before Retry-After
    assert run_demo.problems(builtin)  # the checks that pass for scrapy-rep fail here

"""scrapy-rep's Spidermon suite (``REP_SPIDERMON``), with Spidermon from PyPI, in real crawls."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import spidermon

from tests.support.fakesite import FakeSite, Reply
from tests.support.scrapy_command import PAGES_SPIDER, make_project, scrapy


def run(tmp_path: Path, urls: list[str], **settings: Any) -> str:
    project = make_project(tmp_path / "project")
    (project / "oneshot_spiders.py").write_text(PAGES_SPIDER)
    with open(project / "oneshot_settings.py", "a") as f:
        f.write("CLOSESPIDER_TIMEOUT = 3\n")
        settings.setdefault("REP_SPIDERMON", True)
        for name, value in settings.items():
            f.write(f"{name} = {value!r}\n")
    done = scrapy(project, "crawl", "pages", "-a", f"urls={','.join(urls)}")
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_spidermon_is_the_one_from_pypi() -> None:
    assert spidermon.__file__ is not None and "site-packages" in spidermon.__file__


def test_a_clean_crawl_passes_every_monitor(site: FakeSite, tmp_path: Path) -> None:
    a = site.add("a").robots(Reply(body=b"User-agent: *\nDisallow: /private\n"))
    log = run(tmp_path, [a.url_for("/a"), a.url_for("/private/x")])
    assert "[Spidermon] ------------------------------ MONITORS" in log
    for name in (
        "No request let through that robots.txt did not allow",
        "Requests held at close",
        "Origins paused, unresolved or blocked",
        "Requests refused for a declared use",
        "Items dropped for a use their page refuses",
    ):
        assert f"scrapy-rep/{name}... OK" in log, log
    assert "[Spidermon] OK" in log
    assert "[Spidermon] FAILED" not in log


def test_a_monitor_above_its_threshold_fails_the_run(site: FakeSite, tmp_path: Path) -> None:
    ok = site.add("ok").robots(Reply(body=b"User-agent: *\nAllow: /\nContent-Usage: train-ai=n\n"))
    down = site.add("down", host="127.0.0.2").robots(Reply(status=503))
    # two payment walls in a row (REP_BLOCK_AFTER = 2): blocked like a wall of 403s
    walled = site.add("walled", host="127.0.0.3").robots(Reply(body=b"User-agent: *\nAllow: /\n"))
    walled.page("/p1", Reply(status=402))
    walled.page("/p2", Reply(status=402))
    log = run(
        tmp_path,
        [ok.url_for(p) for p in ("/a", "/b")]
        + [down.url_for("/a")]
        + [walled.url_for(p) for p in ("/p1", "/p2")],
        REP_USES=["train-ai"],
        REP_BLOCK_AFTER=2,
        # one setting: the thresholds changed, the others at their defaults
        REP_SPIDERMON={"uses_refused": 25, "blocked_origins": 0},
    )
    assert "scrapy-rep/Requests held at close... FAIL" in log
    assert "1 requests were still held at close (at most 0)" in log
    assert "scrapy-rep/Origins paused, unresolved or blocked... FAIL" in log
    assert (
        f"1 origins paused or unresolved (http://127.0.0.2:{down.port}), "
        f"1 blocked by their pages (http://127.0.0.3:{walled.port}) (at most 0 in all)"
    ) in log
    assert "scrapy-rep/Requests refused for a declared use... FAIL" in log
    assert "2 of 4 judged requests refused for a declared use (50%; at most 25%)" in log
    assert "scrapy-rep/No request let through that robots.txt did not allow... OK" in log
    assert "[Spidermon] FAILED (failures=3)" in log


def test_off_or_a_bad_threshold() -> None:
    import pytest

    from scrapy_rep.runtime.settings import SettingError, read_spidermon

    def get(name: str) -> None:
        return None

    assert read_spidermon("REP_SPIDERMON", False, get) is None
    assert read_spidermon("REP_SPIDERMON", "off", get) is None
    assert read_spidermon("REP_SPIDERMON", '{"held_at_close": 2}', get) == {
        "not_allowed": 0,
        "held_at_close": 2,
        "blocked_origins": 10,
        "uses_refused": 50,
        "items_dropped": 50,
    }
    with pytest.raises(SettingError, match="no threshold 'held'"):
        read_spidermon("REP_SPIDERMON", {"held": 2}, get)
    with pytest.raises(SettingError, match="percent, 0 to 100"):
        read_spidermon("REP_SPIDERMON", {"uses_refused": 101}, get)

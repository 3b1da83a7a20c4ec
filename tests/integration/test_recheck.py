"""``scrapy-rep recheck``: a real crawl's feed, re-judged after its sites changed their minds."""

from __future__ import annotations

import csv
import json
import os
import subprocess
from pathlib import Path

from tests.support import doc_examples, processes
from tests.support.fakesite import FakeSite, Reply
from tests.support.scrapy_command import PAGES_SPIDER, ROOT, make_project, scrapy

OPEN = b"User-agent: *\nAllow: /\n"


def recheck(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "SCRAPY_SETTINGS_MODULE"}
    env["PYTHONPATH"] = os.pathsep.join([str(project), str(ROOT)])
    return processes.run("scrapy_rep.cli", ["recheck", *args], cwd=project, env=env, timeout=90)


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_recheck_sorts_a_crawls_feed_by_what_the_sites_say_now(
    site: FakeSite, tmp_path: Path
) -> None:
    same = site.add("same").robots(Reply(body=OPEN))
    closed = site.add("closed").robots(Reply(body=OPEN))
    down = site.add("down").robots(Reply(body=OPEN))
    opted = site.add("opted").robots(Reply(body=OPEN))
    urls = [
        same.url_for("/a"),
        same.url_for("/b"),
        closed.url_for("/private/x"),
        closed.url_for("/public"),
        down.url_for("/a"),
        opted.url_for("/a"),
    ]
    project = make_project(tmp_path / "project")
    (project / "oneshot_spiders.py").write_text(PAGES_SPIDER)
    feed = tmp_path / "feed.jsonl"
    done = scrapy(project, "crawl", "pages", "-a", f"urls={','.join(urls)}", "-O", str(feed))
    assert done.returncode == 0, done.stderr
    assert sorted(item["url"] for item in lines(feed)) == sorted(urls)
    # the crawl wrote its items as pages came back; the worked example reads them in one order
    by_url = {item["url"]: item for item in lines(feed)}
    feed.write_text("".join(json.dumps(by_url[url]) + "\n" for url in urls), encoding="utf-8")

    # weeks later: one site disallows part of itself, one is down, one opts out of training
    closed.robots(Reply(body=b"User-agent: *\nDisallow: /private\n"))
    down.robots(Reply(status=503))
    opted.robots(Reply(body=b"User-agent: *\nAllow: /\nContent-Usage: train-ai=n\n"))
    before = {origin.name: origin.hits("/robots.txt") for origin in (same, closed, down, opted)}
    kept, report = tmp_path / "kept.jsonl", tmp_path / "report.jsonl"
    done = recheck(
        project, str(feed), "-o", str(kept), "--report", str(report), "--use", "train-ai"
    )
    assert done.returncode == 1, (done.stdout, done.stderr)  # some now refused
    out = done.stdout
    assert (
        f"refused  {closed.url_for('/private/x')}  disallow-rule: disallow: /private (line 2)"
        in out
    )
    assert f"unknown  {down.url_for('/a')}  robots.txt 503" in out
    assert f"refused  {opted.url_for('/a')}  use-refused: train-ai by robots.txt line 3" in out
    assert out.strip().endswith(f"6 items: 3 allowed, 2 refused, 1 unknown; kept 3 in {kept}")
    assert sorted(item["url"] for item in lines(kept)) == sorted(
        [same.url_for("/a"), same.url_for("/b"), closed.url_for("/public")]
    )
    assert all(item["title"] == "page" for item in lines(kept))  # the items, as they were
    verdicts = {line["url"]: line["verdict"] for line in lines(report)}
    assert verdicts[down.url_for("/a")] == "unknown"
    # each origin's robots.txt asked for once, whatever its number of items; no page fetched
    after = {origin.name: origin.hits("/robots.txt") for origin in (same, closed, down, opted)}
    assert {name: after[name] - before[name] for name in after} == dict.fromkeys(after, 1)
    assert same.hits("/a") == 1 and same.hits("/b") == 1  # the crawl's, not the recheck's
    # the worked example of docs/uses.md
    command = (
        "$ scrapy-rep recheck items.jsonl -o kept.jsonl --use train-ai --report verdicts.jsonl"
    )
    hosts = {f"{o.name}.example": f"127.0.0.1:{o.port}" for o in (same, closed, down, opted)}
    paths = {"kept.jsonl": str(kept), "items.jsonl": str(feed)}
    doc_examples.check("recheck.txt", doc_examples.stable(f"{command}\n{out}", **hosts, **paths))


def test_recheck_reads_csv_and_json_and_says_unknown_without_refusals(
    site: FakeSite, tmp_path: Path
) -> None:
    ok = site.add("ok").robots(Reply(body=OPEN))
    down = site.add("down").robots(Reply(status=503))
    project = make_project(tmp_path / "project")
    feed = tmp_path / "feed.csv"
    with open(feed, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["link", "n"])
        writer.writeheader()
        writer.writerows(
            [{"link": ok.url_for("/a"), "n": "1"}, {"link": down.url_for("/b"), "n": "2"}]
        )
    kept = tmp_path / "kept.json"
    done = recheck(project, str(feed), "--url-field", "link", "-o", str(kept), "--keep-unknown")
    assert done.returncode == 3, (done.stdout, done.stderr)  # unknown, none refused
    assert json.loads(kept.read_text()) == [
        {"link": ok.url_for("/a"), "n": "1"},
        {"link": down.url_for("/b"), "n": "2"},
    ]
    bad = recheck(project, str(tmp_path / "feed.txt"))
    assert bad.returncode == 2 and bad.stderr.startswith("scrapy-rep: error: ")


def test_recheck_of_an_odd_feed_loses_nothing_and_shows_its_progress(
    site: FakeSite, tmp_path: Path
) -> None:
    """2,000 URLs of two origins (progress at each tenth, not per origin), a URL no site can
    be asked about (``http://[``: unknown, with why) and a lone surrogate (kept, escaped)."""
    one = site.add("one").robots(Reply(body=OPEN))
    two = site.add("two").robots(Reply(body=OPEN))
    project = make_project(tmp_path / "project")
    feed = tmp_path / "feed.jsonl"
    with open(feed, "w", encoding="utf-8") as f:
        for n in range(1000):
            for origin in (one, two):
                f.write(json.dumps({"url": origin.url_for(f"/p{n}")}) + "\n")
        f.write('{"url": "http://[", "n": 1}\n')
        f.write(json.dumps({"url": one.url_for("/p0"), "t": "a\ud800b"}) + "\n")
    kept = tmp_path / "kept.jsonl"
    done = recheck(project, str(feed), "-o", str(kept))
    assert done.returncode == 3, (done.stdout, done.stderr)  # one unknown, none refused
    assert "unknown  http://[  not a URL: Invalid IPv6 URL" in done.stdout
    assert done.stdout.strip().endswith(
        f"2002 items: 2001 allowed, 0 refused, 1 unknown; kept 2001 in {kept}"
    )
    progress = [line for line in done.stderr.splitlines() if line.startswith("recheck: ")]
    assert len(progress) == 10, done.stderr
    assert progress[-1] == "recheck: 2000 of 2000 URLs judged (2 origins)"
    assert "Traceback" not in done.stderr
    last = kept.read_text(encoding="utf-8").splitlines()[-1]
    assert "a\\ud800b" in last and json.loads(last)["t"] == "a\ud800b"
